/*
Copyright The Kubeocean Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

package syncer

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
)

func TestRefuseOtherCluster(t *testing.T) {
	pinned := func(annotations map[string]string) *kubeoceanv1alpha1.ClusterBinding {
		return &kubeoceanv1alpha1.ClusterBinding{
			ObjectMeta: metav1.ObjectMeta{Name: "worker-1", Annotations: annotations},
			Status:     kubeoceanv1alpha1.ClusterBindingStatus{PhysicalClusterUID: "a"},
		}
	}
	for _, tt := range []struct {
		name     string
		binding  *kubeoceanv1alpha1.ClusterBinding
		observed string
		refused  bool
	}{
		{"nothing pinned", &kubeoceanv1alpha1.ClusterBinding{}, "b", false},
		{"the bound cluster", pinned(nil), "a", false},
		{"identity unknown", pinned(nil), "", false},
		{"another cluster", pinned(nil), "b", true},
		{"another cluster, accepted", pinned(map[string]string{kubeoceanv1alpha1.AnnotationAcceptPhysicalCluster: "b"}), "b", false},
		{"a third cluster", pinned(map[string]string{kubeoceanv1alpha1.AnnotationAcceptPhysicalCluster: "b"}), "c", true},
	} {
		err := refuseOtherCluster(tt.binding, tt.observed)
		if (err != nil) != tt.refused {
			t.Errorf("%s: refused = %v, want %v", tt.name, err, tt.refused)
		}
		if err != nil && !strings.HasPrefix(err.Error(), kubeoceanv1alpha1.ReasonPhysicalClusterChanged) {
			t.Errorf("%s: %v, want it to start with the reason", tt.name, err)
		}
	}
}
