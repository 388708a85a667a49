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

package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/util/retry"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
	kubeoceanclient "github.com/kubeocean/kubeocean/generated/clientset/versioned"
	"github.com/kubeocean/kubeocean/test/stack"
	"github.com/kubeocean/kubeocean/test/testenv"
)

const (
	policyRefusal = "the syncer may change only the finalizer kubeocean.io/policy-reclaim"
	volumeRefusal = "a binding may write only its own PersistentVolumes"
	// otherMountNamespace is another binding's mount namespace.
	otherMountNamespace = "kubeocean-other"
)

// TestPhysicalIdentityLimits: under manifests/rbac/physical, a binding's
// physical identity (its real token) may not update ResourceLeasingPolicies,
// get nodes/proxy or reach another binding's mount namespace, and may patch
// of policies only its finalizer; it may create and delete only
// PersistentVolumes stamped as Kubeocean's and bound in its own mount
// namespace, and of the cluster's other volumes only keep the data of those
// bound there (Retain).
func TestPhysicalIdentityLimits(t *testing.T) {
	s, err := stack.Start(t.Context(), stack.Options{})
	step(t, "start the clusters", err)
	t.Cleanup(s.Stop)
	ctx := t.Context()
	step(t, "install CRDs", s.InstallCRDs(ctx))
	_, err = s.Physical.Kubectl(ctx, "apply", "-k", testenv.RepoPath("manifests/rbac/physical"))
	step(t, "install the physical RBAC", err)
	path, err := s.PhysicalSyncerKubeconfig(ctx)
	step(t, "the syncer's kubeconfig", err)
	config, err := clientcmd.BuildConfigFromFlags("", path)
	step(t, "the syncer's client config", err)
	kube, ocean := kubernetes.NewForConfigOrDie(config), kubeoceanclient.NewForConfigOrDie(config)

	for _, attrs := range []authorizationv1.ResourceAttributes{
		{Group: kubeoceanv1alpha1.GroupName, Resource: "resourceleasingpolicies", Verb: "update"},
		// Node stats are an opt-in (manifests/rbac/physical-node-stats).
		{Resource: "nodes", Subresource: "proxy", Verb: "get", Name: "node-a"},
		// Another binding's mount namespace: its token Secrets, its pods.
		{Resource: "secrets", Verb: "list", Namespace: otherMountNamespace},
		{Resource: "secrets", Verb: "get", Namespace: otherMountNamespace, Name: "x-token"},
		{Resource: "pods", Verb: "create", Namespace: otherMountNamespace},
		{Resource: "pods", Subresource: "exec", Verb: "create", Namespace: otherMountNamespace},
		{Resource: "configmaps", Verb: "update", Namespace: otherMountNamespace, Name: kubeoceanv1alpha1.MountNamespaceClaim},
	} {
		if allowed(t, kube, attrs) {
			t.Errorf("the binding's identity may %s %s/%s in %q", attrs.Verb, attrs.Resource, attrs.Subresource, attrs.Namespace)
		}
	}
	// What it needs in its own.
	for _, attrs := range []authorizationv1.ResourceAttributes{
		{Resource: "pods", Verb: "create", Namespace: stack.MountNamespace},
		{Resource: "secrets", Verb: "list", Namespace: stack.MountNamespace},
	} {
		if !allowed(t, kube, attrs) {
			t.Errorf("the binding's identity may not %s %s in its mount namespace", attrs.Verb, attrs.Resource)
		}
	}

	checkPolicyLimits(t, s, ocean)
	checkVolumeLimits(t, s, kube)
}

func allowed(t *testing.T, kube kubernetes.Interface, attrs authorizationv1.ResourceAttributes) bool {
	t.Helper()
	review, err := kube.AuthorizationV1().SelfSubjectAccessReviews().Create(t.Context(),
		&authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &attrs}}, metav1.CreateOptions{})
	step(t, "access review", err)
	return review.Status.Allowed
}

func checkPolicyLimits(t *testing.T, s *stack.Stack, ocean kubeoceanclient.Interface) {
	ctx := t.Context()
	_, err := s.Physical.Kubectl(ctx, "apply", "-f", testenv.RepoPath("manifests/samples/resourceleasingpolicy-office-hours.yaml"))
	step(t, "a policy", err)
	policies, err := s.PhysicalOcean.KubeoceanV1alpha1().ResourceLeasingPolicies().List(ctx, metav1.ListOptions{})
	step(t, "list policies", err)
	name := policies.Items[0].Name
	patch := func(body string) error {
		_, err := ocean.KubeoceanV1alpha1().ResourceLeasingPolicies().Patch(ctx, name, types.MergePatchType, []byte(body), metav1.PatchOptions{})
		return err
	}
	// Policies take effect a moment after they are stored.
	step(t, "the policy on policies is enforced", stack.Poll(waitCtx(t), "a spec patch is refused", func(ctx context.Context) (string, error) {
		if err := patch(`{"spec":{"cluster":"someone-else"}}`); err == nil || !strings.Contains(err.Error(), policyRefusal) {
			return fmt.Sprintf("a spec patch as the syncer: %v", err), nil
		}
		return "", nil
	}))
	denied(t, policyRefusal, "a label patch", patch(`{"metadata":{"labels":{"a":"b"}}}`))
	denied(t, policyRefusal, "another finalizer", patch(`{"metadata":{"finalizers":["example.com/other"]}}`))
	step(t, "adding the syncer's finalizer", patch(`{"metadata":{"finalizers":["`+kubeoceanv1alpha1.FinalizerResourceLeasingPolicy+`"]}}`))
	step(t, "removing the syncer's finalizer", patch(`{"metadata":{"finalizers":[]}}`))
}

func checkVolumeLimits(t *testing.T, s *stack.Stack, kube kubernetes.Interface) {
	ctx := t.Context()
	pvs := kube.CoreV1().PersistentVolumes()
	dryRun := metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}
	foreign := volume("foreign", nil)
	step(t, "the policy on volumes is enforced", stack.Poll(waitCtx(t), "a foreign volume's create is refused", func(ctx context.Context) (string, error) {
		if _, err := pvs.Create(ctx, foreign, dryRun); err == nil || !strings.Contains(err.Error(), volumeRefusal) {
			return fmt.Sprintf("creating an unstamped volume as the syncer: %v", err), nil
		}
		return "", nil
	}))
	stamp := map[string]string{kubeoceanv1alpha1.LabelManagedBy: kubeoceanv1alpha1.ManagedByKubeocean,
		kubeoceanv1alpha1.LabelClusterID: "c1", kubeoceanv1alpha1.LabelBindingUID: "u1"}
	copied := volume("copy", stamp)
	copied.Spec.ClaimRef = &corev1.ObjectReference{Kind: "PersistentVolumeClaim", Namespace: stack.MountNamespace, Name: "claim-x"}
	_, err := pvs.Create(ctx, copied, dryRun)
	step(t, "creating a stamped copy bound in its mount namespace as the syncer", err)
	copied.Spec.ClaimRef.Namespace = otherMountNamespace
	_, err = pvs.Create(ctx, copied, dryRun)
	denied(t, volumeRefusal, "creating a stamped copy bound in another binding's mount namespace", err)
	unbound := volume("unbound", stamp)
	_, err = pvs.Create(ctx, unbound, dryRun)
	denied(t, volumeRefusal, "creating a stamped copy bound to no claim", err)

	// Another binding's volume: stamped, bound in its mount namespace.
	theirs := volume("theirs", stamp)
	theirs.Spec.ClaimRef = &corev1.ObjectReference{Kind: "PersistentVolumeClaim", Namespace: otherMountNamespace, Name: "claim-y"}
	_, err = s.PhysicalKube.CoreV1().PersistentVolumes().Create(ctx, theirs, metav1.CreateOptions{})
	step(t, "another binding's volume", err)
	err = pvs.Delete(ctx, "theirs", metav1.DeleteOptions{DryRun: []string{metav1.DryRunAll}})
	denied(t, volumeRefusal, "deleting another binding's volume", err)

	// A volume of the cluster's, bound to a claim: the syncer may keep its
	// data, nothing more.
	foreign.Spec.ClaimRef = &corev1.ObjectReference{Kind: "PersistentVolumeClaim", Namespace: stack.MountNamespace, Name: "holder"}
	_, err = s.PhysicalKube.CoreV1().PersistentVolumes().Create(ctx, foreign, metav1.CreateOptions{})
	step(t, "a bound volume of the cluster's", err)
	// The physical PV controller writes the volume meanwhile.
	update := func(change func(*corev1.PersistentVolume)) error {
		return retry.RetryOnConflict(retry.DefaultRetry, func() error {
			pv, err := s.PhysicalKube.CoreV1().PersistentVolumes().Get(ctx, "foreign", metav1.GetOptions{})
			step(t, "read the volume", err)
			change(pv)
			_, err = pvs.Update(ctx, pv, metav1.UpdateOptions{DryRun: []string{metav1.DryRunAll}})
			return err
		})
	}
	retain := func(pv *corev1.PersistentVolume) {
		pv.Spec.PersistentVolumeReclaimPolicy = corev1.PersistentVolumeReclaimRetain
		pv.Annotations = map[string]string{kubeoceanv1alpha1.AnnotationVirtualName: "data-db-0"}
	}
	step(t, "keeping a bound volume's data", update(retain))
	denied(t, volumeRefusal, "stamping a foreign volume", update(func(pv *corev1.PersistentVolume) {
		retain(pv)
		pv.Labels = stamp
	}))
	denied(t, volumeRefusal, "re-pointing a foreign volume's claim", update(func(pv *corev1.PersistentVolume) {
		retain(pv)
		pv.Spec.ClaimRef.Name = "other"
	}))
	denied(t, volumeRefusal, "growing a foreign volume", update(func(pv *corev1.PersistentVolume) {
		retain(pv)
		pv.Spec.Capacity[corev1.ResourceStorage] = resource.MustParse("2Gi")
	}))
	denied(t, volumeRefusal, "a foreign volume's other annotation", update(func(pv *corev1.PersistentVolume) {
		retain(pv)
		pv.Annotations["example.com/x"] = "y"
	}))
	err = pvs.Delete(ctx, "foreign", metav1.DeleteOptions{DryRun: []string{metav1.DryRunAll}})
	denied(t, volumeRefusal, "deleting a foreign volume", err)
}

func volume(name string, labels map[string]string) *corev1.PersistentVolume {
	return &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:                      corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")},
			AccessModes:                   []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimDelete,
			PersistentVolumeSource:        corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{Driver: "csi.example.com", VolumeHandle: name}},
		},
	}
}

func denied(t *testing.T, refusal, what string, err error) {
	t.Helper()
	if err == nil || !strings.Contains(err.Error(), refusal) {
		t.Errorf("%s as the syncer: %v; want the refusal %q", what, err, refusal)
	}
}
