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

package integration

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	corev1listers "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"

	kubeoceanclient "github.com/kubeocean/kubeocean/generated/clientset/versioned"
	"github.com/kubeocean/kubeocean/pkg/controller"
	"github.com/kubeocean/kubeocean/pkg/informers"
)

const (
	toyNamespace = "toy"
	mirrorLabel  = "toy.kubeocean.io/mirror"
)

// mirrorController is a toy controller built on the framework: it keeps a
// "<name>-mirror" ConfigMap with the data of every ConfigMap in its
// namespace, and deletes the mirror when the source goes. A source with
// data "panic: once" makes its first reconcile panic; one with "requeue"
// asks to be reconciled again after a second.
type mirrorController struct {
	kube      kubernetes.Interface
	lister    corev1listers.ConfigMapLister
	panicked  sync.Map // name → true once it panicked
	reconcile sync.Map // name → *atomic.Int32
	*controller.Controller[cache.ObjectName]
}

func newMirrorController(kube kubernetes.Interface, cluster *informers.Cluster, metrics *controller.Metrics) *mirrorController {
	configMaps := cluster.Kube(informers.Scope{Namespace: toyNamespace}).Core().V1().ConfigMaps()
	c := &mirrorController{kube: kube, lister: configMaps.Lister()}
	c.Controller = controller.New(controller.Options[cache.ObjectName]{
		Name:        "toy-mirror",
		Reconcile:   c.sync,
		HasSynced:   []cache.InformerSynced{configMaps.Informer().HasSynced},
		RateLimiter: workqueue.NewTypedItemExponentialFailureRateLimiter[cache.ObjectName](10*time.Millisecond, time.Second),
		Metrics:     metrics,
	})
	_, err := configMaps.Informer().AddEventHandler(controller.Handler[*corev1.ConfigMap, cache.ObjectName]{
		Enqueue: c.Enqueue,
		Keys:    controller.ObjectKeys[*corev1.ConfigMap],
		Filter:  func(cm *corev1.ConfigMap) bool { return cm.Labels[mirrorLabel] == "" },
	})
	if err != nil {
		panic(err)
	}
	return c
}

func (c *mirrorController) count(name string) int32 {
	n, _ := c.reconcile.LoadOrStore(name, new(atomic.Int32))
	return n.(*atomic.Int32).Load()
}

func (c *mirrorController) sync(ctx context.Context, key cache.ObjectName) (controller.Result, error) {
	n, _ := c.reconcile.LoadOrStore(key.Name, new(atomic.Int32))
	n.(*atomic.Int32).Add(1)

	mirrorName := key.Name + "-mirror"
	source, err := c.lister.ConfigMaps(key.Namespace).Get(key.Name)
	if apierrors.IsNotFound(err) {
		err := c.kube.CoreV1().ConfigMaps(key.Namespace).Delete(ctx, mirrorName, metav1.DeleteOptions{})
		if apierrors.IsNotFound(err) {
			return controller.Result{}, nil
		}
		return controller.Result{}, err
	}
	if err != nil {
		return controller.Result{}, err
	}
	if source.Data["panic"] == "once" {
		if _, loaded := c.panicked.LoadOrStore(key.Name, true); !loaded {
			panic("toy controller: panic requested by " + key.String())
		}
	}
	if err := c.writeMirror(ctx, source, mirrorName); err != nil {
		return controller.Result{}, err
	}
	if _, ok := source.Data["requeue"]; ok {
		return controller.RequeueAfter(time.Second), nil
	}
	return controller.Result{}, nil
}

func (c *mirrorController) writeMirror(ctx context.Context, source *corev1.ConfigMap, mirrorName string) error {
	mirrors := c.kube.CoreV1().ConfigMaps(source.Namespace)
	current, err := mirrors.Get(ctx, mirrorName, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		_, err = mirrors.Create(ctx, &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: mirrorName, Namespace: source.Namespace, Labels: map[string]string{mirrorLabel: source.Name}},
			Data:       source.Data,
		}, metav1.CreateOptions{})
		return err
	}
	if err != nil || equality.Semantic.DeepEqual(current.Data, source.Data) {
		return err
	}
	current = current.DeepCopy()
	current.Data = source.Data
	_, err = mirrors.Update(ctx, current, metav1.UpdateOptions{})
	return err
}

func TestFrameworkOnARealAPIServer(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	kube := kubernetes.NewForConfigOrDie(virtualCluster.Config())
	ocean := kubeoceanclient.NewForConfigOrDie(virtualCluster.Config())
	if _, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: toyNamespace}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	registry := prometheus.NewRegistry()
	metrics := controller.NewMetrics(registry)
	cluster := informers.NewCluster("virtual", kube, ocean, 0)
	mirror := newMirrorController(kube, cluster, metrics)
	cluster.Start(ctx)
	done := make(chan error, 1)
	go func() { done <- mirror.Run(ctx, 2) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
		cluster.Shutdown()
	}()

	configMaps := kube.CoreV1().ConfigMaps(toyNamespace)
	create := func(name string, data map[string]string) {
		t.Helper()
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: data}
		if _, err := configMaps.Create(ctx, cm, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	mirrorHas := func(name, key, value string) func() bool {
		return func() bool {
			m, err := configMaps.Get(ctx, name+"-mirror", metav1.GetOptions{})
			return err == nil && m.Data[key] == value
		}
	}

	t.Run("create, update and delete are reconciled", func(t *testing.T) {
		create("settings", map[string]string{"color": "blue"})
		eventually(t, "the mirror is created", mirrorHas("settings", "color", "blue"))

		cm, err := configMaps.Get(ctx, "settings", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		cm.Data["color"] = "green"
		if _, err := configMaps.Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		eventually(t, "the mirror follows the update", mirrorHas("settings", "color", "green"))

		if err := configMaps.Delete(ctx, "settings", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		eventually(t, "the mirror is deleted", func() bool {
			_, err := configMaps.Get(ctx, "settings-mirror", metav1.GetOptions{})
			return apierrors.IsNotFound(err)
		})
	})

	t.Run("a panic is recovered and the key retried", func(t *testing.T) {
		create("explosive", map[string]string{"panic": "once"})
		eventually(t, "the retry after the panic writes the mirror", mirrorHas("explosive", "panic", "once"))
		if got := counterValue(t, registry, "kubeocean_controller_reconcile_panics_total"); got != 1 {
			t.Fatalf("reconcile_panics_total = %v, want 1", got)
		}
		// The process and the other worker survived: new work still flows.
		create("after-panic", map[string]string{"ok": "yes"})
		eventually(t, "work after the panic", mirrorHas("after-panic", "ok", "yes"))
	})

	t.Run("requeue-after fires without any event", func(t *testing.T) {
		create("periodic", map[string]string{"requeue": "1s"})
		eventually(t, "the mirror exists", mirrorHas("periodic", "requeue", "1s"))
		before := mirror.count("periodic")
		eventually(t, "two more reconciles from requeue-after alone", func() bool { return mirror.count("periodic") >= before+2 })
	})

	t.Run("a settled key is not reconciled again without an event", func(t *testing.T) {
		// "settings" was deleted and "explosive" settled: neither may be
		// reconciled again without an event.
		steady := mirror.count("explosive")
		time.Sleep(1500 * time.Millisecond)
		if got := mirror.count("explosive"); got != steady {
			t.Fatalf("explosive reconciled %d more times without events", got-steady)
		}
	})
}

// counterValue reads a counter with a single series from registry.
func counterValue(t *testing.T, registry *prometheus.Registry, name string) float64 {
	t.Helper()
	families, err := registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() == name && len(f.GetMetric()) == 1 {
			return f.GetMetric()[0].GetCounter().GetValue()
		}
	}
	t.Fatalf("metric %s with one series not found", name)
	return 0
}
