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
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	kubeinformers "k8s.io/client-go/informers"
	kubefake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2/ktesting"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
	kubeoceanfake "github.com/kubeocean/kubeocean/generated/clientset/versioned/fake"
	kubeoceaninformers "github.com/kubeocean/kubeocean/generated/informers/externalversions"
	"github.com/kubeocean/kubeocean/internal/syncer/topdown/dependents"
	"github.com/kubeocean/kubeocean/internal/syncer/topdown/podtest"
	"github.com/kubeocean/kubeocean/internal/syncer/topdown/preflight"
)

// judgingDependents are fakeDependents that also judge claims, as
// *dependents.Syncer does: volumes and errs by claim name; a claim in
// neither is provisioned (nothing to judge).
type judgingDependents struct {
	*fakeDependents
	volumes map[string]*corev1.PersistentVolume
	errs    map[string]error
}

func (j *judgingDependents) ClaimVolume(_ context.Context, namespace, name string) (*corev1.PersistentVolume, error) {
	if err := j.errs[name]; err != nil {
		return j.volumes[name], err
	}
	return j.volumes[name], nil
}

// judging makes the fixture's dependents judge claims.
func (f *fixture) judging(volumes map[string]*corev1.PersistentVolume, errs map[string]error) {
	judging := &judgingDependents{fakeDependents: f.dependents, volumes: volumes, errs: errs}
	f.controller.dependents = judging
	f.setPreflight(func(o *preflight.Options) { o.Claims = judging })
}

func hostPathVolume(name string) *corev1.PersistentVolume {
	return &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PersistentVolumeSpec{PersistentVolumeSource: corev1.PersistentVolumeSource{
			HostPath: &corev1.HostPathVolumeSource{Path: "/"}}},
	}
}

// withClaim mounts the claim as the pod volume root.
func withClaim(pod *corev1.Pod, claim string) *corev1.Pod {
	pod.Spec.Volumes = append(pod.Spec.Volumes, corev1.Volume{Name: "root", VolumeSource: corev1.VolumeSource{
		PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim}}})
	return pod
}

// A pod whose claim is bound to a volume the lender does not allow is not
// created: nothing reaches the physical cluster (no copy, no token Secret,
// no pod), the virtual pod's condition names the volume, the claim and the
// source, one event says so, and the pod is not judged again until
// something changes; once the policies allow the source it is created.
func TestPodWithRefusedVolumeSource(t *testing.T) {
	pod := withClaim(withTokenVolume(podtest.BoundPod()), "data")
	f := newFixture(t, seed{virtualPods: []*corev1.Pod{pod}})
	refusal := &dependents.VolumeSourceError{Volume: "pv-root", Namespace: virtualNS, Claim: "data", Source: "hostPath"}
	f.judging(map[string]*corev1.PersistentVolume{"data": hostPathVolume("pv-root")}, map[string]error{"data": refusal})

	f.mustReconcile()
	assertWrites(t, f, "virtual update pods/status")
	if len(f.dependents.calls) != 0 {
		t.Errorf("copied %v, want nothing", f.dependents.calls)
	}
	c := createdCondition(f.virtualPod())
	if c == nil || c.Status != corev1.ConditionFalse || c.Reason != kubeoceanv1alpha1.ReasonVolumeSourceNotAllowed {
		t.Fatalf("condition = %+v, want False %s", c, kubeoceanv1alpha1.ReasonVolumeSourceNotAllowed)
	}
	for _, want := range []string{`volume "root"`, "pv-root", virtualNS + "/data", "hostPath"} {
		if !strings.Contains(c.Message, want) {
			t.Errorf("message %q does not name %s", c.Message, want)
		}
	}
	if events := f.events(); len(events) != 1 || !strings.HasPrefix(events[0], "Warning "+kubeoceanv1alpha1.ReasonVolumeSourceNotAllowed) {
		t.Errorf("events = %v, want one Warning %s", events, kubeoceanv1alpha1.ReasonVolumeSourceNotAllowed)
	}

	f.syncCaches()
	f.mustReconcile()
	assertWrites(t, f)
	if events := f.events(); len(events) != 0 {
		t.Errorf("second pass: events %v", events)
	}

	// The lender allows hostPath: the policies' event wakes the pod.
	f.judging(map[string]*corev1.PersistentVolume{"data": hostPathVolume("pv-root")}, nil)
	if keys := f.controller.wakeRefused(); len(keys) != 1 || keys[0] != podKey {
		t.Fatalf("woken %v, want %v", keys, podKey)
	}
	f.mustReconcile()
	if creates := len(actions(f.physicalKube, "create", "pods")); creates != 1 {
		t.Errorf("creates once allowed = %d, want 1", creates)
	}
}

// Pod Security judges the volumes the physical node would mount: a claim
// bound to a copied hostPath (or local) volume is a hostPath volume, which
// baseline refuses even where the lender allows the source; a claim of a
// provisioned volume (the lender's own storage) or a CSI one stays a claim.
func TestPodSecurityJudgesClaimedVolumes(t *testing.T) {
	local := &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pv-local"},
		Spec: corev1.PersistentVolumeSpec{PersistentVolumeSource: corev1.PersistentVolumeSource{Local: &corev1.LocalVolumeSource{Path: "/var/lib"}}}}
	csi := &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pv-csi"},
		Spec: corev1.PersistentVolumeSpec{PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{Driver: "d", VolumeHandle: "h"}}}}
	nfs := &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pv-nfs"},
		Spec: corev1.PersistentVolumeSpec{PersistentVolumeSource: corev1.PersistentVolumeSource{NFS: &corev1.NFSVolumeSource{Server: "s", Path: "/"}}}}
	for name, tc := range map[string]struct {
		level   string
		volume  *corev1.PersistentVolume
		refused bool
	}{
		"hostPath at baseline":    {level: "baseline", volume: hostPathVolume("pv-root"), refused: true},
		"local at baseline":       {level: "baseline", volume: local, refused: true},
		"nfs at baseline":         {level: "baseline", volume: nfs},
		"csi at baseline":         {level: "baseline", volume: csi},
		"provisioned at baseline": {level: "baseline"},
		"hostPath at privileged":  {level: "privileged", volume: hostPathVolume("pv-root")},
	} {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t, seed{virtualPods: []*corev1.Pod{withClaim(podtest.BoundPod(), "data")}, mountNamespace: namespaceAt(tc.level)})
			f.judging(map[string]*corev1.PersistentVolume{"data": tc.volume}, nil)
			f.mustReconcile()
			creates := len(actions(f.physicalKube, "create", "pods"))
			c := createdCondition(f.virtualPod())
			if !tc.refused {
				if c != nil || creates != 1 {
					t.Fatalf("condition %+v, %d creates; want none and 1", c, creates)
				}
				// What was judged is not what is sent: the physical pod
				// mounts the claim's copy.
				sent, err := f.physicalPod()
				if err != nil {
					t.Fatal(err)
				}
				if v := sent.Spec.Volumes[len(sent.Spec.Volumes)-1]; v.PersistentVolumeClaim == nil {
					t.Errorf("physical volume %+v, want the claim", v)
				}
				return
			}
			assertWrites(t, f, "virtual update pods/status")
			if c == nil || c.Reason != kubeoceanv1alpha1.ReasonPodSecurityViolation || !strings.Contains(c.Message, "hostPath volumes") || !strings.Contains(c.Message, `"root"`) {
				t.Fatalf("condition = %+v, want False %s naming the hostPath volume root", c, kubeoceanv1alpha1.ReasonPodSecurityViolation)
			}
		})
	}
}

func TestAllowancesMayDiffer(t *testing.T) {
	policy := func(cluster string, allowed *kubeoceanv1alpha1.WorkloadAllowances) *kubeoceanv1alpha1.ResourceLeasingPolicy {
		return &kubeoceanv1alpha1.ResourceLeasingPolicy{Spec: kubeoceanv1alpha1.ResourceLeasingPolicySpec{Cluster: cluster, Allowances: allowed}}
	}
	hostPath := &kubeoceanv1alpha1.WorkloadAllowances{VolumeSources: []string{"hostPath"}}
	for name, tc := range map[string]struct {
		old, new *kubeoceanv1alpha1.ResourceLeasingPolicy
		want     bool
	}{
		"allowances added":   {policy("b", nil), policy("b", hostPath), true},
		"allowances removed": {policy("b", hostPath), policy("b", nil), true},
		"another binding":    {policy("b", hostPath), policy("c", hostPath), true},
		"status only":        {policy("b", hostPath), policy("b", hostPath.DeepCopy()), false},
		"pinned to a mount namespace": {policy("b", hostPath), func() *kubeoceanv1alpha1.ResourceLeasingPolicy {
			p := policy("b", hostPath)
			p.Spec.MountNamespace = "mount"
			return p
		}(), true},
	} {
		t.Run(name, func(t *testing.T) {
			if got := allowancesMayDiffer(tc.old, tc.new); got != tc.want {
				t.Errorf("allowancesMayDiffer = %v, want %v", got, tc.want)
			}
		})
	}
}

// A change of a policy's allowances wakes the refused pods through the
// policies' informer.
func TestPolicyChangeWakesRefusedPods(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	virtualKube, physicalKube, oceanKube := kubefake.NewClientset(), kubefake.NewClientset(), kubeoceanfake.NewSimpleClientset()
	virtual := kubeinformers.NewSharedInformerFactory(virtualKube, 0)
	physical := kubeinformers.NewSharedInformerFactory(physicalKube, 0)
	policies := kubeoceaninformers.NewSharedInformerFactory(oceanKube, 0).Kubeocean().V1alpha1().ResourceLeasingPolicies()
	c, err := New(Options{
		ClusterID: testClusterID, BindingUID: testBinding, MountNamespace: mountNS,
		VirtualClient: virtualKube.CoreV1(), PhysicalClient: physicalKube.CoreV1(),
		VirtualPods: virtual.Core().V1().Pods(), VirtualNodes: virtual.Core().V1().Nodes(),
		PhysicalPods: physical.Core().V1().Pods(), PhysicalSecrets: physical.Core().V1().Secrets(),
		Dependents: &fakeDependents{}, Recorder: record.NewFakeRecorder(10),
		Policies: policies.Informer(),
	})
	if err != nil {
		t.Fatal(err)
	}
	go policies.Informer().Run(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), policies.Informer().HasSynced) {
		t.Fatal("policies not synced")
	}
	c.preflight.Memory.Remember(podKey, podtest.BoundPod())
	if _, err := oceanKube.KubeoceanV1alpha1().ResourceLeasingPolicies().Create(ctx, &kubeoceanv1alpha1.ResourceLeasingPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "lend"},
		Spec: kubeoceanv1alpha1.ResourceLeasingPolicySpec{Cluster: "b",
			Allowances: &kubeoceanv1alpha1.WorkloadAllowances{VolumeSources: []string{"hostPath"}}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := wait.PollUntilContextCancel(ctx, 10*time.Millisecond, true, func(context.Context) (bool, error) {
		return c.Len() == 1 && !c.preflight.Memory.Holds(podKey, podtest.BoundPod()), nil
	}); err != nil {
		t.Fatalf("refused pod not woken by the new policy: queue %d", c.Len())
	}
}
