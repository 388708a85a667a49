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

package clusterbinding

import (
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
	"github.com/kubeocean/kubeocean/internal/testing/fixtures"
)

// The first connection pins the physical cluster; a kubeconfig that then
// reaches another cluster leaves the syncer as it is, with Connected=False
// (PhysicalClusterChanged) and a Warning event, until the operator accepts
// the new cluster's UID, which moves the pin.
func TestPhysicalClusterIsPinnedAndAChangeWaitsForTheOperator(t *testing.T) {
	b := bound(newBinding("worker-1", "w1"))
	f := newFixture(t, []*kubeoceanv1alpha1.ClusterBinding{b}, kubeconfigSecret(b, "config-1"))
	if _, err, _ := f.reconcile(b.Name); err != nil {
		t.Fatal(err)
	}
	if got := f.cached(b.Name).Status.PhysicalClusterUID; got != "cluster-a" {
		t.Fatalf("status.physicalClusterUID = %q after the first connection, want cluster-a", got)
	}
	ensured := len(f.runner.ensured)
	fixtures.Events(f.recorder)

	// The Secret now reaches another cluster.
	f.mustUpdateSecret(kubeconfigSecret(b, "config-2"))
	f.checker.uid = "cluster-b"
	f.reconcile(b.Name) // a permanent failure: terminal until the binding or the Secret changes
	got := f.cached(b.Name)
	connected := conditionOf(t, got, conditionConnected)
	if connected.Status != metav1.ConditionFalse || connected.Reason != kubeoceanv1alpha1.ReasonPhysicalClusterChanged ||
		!strings.Contains(connected.Message, kubeoceanv1alpha1.AnnotationAcceptPhysicalCluster+"=cluster-b") {
		t.Fatalf("Connected = %+v, want False %s naming the annotation", connected, kubeoceanv1alpha1.ReasonPhysicalClusterChanged)
	}
	if got.Status.PhysicalClusterUID != "cluster-a" || len(f.runner.ensured) != ensured {
		t.Fatalf("pin %q, Ensure calls %v: want the pin kept and the syncer left as it is", got.Status.PhysicalClusterUID, f.runner.ensured)
	}
	if events := fixtures.Events(f.recorder); !slices.ContainsFunc(events, func(e string) bool {
		return strings.HasPrefix(e, "Warning "+kubeoceanv1alpha1.ReasonPhysicalClusterChanged)
	}) {
		t.Fatalf("events %v, want a Warning %s", events, kubeoceanv1alpha1.ReasonPhysicalClusterChanged)
	}

	accepted := got.DeepCopy()
	accepted.Annotations = map[string]string{kubeoceanv1alpha1.AnnotationAcceptPhysicalCluster: "cluster-b"}
	f.mustUpdate(accepted)
	if _, err, _ := f.reconcile(b.Name); err != nil {
		t.Fatal(err)
	}
	got = f.cached(b.Name)
	if got.Status.PhysicalClusterUID != "cluster-b" || conditionOf(t, got, conditionConnected).Status != metav1.ConditionTrue ||
		len(f.runner.ensured) != ensured+1 {
		t.Fatalf("after accepting: pin %q, Connected %+v, Ensure calls %v", got.Status.PhysicalClusterUID,
			conditionOf(t, got, conditionConnected), f.runner.ensured)
	}
}

func (f *fixture) mustUpdateSecret(obj any) {
	f.t.Helper()
	if err := f.secrets.Update(obj); err != nil {
		f.t.Fatal(err)
	}
}
