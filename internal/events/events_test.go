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

package events

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	kubefake "k8s.io/client-go/kubernetes/fake"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
)

func TestRecorderWritesEventsAboutKubeoceanObjects(t *testing.T) {
	kube := kubefake.NewClientset()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	recorder, stop := NewRecorder(ctx, kube, "kubeocean-manager")
	defer stop()

	binding := &kubeoceanv1alpha1.ClusterBinding{ObjectMeta: metav1.ObjectMeta{Name: "worker-1", UID: "uid-1"}}
	recorder.Eventf(binding, corev1.EventTypeWarning, "InvalidSpec", "spec.clusterID %q is not a DNS label", "Bad_ID")

	var events *corev1.EventList
	err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 5*time.Second, true, func(ctx context.Context) (bool, error) {
		var err error
		events, err = kube.CoreV1().Events("default").List(ctx, metav1.ListOptions{})
		return err == nil && len(events.Items) == 1, err
	})
	if err != nil {
		t.Fatalf("no event written: %v", err)
	}
	e := events.Items[0]
	if e.InvolvedObject.Kind != "ClusterBinding" || e.InvolvedObject.APIVersion != "kubeocean.io/v1alpha1" ||
		e.Reason != "InvalidSpec" || e.Source.Component != "kubeocean-manager" {
		t.Fatalf("unexpected event %+v", e)
	}
}
