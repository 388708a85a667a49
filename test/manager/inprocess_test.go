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

package manager

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
	"github.com/kubeocean/kubeocean/internal/app"
	"github.com/kubeocean/kubeocean/internal/manager"
	"github.com/kubeocean/kubeocean/pkg/remotecluster"
	"github.com/kubeocean/kubeocean/test/testenv"
)

// TestInProcess runs a manager with in-process syncers: a good binding
// becomes Ready and its syncer makes virtual nodes; broken bindings fail
// with a message naming the problem and recover once fixed; a clusterID
// already taken fails the younger binding.
func TestInProcess(t *testing.T) {
	w := newWorld(t)
	startManager(t, func(_ *app.Options, o *manager.Options) { o.SyncerMode = manager.ModeInProcess })
	var bindings []string
	t.Cleanup(func() {
		for _, name := range bindings {
			w.deleteBinding(t, name, 90*time.Second)
		}
	})

	t.Run("a good binding becomes Ready and its syncer makes virtual nodes", func(t *testing.T) {
		bindings = append(bindings, "mgr-good")
		checkGoodBinding(t, w)
	})

	t.Run("a clusterID already in use fails the younger binding", func(t *testing.T) {
		w.putSecret(t, "mgr-dup-kubeconfig", kubeconfigData(physicalCluster.Kubeconfig))
		w.createBinding(t, "mgr-dup", "mgr-good")
		bindings = append(bindings, "mgr-dup")
		w.waitPhase(t, "mgr-dup", kubeoceanv1alpha1.ClusterBindingFailed, kubeoceanv1alpha1.ReasonDuplicateClusterID, 30*time.Second,
			`clusterID "mgr-good" is already used by ClusterBinding mgr-good`)
	})

	t.Run("a mount namespace another binding holds fails the binding until released", func(t *testing.T) {
		w.putSecret(t, "mgr-claim-kubeconfig", kubeconfigData(physicalCluster.Kubeconfig))
		b := w.createBinding(t, "mgr-claim", "mgr-claim")
		bindings = append(bindings, "mgr-claim")
		b.Spec.MountNamespace = "mount-mgr-good"
		_ = w.virtualOcean.KubeoceanV1alpha1().ClusterBindings().Delete(t.Context(), b.Name, metav1.DeleteOptions{})
		waitFor(t, 30*time.Second, "the first mgr-claim is gone", func(ctx context.Context) (bool, error) {
			_, err := w.binding(ctx, b.Name)
			return apierrors.IsNotFound(err), nil
		})
		b = &kubeoceanv1alpha1.ClusterBinding{ObjectMeta: metav1.ObjectMeta{Name: b.Name}, Spec: b.Spec}
		if _, err := w.virtualOcean.KubeoceanV1alpha1().ClusterBindings().Create(t.Context(), b, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		w.waitPhase(t, "mgr-claim", kubeoceanv1alpha1.ClusterBindingFailed, kubeoceanv1alpha1.ReasonMountNamespaceTaken, 30*time.Second,
			"mount namespace mount-mgr-good", "belongs to ClusterBinding mgr-good")
		claim, err := w.physical.CoreV1().ConfigMaps("mount-mgr-good").Get(t.Context(), kubeoceanv1alpha1.MountNamespaceClaim, metav1.GetOptions{})
		if err != nil || claim.Data[kubeoceanv1alpha1.ClaimKeyBinding] != "mgr-good" {
			t.Fatalf("claim of mount-mgr-good = %v (%v), want mgr-good's", claim, err)
		}
	})

	rights, err := physicalCluster.KubeconfigForServiceAccount(t.Context(), "default", "mgr-no-rights")
	if err != nil {
		t.Fatal(err)
	}
	broken := []struct {
		name       string
		secret     map[string][]byte // nil: no Secret
		wantReason string
		wantText   string
	}{
		{"missing-secret", nil, string(remotecluster.ReasonSecretNotFound), "mgr-missing-secret-kubeconfig: secret not found"},
		{"no-key", map[string][]byte{"config": physicalCluster.Kubeconfig}, string(remotecluster.ReasonKubeconfigMissing), `no "kubeconfig" key`},
		{"garbage", kubeconfigData([]byte("{this is: [not a kubeconfig")), string(remotecluster.ReasonKubeconfigInvalid), "cannot be parsed"},
		{"closed-port", kubeconfigData(closedPortKubeconfig(t)), kubeoceanv1alpha1.ReasonUnreachable, "did not answer"},
		{"no-rights", kubeconfigData(rights), kubeoceanv1alpha1.ReasonInsufficientPermissions, "list, watch nodes"},
	}
	t.Run("broken bindings fail, then recover once fixed", func(t *testing.T) {
		for _, tt := range broken {
			name := "mgr-" + tt.name
			if tt.secret != nil {
				w.putSecret(t, name+"-kubeconfig", tt.secret)
			}
			w.createBinding(t, name, name)
			bindings = append(bindings, name)
		}
		for _, tt := range broken {
			t.Run(tt.name, func(t *testing.T) {
				name := "mgr-" + tt.name
				b := w.waitPhase(t, name, kubeoceanv1alpha1.ClusterBindingFailed, tt.wantReason, 60*time.Second, tt.wantText)
				if c := meta.FindStatusCondition(b.Status.Conditions, kubeoceanv1alpha1.ClusterBindingConditionConnected); c == nil || c.Status != metav1.ConditionFalse {
					t.Errorf("Connected = %+v", c)
				}
				waitFor(t, 10*time.Second, "a Warning event "+tt.wantReason, func(ctx context.Context) (bool, error) {
					return w.hasEvent(ctx, name, tt.wantReason)
				})
			})
		}
		for _, tt := range broken {
			w.putSecret(t, "mgr-"+tt.name+"-kubeconfig", kubeconfigData(physicalCluster.Kubeconfig))
		}
		// Fixed Secrets are noticed at once, not after the 30 s backoff.
		for _, tt := range broken {
			t.Run(tt.name+" recovers", func(t *testing.T) {
				b := w.waitPhase(t, "mgr-"+tt.name, kubeoceanv1alpha1.ClusterBindingReady, kubeoceanv1alpha1.ReasonReady, 25*time.Second)
				if _, ok := b.Annotations[kubeoceanv1alpha1.AnnotationConnectBackoff]; ok {
					t.Errorf("backoff annotation left on a Ready binding: %v", b.Annotations)
				}
			})
		}
	})

	t.Run("unbinding stops the syncers and releases the bindings", func(t *testing.T) {
		// mgr-good's unbinding releases its mount namespace to mgr-claim,
		// which the manager checks again at once. (mgr-dup, which names it
		// too, goes first.)
		w.deleteBinding(t, "mgr-dup", 90*time.Second)
		w.deleteBinding(t, "mgr-good", 90*time.Second)
		w.waitPhase(t, "mgr-claim", kubeoceanv1alpha1.ClusterBindingReady, kubeoceanv1alpha1.ReasonReady, 20*time.Second)
		claim, err := w.physical.CoreV1().ConfigMaps("mount-mgr-good").Get(t.Context(), kubeoceanv1alpha1.MountNamespaceClaim, metav1.GetOptions{})
		if err != nil || claim.Data[kubeoceanv1alpha1.ClaimKeyBinding] != "mgr-claim" {
			t.Errorf("claim of mount-mgr-good after mgr-good left = %v (%v), want mgr-claim's", claim, err)
		}
		for _, name := range bindings {
			w.deleteBinding(t, name, 90*time.Second)
		}
		bindings = nil
		if ok, err := w.hasEvent(t.Context(), "mgr-good", kubeoceanv1alpha1.EventUnbound); !ok || err != nil {
			t.Errorf("no %s event (%v)", kubeoceanv1alpha1.EventUnbound, err)
		}
		// The manager kept the syncer running until it had cleaned up.
		vnode := kubeoceanv1alpha1.VirtualNodeName("mgr-good", "mgr-good-node")
		if _, err := w.virtual.CoreV1().Nodes().Get(t.Context(), vnode, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("virtual node %s outlived its binding (%v)", vnode, err)
		}
	})
}

// checkGoodBinding binds the physical cluster with a kwok node and a policy
// lending it: the binding becomes Ready and its syncer makes the node's
// virtual twin.
func checkGoodBinding(t *testing.T, w *world) {
	const name, clusterID, node = "mgr-good", "mgr-good", "mgr-good-node"
	ctx := t.Context()
	// Kept for the next run (-count): the node and policy are the same.
	if _, err := w.physical.CoreV1().Nodes().Create(ctx, testenv.KwokNode(node, "4", "8Gi", map[string]string{"suite": name}), metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	policy := &kubeoceanv1alpha1.ResourceLeasingPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: kubeoceanv1alpha1.ResourceLeasingPolicySpec{Cluster: name, NodeSelector: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
			MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "suite", Operator: corev1.NodeSelectorOpIn, Values: []string{name}}}}}}},
	}
	if _, err := w.physicalOcean.KubeoceanV1alpha1().ResourceLeasingPolicies().Create(ctx, policy, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	w.putSecret(t, name+"-kubeconfig", kubeconfigData(physicalCluster.Kubeconfig))
	created := w.createBinding(t, name, clusterID)

	b := w.waitPhase(t, name, kubeoceanv1alpha1.ClusterBindingReady, kubeoceanv1alpha1.ReasonReady, 60*time.Second)
	if b.Status.ObservedGeneration != created.Generation || b.Status.LastSyncTime == nil {
		t.Errorf("observedGeneration %d (generation %d), lastSyncTime %v", b.Status.ObservedGeneration, created.Generation, b.Status.LastSyncTime)
	}
	for _, conditionType := range []string{kubeoceanv1alpha1.ClusterBindingConditionConnected, kubeoceanv1alpha1.ClusterBindingConditionSyncerReady} {
		if c := meta.FindStatusCondition(b.Status.Conditions, conditionType); c == nil || c.Status != metav1.ConditionTrue || c.ObservedGeneration != created.Generation {
			t.Errorf("condition %s = %+v", conditionType, c)
		}
	}
	vnode := kubeoceanv1alpha1.VirtualNodeName(clusterID, node)
	waitFor(t, 60*time.Second, "virtual node "+vnode+" exists", func(ctx context.Context) (bool, error) {
		_, err := w.virtual.CoreV1().Nodes().Get(ctx, vnode, metav1.GetOptions{})
		return err == nil, err
	})
	waitFor(t, 10*time.Second, "the Ready event", func(ctx context.Context) (bool, error) {
		return w.hasEvent(ctx, name, kubeoceanv1alpha1.ReasonReady)
	})
}
