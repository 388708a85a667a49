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
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
	kubeoceanlisters "github.com/kubeocean/kubeocean/generated/listers/kubeocean/v1alpha1"
	"github.com/kubeocean/kubeocean/internal/syncer/allowances"
	"github.com/kubeocean/kubeocean/internal/syncer/topdown/podtest"
	"github.com/kubeocean/kubeocean/internal/syncer/topdown/preflight"
)

// allowFixture gives the fixture's controller the allowances of one
// policy of its binding.
func allowFixture(t *testing.T, f *fixture, a *kubeoceanv1alpha1.WorkloadAllowances) {
	t.Helper()
	indexer := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	if err := indexer.Add(&kubeoceanv1alpha1.ResourceLeasingPolicy{ObjectMeta: metav1.ObjectMeta{Name: "lend"},
		Spec: kubeoceanv1alpha1.ResourceLeasingPolicySpec{Cluster: "binding", Allowances: a}}); err != nil {
		t.Fatal(err)
	}
	f.controller.allowances = allowances.NewSource(kubeoceanlisters.NewResourceLeasingPolicyLister(indexer), "binding", "mount")
	f.setPreflight(func(o *preflight.Options) { o.Allowances = f.controller.allowances })
}

func withProjection(pod *corev1.Pod, source corev1.VolumeProjection) *corev1.Pod {
	pod.Spec.Volumes = append(pod.Spec.Volumes, podtest.ProjectedVolume("bundle", nil, source))
	return pod
}

// A pod asking for what the lender does not allow is refused, with the
// reason, its message naming what it asked for, and one event; nothing is
// sent to the physical cluster, and it is not judged again until it or a
// wake-up comes.
func TestSpecNotAllowed(t *testing.T) {
	for _, tc := range []struct {
		name, reason, mentions string
		pod                    *corev1.Pod
	}{
		{"runtime class", kubeoceanv1alpha1.ReasonRuntimeClassNotAllowed, `"gvisor"`,
			func() *corev1.Pod { p := podtest.BoundPod(); p.Spec.RuntimeClassName = ptr.To("gvisor"); return p }()},
		{"cluster trust bundle", kubeoceanv1alpha1.ReasonVolumeSourceNotSupported, `"bundle" projects a clusterTrustBundle`,
			withProjection(podtest.BoundPod(), corev1.VolumeProjection{ClusterTrustBundle: &corev1.ClusterTrustBundleProjection{Name: ptr.To("physical-ca"), Path: "ca"}})},
		{"pod certificate", kubeoceanv1alpha1.ReasonVolumeSourceNotSupported, `"bundle" projects a podCertificate`,
			withProjection(podtest.BoundPod(), corev1.VolumeProjection{PodCertificate: &corev1.PodCertificateProjection{SignerName: "example.com/signer", KeyType: "ED25519"}})},
		{"a source this version does not know", kubeoceanv1alpha1.ReasonVolumeSourceNotSupported, `"bundle" projects a unknown`,
			withProjection(podtest.BoundPod(), corev1.VolumeProjection{})},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, seed{virtualPods: []*corev1.Pod{podtest.Mapped(tc.pod, "")}})
			f.mustReconcile()
			if _, err := f.physicalPod(); err == nil {
				t.Fatal("the physical pod was created")
			}
			assertWrites(t, f, "virtual update pods/status")
			c := createdCondition(f.virtualPod())
			if c == nil || c.Status != corev1.ConditionFalse || c.Reason != tc.reason || !strings.Contains(c.Message, tc.mentions) {
				t.Fatalf("condition = %+v, want False %s naming %s", c, tc.reason, tc.mentions)
			}
			if events := f.events(); len(events) != 1 || !strings.Contains(events[0], "Warning "+tc.reason) {
				t.Errorf("events = %v, want one Warning %s", events, tc.reason)
			}
			f.syncCaches()
			f.mustReconcile()
			assertWrites(t, f)
		})
	}
}

// With the runtime class allowed, the pod runs with it, after a wake-up.
func TestRuntimeClassAllowed(t *testing.T) {
	pod := podtest.BoundPod()
	pod.Spec.RuntimeClassName = ptr.To("gvisor")
	f := newFixture(t, seed{virtualPods: []*corev1.Pod{podtest.Mapped(pod, "")}})
	allowFixture(t, f, &kubeoceanv1alpha1.WorkloadAllowances{RuntimeClassNames: []string{"kata"}})
	f.mustReconcile()
	if c := createdCondition(f.virtualPod()); c == nil || c.Reason != kubeoceanv1alpha1.ReasonRuntimeClassNotAllowed {
		t.Fatalf("condition = %+v, want %s for a class the policy does not list", c, kubeoceanv1alpha1.ReasonRuntimeClassNotAllowed)
	}
	allowFixture(t, f, &kubeoceanv1alpha1.WorkloadAllowances{RuntimeClassNames: []string{"kata", "gvisor"}})
	f.syncCaches()
	f.controller.wakeRefused()
	f.mustReconcile()
	physical, err := f.physicalPod()
	if err != nil {
		t.Fatalf("physical pod: %v", err)
	}
	if physical.Spec.RuntimeClassName == nil || *physical.Spec.RuntimeClassName != "gvisor" {
		t.Errorf("runtimeClassName = %v, want gvisor", physical.Spec.RuntimeClassName)
	}
}

// The label and annotation keys a policy allows reach the physical pod as
// they are, besides their translated form, and the updates that follow
// agree.
func TestAllowedKeysReachThePhysicalPod(t *testing.T) {
	pod := podtest.Mapped(podtest.BoundPod(), "")
	pod.Annotations["team"] = "a"
	pod.Annotations["k8s.v1.cni.cncf.io/networks"] = "macvlan"
	f := newFixture(t, seed{virtualPods: []*corev1.Pod{pod}})
	allowFixture(t, f, &kubeoceanv1alpha1.WorkloadAllowances{LabelKeys: []string{"app"}, AnnotationKeys: []string{"team"}})
	f.mustReconcile()
	physical, err := f.physicalPod()
	if err != nil {
		t.Fatal(err)
	}
	if physical.Labels["app"] != "web" || physical.Labels["label.kubeocean.io/app"] != "web" || physical.Annotations["team"] != "a" {
		t.Errorf("physical pod = %v, %v; want app and team as they are", physical.Labels, physical.Annotations)
	}
	if _, ok := physical.Annotations["k8s.v1.cni.cncf.io/networks"]; ok {
		t.Error("an annotation the policy does not allow reaches the physical pod")
	}
	f.syncCaches()
	f.takeWrites()
	f.mustReconcile()
	assertWrites(t, f)
}
