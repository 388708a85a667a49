package bottomup

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
	kubeoceanclient "github.com/kubeocean/kubeocean/generated/clientset/versioned"
	"github.com/kubeocean/kubeocean/pkg/app"
	"github.com/kubeocean/kubeocean/pkg/naming"
	"github.com/kubeocean/kubeocean/pkg/syncer"
)

// syncerWorld is one binding with its syncer running in-process against
// the shared clusters.
type syncerWorld struct {
	binding, clusterID, mount string
	virtual, physical         kubernetes.Interface
	virtualOcean, physOcean   kubeoceanclient.Interface
}

func (w *syncerWorld) vnode(physical string) string {
	return naming.VirtualNodeName(w.clusterID, physical)
}

// startSyncer creates the kubeconfig Secret and the ClusterBinding, selecting
// only nodes labelled suite=<binding>, and runs a syncer until the test ends.
func startSyncer(t *testing.T, binding, clusterID string) *syncerWorld {
	t.Helper()
	ctx := t.Context()
	w := &syncerWorld{
		binding: binding, clusterID: clusterID, mount: "mount-" + clusterID,
		virtual: virtualCluster.Clientset(), physical: physicalCluster.Clientset(),
		virtualOcean: kubeoceanclient.NewForConfigOrDie(virtualCluster.Config()),
		physOcean:    kubeoceanclient.NewForConfigOrDie(physicalCluster.Config()),
	}
	createNamespace(t, w.virtual, "kubeocean-system")
	createNamespace(t, w.physical, w.mount)
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: "kubeocean-system", Name: binding + "-kubeconfig"},
		Data:       map[string][]byte{"kubeconfig": physicalCluster.Kubeconfig},
	}
	if _, err := w.virtual.CoreV1().Secrets("kubeocean-system").Create(ctx, secret, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	b := &kubeoceanv1alpha1.ClusterBinding{
		ObjectMeta: metav1.ObjectMeta{Name: binding},
		Spec: kubeoceanv1alpha1.ClusterBindingSpec{
			ClusterID:      clusterID,
			SecretRef:      kubeoceanv1alpha1.SecretReference{Name: secret.Name, Namespace: secret.Namespace},
			MountNamespace: w.mount,
			NodeSelector: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{
				{Key: "suite", Operator: corev1.NodeSelectorOpIn, Values: []string{binding}}}}}},
		},
	}
	if _, err := w.virtualOcean.KubeoceanV1alpha1().ClusterBindings().Create(ctx, b, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	opts := app.NewOptions(syncer.Component)
	opts.Kubeconfig = virtualCluster.KubeconfigPath
	opts.Serving.MetricsBindAddress, opts.Serving.HealthProbeBindAddress = "0", "0"
	runCtx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- app.Run(runCtx, opts, syncer.Setup(syncer.Options{BindingName: binding, Workers: 2, PhysicalQPS: 50, PhysicalBurst: 100}))
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("syncer stopped with %v", err)
			}
		case <-time.After(30 * time.Second):
			t.Error("syncer did not stop within 30s")
		}
	})
	return w
}

func createNamespace(t *testing.T, kube kubernetes.Interface, name string) {
	t.Helper()
	_, err := kube.CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
}

func waitFor(t *testing.T, timeout time.Duration, what string, cond func(ctx context.Context) (bool, error)) {
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

// nodeCPU waits until the virtual node's allocatable CPU equals want.
func (w *syncerWorld) waitCPU(t *testing.T, physical, want string) {
	t.Helper()
	waitFor(t, 30*time.Second, fmt.Sprintf("%s advertises %s CPU", w.vnode(physical), want), func(ctx context.Context) (bool, error) {
		n, err := w.virtual.CoreV1().Nodes().Get(ctx, w.vnode(physical), metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		cpu := n.Status.Allocatable[corev1.ResourceCPU]
		return cpu.Cmp(resource.MustParse(want)) == 0, fmt.Errorf("cpu is %s", cpu.String())
	})
}

func (w *syncerWorld) waitGone(t *testing.T, physical string) {
	t.Helper()
	waitFor(t, 60*time.Second, w.vnode(physical)+" is removed", func(ctx context.Context) (bool, error) {
		_, err := w.virtual.CoreV1().Nodes().Get(ctx, w.vnode(physical), metav1.GetOptions{})
		return apierrors.IsNotFound(err), err
	})
}

func (w *syncerWorld) taint(t *testing.T, physical, key string) *corev1.Taint {
	t.Helper()
	n, err := w.virtual.CoreV1().Nodes().Get(t.Context(), w.vnode(physical), metav1.GetOptions{})
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

func (w *syncerWorld) updatePolicy(t *testing.T, name string, mutate func(*kubeoceanv1alpha1.ResourceLeasingPolicy)) {
	t.Helper()
	policies := w.physOcean.KubeoceanV1alpha1().ResourceLeasingPolicies()
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

// forceDeleteWhenTerminating plays the top-down syncer's part: once the
// drain marks the virtual pod for deletion, it removes it for good.
func (w *syncerWorld) forceDeleteWhenTerminating(t *testing.T, namespace, name string) {
	t.Helper()
	waitFor(t, 30*time.Second, "the drain deletes pod "+name, func(ctx context.Context) (bool, error) {
		p, err := w.virtual.CoreV1().Pods(namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return p.DeletionTimestamp != nil, nil
	})
	err := w.virtual.CoreV1().Pods(namespace).Delete(t.Context(), name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)})
	if err != nil && !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}
}

func virtualPodOn(namespace, name, node string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec: corev1.PodSpec{
			NodeName:    node,
			Containers:  []corev1.Container{{Name: "app", Image: "registry.k8s.io/pause:3.10"}},
			Tolerations: []corev1.Toleration{{Operator: corev1.TolerationOpExists}},
		},
	}
}
