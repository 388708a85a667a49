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

package pod

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
	"github.com/kubeocean/kubeocean/internal/ownership"
	"github.com/kubeocean/kubeocean/internal/syncer/topdown/podidentity"
	"github.com/kubeocean/kubeocean/internal/syncer/topdown/podtest"
)

const earlierBinding types.UID = "earlier-binding-uid"

// predecessorsWhere proves earlier bindings of the test binding, with the
// bindings in live still existing.
func predecessorsWhere(live ...types.UID) *ownership.Predecessors {
	return ownership.NewPredecessors(testOwner, func(_ context.Context, uid types.UID) (bool, error) {
		for _, l := range live {
			if l == uid {
				return true, nil
			}
		}
		return false, nil
	})
}

// A binding recreated under the same name (new UID) finds the physical
// pods its predecessor made, outside its scoped cache. A pod made for this
// very virtual pod (its UID says so) by a binding that exists no more is
// adopted, whether the virtual pod is still to be created (the create
// meets the name taken) or was running (its physical pod seems lost); one
// made for another virtual pod, or by a binding that still exists, is not
// touched, and the event names what blocks the pod.
func TestPredecessorPhysicalPodAdopted(t *testing.T) {
	earlier := ownership.Owner{ClusterID: testClusterID, BindingUID: earlierBinding}
	otherCluster := ownership.Owner{ClusterID: "other-cluster", BindingUID: earlierBinding}
	cases := []struct {
		name         string
		running      bool
		owner        ownership.Owner
		recordedUID  types.UID
		live         []types.UID
		noProof      bool
		adopted      bool
		eventMention string
	}{
		{name: "pending pod, earlier binding gone", owner: earlier, recordedUID: virtualUID, adopted: true},
		{name: "running pod, earlier binding gone", running: true, owner: earlier, recordedUID: virtualUID, adopted: true},
		{name: "earlier binding still exists", owner: earlier, recordedUID: virtualUID, live: []types.UID{earlierBinding},
			eventMention: "which still exists"},
		{name: "running pod, earlier binding still exists", running: true, owner: earlier, recordedUID: virtualUID, live: []types.UID{earlierBinding}},
		{name: "made for another virtual pod", owner: earlier, recordedUID: "another-virtual-pod",
			eventMention: "UID another-virtual-pod, not for this pod"},
		{name: "another cluster ID", owner: otherCluster, recordedUID: virtualUID},
		{name: "no predecessors proven without the proof", owner: earlier, recordedUID: virtualUID, noProof: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			virtual := podtest.Mapped(podtest.BoundPod(), "")
			if tc.running {
				virtual = podtest.Mapped(podtest.BoundPod(), physicalUID)
			}
			physical := physicalFor(virtual)
			physical.Labels = tc.owner.Stamp(map[string]string{"app": "web"})
			physical.Annotations[kubeoceanv1alpha1.AnnotationVirtualPodUID] = string(tc.recordedUID)
			s := seed{virtualPods: []*corev1.Pod{virtual}, livePhysical: []runtime.Object{physical}, predecessors: predecessorsWhere(tc.live...)}
			if tc.noProof {
				s.predecessors = nil
			}
			f := newFixture(t, s)
			f.mustReconcile()
			patches := actions(f.physicalKube, "patch", "pods")
			if tc.adopted != (len(patches) == 1) {
				t.Fatalf("physical pod patches = %v, want adopted %v", patches, tc.adopted)
			}
			// A create may be tried: it meets the name taken. Never a
			// second pod.
			if list, err := f.physicalKube.CoreV1().Pods(mountNS).List(context.Background(), metav1.ListOptions{}); err != nil || len(list.Items) != 1 {
				t.Errorf("physical pods = %v, %v; want the one there", list, err)
			}
			got, err := f.physicalPod()
			if err != nil {
				t.Fatal(err)
			}
			if tc.adopted != testOwner.Owns(got) {
				t.Errorf("physical pod labels %v, want adopted %v", got.Labels, tc.adopted)
			}
			if tc.adopted {
				return
			}
			for _, w := range f.takeWrites() {
				if strings.HasPrefix(w, "physical") && !strings.Contains(w, "secrets") && w != "physical create pods" {
					t.Errorf("wrote %q to a physical pod that is not provably ours", w)
				}
			}
			if tc.eventMention != "" && !strings.Contains(strings.Join(f.events(), "\n"), tc.eventMention) {
				t.Errorf("events %q do not say %q", f.events(), tc.eventMention)
			}
		})
	}
}

// A predecessor's token Secret for this virtual pod is ours once the
// predecessor is proven, and not before; never one made for another pod.
func TestPredecessorTokenSecretOurs(t *testing.T) {
	earlier := ownership.Owner{ClusterID: testClusterID, BindingUID: earlierBinding}
	secret := tokenSecret(virtualUID, now)
	secret.Labels = earlier.Stamp(map[string]string{kubeoceanv1alpha1.LabelPodToken: "true"})
	predecessors := predecessorsWhere()
	c := podidentity.New(podidentity.Options{Owner: testOwner, Predecessors: predecessors})
	if c.Ours(secret, virtualUID) {
		t.Fatal("a token Secret of an unproven binding is ours")
	}
	physical := physicalFor(podtest.Mapped(podtest.BoundPod(), ""))
	physical.Labels = earlier.Stamp(nil)
	if ok, err := predecessors.ProveByTwin(context.Background(), physical); !ok || err != nil {
		t.Fatalf("ProveByTwin = %v, %v", ok, err)
	}
	if !c.Ours(secret, virtualUID) {
		t.Error("a proven predecessor's token Secret for this pod is not ours")
	}
	if c.Ours(secret, "another-virtual-pod") {
		t.Error("a proven predecessor's token Secret for another pod is ours")
	}
}
