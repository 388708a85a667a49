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
	"fmt"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/klog/v2/ktesting"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
	kubeoceanclient "github.com/kubeocean/kubeocean/generated/clientset/versioned"
	"github.com/kubeocean/kubeocean/internal/app"
	"github.com/kubeocean/kubeocean/internal/manager"
)

const systemNamespace = "kubeocean-system"

// world holds the clients of both clusters and the Secrets a test made.
type world struct {
	virtual, physical           kubernetes.Interface
	virtualOcean, physicalOcean kubeoceanclient.Interface

	mu      sync.Mutex
	secrets []string
}

func newWorld(t *testing.T) *world {
	t.Helper()
	w := &world{
		virtual: virtualCluster.Clientset(), physical: physicalCluster.Clientset(),
		virtualOcean:  kubeoceanclient.NewForConfigOrDie(virtualCluster.Config()),
		physicalOcean: kubeoceanclient.NewForConfigOrDie(physicalCluster.Config()),
	}
	createNamespace(t, w.virtual, systemNamespace)
	// Registered first, so it runs last: after the bindings are gone and
	// the managers stopped. The next run (-count) starts without them.
	t.Cleanup(func() {
		w.mu.Lock()
		defer w.mu.Unlock()
		for _, name := range w.secrets {
			err := w.virtual.CoreV1().Secrets(systemNamespace).Delete(context.Background(), name, metav1.DeleteOptions{})
			if err != nil && !apierrors.IsNotFound(err) {
				t.Error(err)
			}
		}
	})
	return w
}

// runningManager is a manager started by startManager.
type runningManager struct {
	opts     *app.Options
	cancel   context.CancelFunc
	done     chan error
	stopOnce sync.Once
}

// startManager runs a manager until the test ends (or stop is called).
func startManager(t *testing.T, configure func(*app.Options, *manager.Options)) *runningManager {
	t.Helper()
	opts := app.NewOptions(manager.Component)
	opts.Kubeconfig = virtualCluster.KubeconfigPath
	opts.Serving.MetricsBindAddress, opts.Serving.HealthProbeBindAddress = "0", "0"
	managerOpts := manager.NewOptions()
	managerOpts.Workers = 4
	managerOpts.SyncerWorkers = 2
	configure(opts, &managerOpts)

	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	m := &runningManager{opts: opts, cancel: cancel, done: make(chan error, 1)}
	go func() { m.done <- app.Run(ctx, opts, manager.Setup(managerOpts)) }()
	t.Cleanup(func() { m.stop(t) })
	return m
}

// stop stops the manager and waits for it; safe to call twice.
func (m *runningManager) stop(t *testing.T) {
	t.Helper()
	m.stopOnce.Do(func() {
		m.cancel()
		select {
		case err := <-m.done:
			if err != nil {
				t.Errorf("manager stopped with %v", err)
			}
		case <-time.After(60 * time.Second):
			t.Error("manager did not stop within 60s")
		}
	})
}

func createNamespace(t *testing.T, kube kubernetes.Interface, name string) {
	t.Helper()
	_, err := kube.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
}

// putSecret creates or replaces a kubeconfig Secret in the virtual cluster.
func (w *world) putSecret(t *testing.T, name string, data map[string][]byte) {
	t.Helper()
	secrets := w.virtual.CoreV1().Secrets(systemNamespace)
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: systemNamespace, Name: name}, Data: data}
	_, err := secrets.Create(t.Context(), secret, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		_, err = secrets.Update(t.Context(), secret, metav1.UpdateOptions{})
	}
	if err != nil {
		t.Fatal(err)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if !slices.Contains(w.secrets, name) {
		w.secrets = append(w.secrets, name)
	}
}

func kubeconfigData(kubeconfig []byte) map[string][]byte {
	return map[string][]byte{"kubeconfig": kubeconfig}
}

// createBinding creates a binding whose syncer lends the physical nodes
// labelled suite=<name>, and removes it when the test ends.
func (w *world) createBinding(t *testing.T, name, clusterID string) *kubeoceanv1alpha1.ClusterBinding {
	t.Helper()
	createNamespace(t, w.physical, "mount-"+clusterID)
	b := &kubeoceanv1alpha1.ClusterBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: kubeoceanv1alpha1.ClusterBindingSpec{
			ClusterID:      clusterID,
			SecretRef:      kubeoceanv1alpha1.SecretReference{Namespace: systemNamespace, Name: name + "-kubeconfig"},
			MountNamespace: "mount-" + clusterID,
			NodeSelector: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{
				{Key: "suite", Operator: corev1.NodeSelectorOpIn, Values: []string{name}}}}}},
		},
	}
	created, err := w.virtualOcean.KubeoceanV1alpha1().ClusterBindings().Create(t.Context(), b, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return created
}

// deleteBinding deletes a binding and waits until it is gone.
func (w *world) deleteBinding(t *testing.T, name string, timeout time.Duration) {
	t.Helper()
	bindings := w.virtualOcean.KubeoceanV1alpha1().ClusterBindings()
	if err := bindings.Delete(context.Background(), name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}
	waitFor(t, timeout, "ClusterBinding "+name+" is gone", func(ctx context.Context) (bool, error) {
		b, err := bindings.Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		if err != nil {
			return false, err
		}
		return false, fmt.Errorf("finalizers %v, status %+v", b.Finalizers, b.Status.Conditions)
	})
}

func (w *world) binding(ctx context.Context, name string) (*kubeoceanv1alpha1.ClusterBinding, error) {
	return w.virtualOcean.KubeoceanV1alpha1().ClusterBindings().Get(ctx, name, metav1.GetOptions{})
}

// waitPhase waits until the binding reaches phase with a Ready condition
// whose reason is reason (any when "") and whose message contains each of
// texts, and returns it.
func (w *world) waitPhase(t *testing.T, name string, phase kubeoceanv1alpha1.ClusterBindingPhase, reason string, timeout time.Duration, texts ...string) *kubeoceanv1alpha1.ClusterBinding {
	t.Helper()
	var found *kubeoceanv1alpha1.ClusterBinding
	waitFor(t, timeout, fmt.Sprintf("%s is %s (%s)", name, phase, reason), func(ctx context.Context) (bool, error) {
		b, err := w.binding(ctx, name)
		if err != nil {
			return false, err
		}
		ready := meta.FindStatusCondition(b.Status.Conditions, kubeoceanv1alpha1.ClusterBindingConditionReady)
		if ready == nil {
			return false, fmt.Errorf("phase %q, no Ready condition", b.Status.Phase)
		}
		matches := b.Status.Phase == phase && (reason == "" || ready.Reason == reason) &&
			!slices.ContainsFunc(texts, func(text string) bool { return !strings.Contains(ready.Message, text) })
		found = b
		return matches, fmt.Errorf("phase %q, Ready %s %s: %s", b.Status.Phase, ready.Status, ready.Reason, ready.Message)
	})
	return found
}

func waitFor(t *testing.T, timeout time.Duration, what string, cond func(ctx context.Context) (bool, error)) {
	t.Helper()
	var lastErr error
	err := wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
		// Each try gets its own deadline, so the last error reported is
		// the condition's, not the poll's running out.
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		ok, err := cond(ctx)
		lastErr = err
		return ok, nil
	})
	if err != nil {
		t.Fatalf("timed out after %v waiting until %s (last: %v)", timeout, what, lastErr)
	}
}

// closedPortKubeconfig points at a loopback port nothing listens on.
func closedPortKubeconfig(t *testing.T) []byte {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	config := clientcmdapi.NewConfig()
	config.Clusters["gone"] = &clientcmdapi.Cluster{Server: "https://" + addr, InsecureSkipTLSVerify: true}
	config.AuthInfos["user"] = &clientcmdapi.AuthInfo{Token: "token"}
	config.Contexts["gone"] = &clientcmdapi.Context{Cluster: "gone", AuthInfo: "user"}
	config.CurrentContext = "gone"
	data, err := clientcmd.Write(*config)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// hasEvent reports whether an event with reason was recorded on the binding.
func (w *world) hasEvent(ctx context.Context, binding, reason string) (bool, error) {
	events, err := w.virtual.CoreV1().Events(metav1.NamespaceDefault).List(ctx, metav1.ListOptions{
		FieldSelector: "involvedObject.name=" + binding + ",reason=" + reason,
	})
	if err != nil {
		return false, err
	}
	return len(events.Items) > 0, nil
}

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}
