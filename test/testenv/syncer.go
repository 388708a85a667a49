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

package testenv

import (
	"context"
	"fmt"
	"maps"
	"os"
	"runtime/pprof"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
	kubeoceanclient "github.com/kubeocean/kubeocean/generated/clientset/versioned"
	"github.com/kubeocean/kubeocean/internal/app"
	"github.com/kubeocean/kubeocean/internal/syncer"
	"github.com/kubeocean/kubeocean/test/controlplane"
)

// SyncerWorld is one binding with its syncer running in-process against
// the shared clusters.
type SyncerWorld struct {
	Binding, ClusterID, Mount string
	Virtual, Physical         kubernetes.Interface
	VirtualOcean, PhysOcean   kubeoceanclient.Interface

	virtualKubeconfig string
	opts              syncer.Options
	stop              func()
	run               *syncerRun
}

// StopSyncer stops the running syncer and waits until it has stopped.
func (w *SyncerWorld) StopSyncer() {
	if w.stop != nil {
		w.stop()
	}
}

// RunSyncer runs a syncer for the world's binding, in-process as the binary
// runs it, and returns a function that stops it and waits; the syncer is
// also stopped when the test ends.
func (w *SyncerWorld) RunSyncer(t *testing.T) (stop func()) {
	t.Helper()
	process := app.NewOptions(syncer.Component)
	process.Kubeconfig = w.virtualKubeconfig
	process.Serving.MetricsBindAddress, process.Serving.HealthProbeBindAddress = "0", "0"
	runCtx, cancel := context.WithCancel(context.Background())
	run := &syncerRun{finished: make(chan struct{})}
	go func() {
		run.err = app.Run(runCtx, process, syncer.Setup(w.opts))
		close(run.finished)
	}()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			select {
			case <-run.finished:
				if run.err != nil && !run.exitSeen.Load() {
					t.Errorf("syncer stopped with %v", run.err)
				}
			case <-time.After(30 * time.Second):
				t.Error("syncer did not stop within 30s")
			}
		})
	}
	t.Cleanup(stop)
	w.stop, w.run = stop, run
	return stop
}

// syncerRun is one run of the syncer.
type syncerRun struct {
	finished chan struct{}
	err      error // set before finished is closed
	// exitSeen: the test saw the run end by itself, and its error.
	exitSeen atomic.Bool
}

// WaitSyncerExit waits until the running syncer stops by itself, as the
// binary exits for its Deployment to start it again, and returns why.
func (w *SyncerWorld) WaitSyncerExit(t *testing.T, timeout time.Duration) error {
	t.Helper()
	select {
	case <-w.run.finished:
		w.run.exitSeen.Store(true)
		return w.run.err
	case <-time.After(timeout):
		_ = pprof.Lookup("goroutine").WriteTo(os.Stderr, 1)
		t.Fatalf("the syncer did not stop by itself within %v", timeout)
		return nil
	}
}

func (w *SyncerWorld) VirtualNode(physical string) string {
	return kubeoceanv1alpha1.VirtualNodeName(w.ClusterID, physical)
}

// StartSyncer creates the kubeconfig Secret and the ClusterBinding, selecting
// only nodes labelled suite=<binding>, and runs a syncer until the test ends.
func StartSyncer(t *testing.T, virtualCluster, physicalCluster *controlplane.Cluster, binding, clusterID string, opts syncer.Options) *SyncerWorld {
	t.Helper()
	ctx := t.Context()
	w := &SyncerWorld{
		Binding: binding, ClusterID: clusterID, Mount: "mount-" + clusterID,
		Virtual: virtualCluster.Clientset(), Physical: physicalCluster.Clientset(),
		VirtualOcean: kubeoceanclient.NewForConfigOrDie(virtualCluster.Config()),
		PhysOcean:    kubeoceanclient.NewForConfigOrDie(physicalCluster.Config()),
	}
	CreateNamespace(t, w.Virtual, "kubeocean-system")
	CreateMountNamespace(t, w.Physical, w.Mount)
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: "kubeocean-system", Name: binding + "-kubeconfig"},
		Data:       map[string][]byte{"kubeconfig": physicalCluster.Kubeconfig},
	}
	if _, err := w.Virtual.CoreV1().Secrets("kubeocean-system").Create(ctx, secret, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	b := &kubeoceanv1alpha1.ClusterBinding{
		ObjectMeta: metav1.ObjectMeta{Name: binding},
		Spec: kubeoceanv1alpha1.ClusterBindingSpec{
			ClusterID:      clusterID,
			SecretRef:      kubeoceanv1alpha1.SecretReference{Name: secret.Name, Namespace: secret.Namespace},
			MountNamespace: w.Mount,
			NodeSelector: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{
				{Key: "suite", Operator: corev1.NodeSelectorOpIn, Values: []string{binding}}}}}},
		},
	}
	if _, err := w.VirtualOcean.KubeoceanV1alpha1().ClusterBindings().Create(ctx, b, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	opts.BindingName = binding
	w.virtualKubeconfig, w.opts = virtualCluster.KubeconfigPath, opts
	w.RunSyncer(t)
	return w
}

func CreateNamespace(t *testing.T, kube kubernetes.Interface, name string) {
	t.Helper()
	_, err := kube.CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
}

// MountNamespaceLabels are the Pod Security labels of the shipped mount
// namespace (manifests/rbac/physical/namespace.yaml).
var MountNamespaceLabels = map[string]string{
	"pod-security.kubernetes.io/enforce":         "baseline",
	"pod-security.kubernetes.io/enforce-version": "latest",
}

// CreateMountNamespace creates a mount namespace in the physical cluster
// labelled as the shipped one is.
func CreateMountNamespace(t *testing.T, kube kubernetes.Interface, name string) {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: maps.Clone(MountNamespaceLabels)}}
	_, err := kube.CoreV1().Namespaces().Create(t.Context(), ns, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
}

func WaitFor(t *testing.T, timeout time.Duration, what string, cond func(ctx context.Context) (bool, error)) {
	t.Helper()
	var lastErr error
	err := wait.PollUntilContextTimeout(t.Context(), 200*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		ok, err := cond(ctx)
		lastErr = err
		return ok, nil
	})
	if err != nil {
		t.Fatalf("timed out after %v waiting until %s (last error: %v)", timeout, what, lastErr)
	}
}

// WaitCPU waits until the virtual node's allocatable CPU equals want.
func (w *SyncerWorld) WaitCPU(t *testing.T, physical, want string) {
	t.Helper()
	WaitFor(t, 30*time.Second, fmt.Sprintf("%s advertises %s CPU", w.VirtualNode(physical), want), func(ctx context.Context) (bool, error) {
		n, err := w.Virtual.CoreV1().Nodes().Get(ctx, w.VirtualNode(physical), metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		cpu := n.Status.Allocatable[corev1.ResourceCPU]
		return cpu.Cmp(resource.MustParse(want)) == 0, fmt.Errorf("cpu is %s", cpu.String())
	})
}

func (w *SyncerWorld) WaitNodeGone(t *testing.T, physical string) {
	t.Helper()
	WaitFor(t, 60*time.Second, w.VirtualNode(physical)+" is removed", func(ctx context.Context) (bool, error) {
		_, err := w.Virtual.CoreV1().Nodes().Get(ctx, w.VirtualNode(physical), metav1.GetOptions{})
		return apierrors.IsNotFound(err), err
	})
}

func (w *SyncerWorld) Taint(t *testing.T, physical, key string) *corev1.Taint {
	t.Helper()
	n, err := w.Virtual.CoreV1().Nodes().Get(t.Context(), w.VirtualNode(physical), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range n.Spec.Taints {
		if n.Spec.Taints[i].Key == key {
			return &n.Spec.Taints[i]
		}
	}
	return nil
}

func (w *SyncerWorld) UpdatePolicy(t *testing.T, name string, mutate func(*kubeoceanv1alpha1.ResourceLeasingPolicy)) {
	t.Helper()
	policies := w.PhysOcean.KubeoceanV1alpha1().ResourceLeasingPolicies()
	err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
		p, err := policies.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		mutate(p)
		_, err = policies.Update(ctx, p, metav1.UpdateOptions{})
		return err == nil, nil
	})
	if err != nil {
		t.Fatalf("updating policy %s: %v", name, err)
	}
}

// BindingUID is the UID of the world's ClusterBinding, which every physical
// object its syncer makes carries; "" when it cannot be read.
func (w *SyncerWorld) BindingUID(ctx context.Context) string {
	b, err := w.VirtualOcean.KubeoceanV1alpha1().ClusterBindings().Get(ctx, w.Binding, metav1.GetOptions{})
	if err != nil {
		return ""
	}
	return string(b.UID)
}

// LendNode creates node in the physical cluster and a ResourceLeasingPolicy,
// named after the binding, that lends the binding every node it selects.
// It returns at once; WaitCPU waits for the virtual node.
func (w *SyncerWorld) LendNode(t *testing.T, node *corev1.Node) {
	t.Helper()
	if _, err := w.Physical.CoreV1().Nodes().Create(t.Context(), node, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	policy := &kubeoceanv1alpha1.ResourceLeasingPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: w.Binding},
		Spec:       kubeoceanv1alpha1.ResourceLeasingPolicySpec{Cluster: w.Binding},
	}
	if _, err := w.PhysOcean.KubeoceanV1alpha1().ResourceLeasingPolicies().Create(t.Context(), policy, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}
