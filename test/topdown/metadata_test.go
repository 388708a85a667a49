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

package topdown

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	nodev1 "k8s.io/api/node/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
	"github.com/kubeocean/kubeocean/internal/ownership"
	"github.com/kubeocean/kubeocean/internal/syncer/tenantmeta"
	"github.com/kubeocean/kubeocean/internal/syncer/topdown/podidentity"
	"github.com/kubeocean/kubeocean/test/testenv"
)

const multusNetworks = "k8s.v1.cni.cncf.io/networks"

// tenantPod is a pod bound straight to the world's node, labelled like the
// physical cluster's monitoring and asking Multus and Calico for other
// networks, that reads its labels through the downward API.
func tenantPod(w *testenv.SyncerWorld, namespace, name string) *corev1.Pod {
	return workload(namespace, name, w.ClusterID, func(p *corev1.Pod) {
		p.Labels = map[string]string{"app": "monitoring"}
		p.Annotations = map[string]string{multusNetworks: "macvlan-conf", "cni.projectcalico.org/ipAddrs": `["10.0.0.9"]`}
		p.Spec.NodeName = w.VirtualNode(w.Binding + "-node")
		p.Spec.AutomountServiceAccountToken = ptr.To(false)
		p.Spec.TerminationGracePeriodSeconds = ptr.To[int64](0)
		p.Spec.Volumes = []corev1.Volume{{Name: "podinfo", VolumeSource: corev1.VolumeSource{DownwardAPI: &corev1.DownwardAPIVolumeSource{
			Items: []corev1.DownwardAPIVolumeFile{{Path: "labels", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.labels"}}}}}}}
	})
}

func waitPhysical(t *testing.T, w *testenv.SyncerWorld, namespace, name, what string, ok func(*corev1.Pod) bool) *corev1.Pod {
	t.Helper()
	var physical *corev1.Pod
	testenv.WaitFor(t, 60*time.Second, what, func(ctx context.Context) (bool, error) {
		var err error
		physical, err = w.Physical.CoreV1().Pods(w.Mount).Get(ctx, kubeoceanv1alpha1.PhysicalName(namespace, name), metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return ok(physical), fmt.Errorf("labels %v, annotations %v", physical.Labels, physical.Annotations)
	})
	return physical
}

// touch changes an annotation of the virtual pod, which brings it back to
// the syncer: for the changes its cache of policies shows on its own time.
func touch(ctx context.Context, w *testenv.SyncerWorld, namespace, name string) error {
	patch := fmt.Sprintf(`{"metadata":{"annotations":{"example.com/touched":%q}}}`, strconv.FormatInt(time.Now().UnixNano(), 10))
	_, err := w.Virtual.CoreV1().Pods(namespace).Patch(ctx, name, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
	return err
}

// TestTenantMetadataCannotPassForThePhysicalClusters: a physical
// NetworkPolicy that selects app=monitoring does not select the physical
// pod of a virtual pod labelled so, no CNI annotation reaches the physical
// pod under its key, the pod still reads its own labels, and Kubeocean's
// selector (Service mirrors') finds it; once the lender allows the key
// app, it passes as it is.
func TestTenantMetadataCannotPassForThePhysicalClusters(t *testing.T) {
	w := lendNode(t, "meta", "cls-meta")
	ctx := t.Context()
	const ns = "meta"
	testenv.CreateNamespace(t, w.Virtual, ns)
	waitDefaultServiceAccount(t, w, ns)
	policy, err := w.Physical.NetworkingV1().NetworkPolicies(w.Mount).Create(ctx, &networkingv1.NetworkPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "monitoring-may-scrape"},
		Spec: networkingv1.NetworkPolicySpec{
			PodSelector: metav1.LabelSelector{MatchLabels: map[string]string{"app": "monitoring"}},
			Egress:      []networkingv1.NetworkPolicyEgressRule{{}},
			PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeEgress},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	selects := func(physical *corev1.Pod) bool {
		selector, err := metav1.LabelSelectorAsSelector(&policy.Spec.PodSelector)
		if err != nil {
			t.Fatal(err)
		}
		return selector.Matches(labels.Set(physical.Labels))
	}
	if _, err := w.Virtual.CoreV1().Pods(ns).Create(ctx, tenantPod(w, ns, "probe"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	physical := waitPhysical(t, w, ns, "probe", "the physical pod exists", func(*corev1.Pod) bool { return true })

	if selects(physical) {
		t.Errorf("the physical NetworkPolicy selects the tenant's pod: labels %v", physical.Labels)
	}
	for _, key := range []string{multusNetworks, "cni.projectcalico.org/ipAddrs"} {
		if _, ok := physical.Annotations[key]; ok {
			t.Errorf("annotation %s reaches the physical pod", key)
		}
	}
	originalLabels, originalAnnotations, err := tenantmeta.Originals(physical.Annotations)
	if err != nil || originalLabels["app"] != "monitoring" || originalAnnotations[multusNetworks] != "macvlan-conf" {
		t.Errorf("originals recorded: %v, %v, %v", originalLabels, originalAnnotations, err)
	}
	if got := physical.Labels[kubeoceanv1alpha1.LabelVirtualNamespace]; got != ns {
		t.Errorf("virtual namespace label = %q, want %q", got, ns)
	}
	owner := ownership.Owner{ClusterID: w.ClusterID, BindingUID: types.UID(w.BindingUID(ctx))}
	selector := labels.SelectorFromSet(tenantmeta.PodSelector(owner, ns, map[string]string{"app": "monitoring"})).String()
	if list, err := w.Physical.CoreV1().Pods(w.Mount).List(ctx, metav1.ListOptions{LabelSelector: selector}); err != nil ||
		len(list.Items) != 1 || list.Items[0].Name != physical.Name {
		t.Errorf("the physical pods %s selects: %v, %v; want the probe's", selector, list, err)
	}
	token, err := w.Physical.CoreV1().Secrets(w.Mount).Get(ctx, podidentity.SecretName(physical.Name), metav1.GetOptions{})
	if err != nil || string(token.Data["metadata.labels"]) != `app="monitoring"` {
		t.Errorf("the labels the pod reads: %v (%v), want its own", token, err)
	}

	// The lender allows the key: the label passes as it is, and the
	// NetworkPolicy meant for it selects the pod.
	w.UpdatePolicy(t, w.Binding, func(p *kubeoceanv1alpha1.ResourceLeasingPolicy) {
		p.Spec.Allowances = &kubeoceanv1alpha1.WorkloadAllowances{LabelKeys: []string{"app"}}
	})
	testenv.WaitFor(t, 60*time.Second, "label app reaches the physical pod as it is", func(ctx context.Context) (bool, error) {
		physical, err := w.Physical.CoreV1().Pods(w.Mount).Get(ctx, kubeoceanv1alpha1.PhysicalName(ns, "probe"), metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		if physical.Labels["app"] == "monitoring" {
			if !selects(physical) || physical.Labels[tenantmeta.LabelKey("app")] != "monitoring" {
				t.Errorf("allowed label: selected %v, labels %v", selects(physical), physical.Labels)
			}
			if _, ok := physical.Annotations[multusNetworks]; ok {
				t.Error("a label allowance lets an annotation through")
			}
			return true, nil
		}
		return false, touch(ctx, w, ns, "probe")
	})
}

// TestRuntimeClassNeedsTheLendersAllowance: a pod naming a runtime class
// the policy does not list is refused, with the reason and one event, and
// nothing reaches the physical cluster; once the policy lists it, the pod
// runs with it.
func TestRuntimeClassNeedsTheLendersAllowance(t *testing.T) {
	w := lendNode(t, "rtc", "cls-rtc")
	ctx := t.Context()
	const ns = "rtc"
	testenv.CreateNamespace(t, w.Virtual, ns)
	waitDefaultServiceAccount(t, w, ns)
	// Both apiservers' admission looks the class up.
	for _, kube := range []kubernetes.Interface{w.Virtual, w.Physical} {
		if _, err := kube.NodeV1().RuntimeClasses().Create(ctx, &nodev1.RuntimeClass{
			ObjectMeta: metav1.ObjectMeta{Name: "gvisor-rtc"}, Handler: "runsc"}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
	}
	sandboxed := tenantPod(w, ns, "sandboxed")
	sandboxed.Spec.RuntimeClassName = ptr.To("gvisor-rtc")
	if _, err := w.Virtual.CoreV1().Pods(ns).Create(ctx, sandboxed, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	_, condition := waitCreatedCondition(t, w, ns, "sandboxed", corev1.ConditionFalse, kubeoceanv1alpha1.ReasonRuntimeClassNotAllowed)
	if condition == nil || !containsAll(condition.Message, `"gvisor-rtc"`, "runtimeClassNames") {
		t.Errorf("condition %+v does not name the class and the allowance", condition)
	}
	if physicalPodExists(t, w, ns, "sandboxed") {
		t.Fatal("the physical pod exists")
	}
	if n := eventsFor(t, w, ns, "sandboxed", kubeoceanv1alpha1.ReasonRuntimeClassNotAllowed); n != 1 {
		t.Errorf("%d events, want 1", n)
	}

	w.UpdatePolicy(t, w.Binding, func(p *kubeoceanv1alpha1.ResourceLeasingPolicy) {
		p.Spec.Allowances = &kubeoceanv1alpha1.WorkloadAllowances{RuntimeClassNames: []string{"gvisor-rtc"}}
	})
	testenv.WaitFor(t, 60*time.Second, "the physical pod runs with its runtime class", func(ctx context.Context) (bool, error) {
		physical, err := w.Physical.CoreV1().Pods(w.Mount).Get(ctx, kubeoceanv1alpha1.PhysicalName(ns, "sandboxed"), metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			// A pod change retries a refused pod, whether or not the
			// syncer wakes refused pods on a policy change.
			return false, touch(ctx, w, ns, "sandboxed")
		}
		if err != nil {
			return false, err
		}
		return ptr.Deref(physical.Spec.RuntimeClassName, "") == "gvisor-rtc", fmt.Errorf("runtimeClassName %v", physical.Spec.RuntimeClassName)
	})
}

func containsAll(s string, parts ...string) bool {
	for _, p := range parts {
		if !strings.Contains(s, p) {
			return false
		}
	}
	return true
}
