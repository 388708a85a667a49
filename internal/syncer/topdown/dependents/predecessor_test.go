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

package dependents_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
	"github.com/kubeocean/kubeocean/internal/ownership"
	"github.com/kubeocean/kubeocean/internal/syncer/topdown/dependents"
	"github.com/kubeocean/kubeocean/internal/syncer/topdown/dependents/dependentstest"
)

// A binding recreated under the same name finds its predecessor's copies
// at the names it needs. Until a pod of the predecessor proves it (see
// ownership.Predecessors) a copy is a conflict whose event names the
// binding UID that blocks it; once proven, the copy is adopted in place.
func TestEnsureConfigMapAdoptsProvenPredecessorsCopy(t *testing.T) {
	earlier := ownership.Owner{ClusterID: dependentstest.ClusterID, BindingUID: "earlier-binding"}
	physicalName := kubeoceanv1alpha1.PhysicalName(ns, "conf")
	copyOfEarlier := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: mountNS, Name: physicalName, UID: "earlier-copy", Labels: earlier.Stamp(nil),
			Annotations: map[string]string{kubeoceanv1alpha1.AnnotationVirtualName: "conf", kubeoceanv1alpha1.AnnotationVirtualNamespace: ns},
		},
		Data: map[string]string{"k": "old"},
	}
	predecessors := ownership.NewPredecessors(dependentstest.Owner, func(context.Context, types.UID) (bool, error) { return false, nil })
	e := dependentstest.NewWithPredecessors(t, []runtime.Object{dependentstest.ConfigMap("conf", map[string]string{"k": "v"})},
		[]runtime.Object{copyOfEarlier}, predecessors)

	_, err := e.Syncer.EnsureConfigMap(e.Context(), ns, "conf")
	var conflict *dependents.ConflictError
	if !errors.As(err, &conflict) {
		t.Fatalf("before a proof: err = %v, want a ConflictError", err)
	}
	if event := <-e.Recorder.Events; !strings.Contains(event, "binding UID earlier-binding") {
		t.Errorf("event %q does not name the binding that blocks", event)
	}

	// A pod the earlier binding made for a virtual pod of this cluster
	// proves it.
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Labels: earlier.Stamp(nil)}}
	if ok, err := predecessors.ProveByTwin(e.Context(), pod); !ok || err != nil {
		t.Fatalf("ProveByTwin = %v, %v", ok, err)
	}
	if _, err := e.Syncer.EnsureConfigMap(e.Context(), ns, "conf"); err != nil {
		t.Fatal(err)
	}
	physical := physicalConfigMap(t, e, "conf")
	if physical.UID != "earlier-copy" || physical.Data["k"] != "v" || !dependentstest.Owner.Owns(physical) {
		t.Errorf("copy not adopted: uid %s, labels %v, data %v", physical.UID, physical.Labels, physical.Data)
	}
}
