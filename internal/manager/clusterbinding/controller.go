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

package clusterbinding

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
	kubeoceanv1alpha1client "github.com/kubeocean/kubeocean/generated/clientset/versioned/typed/kubeocean/v1alpha1"
	kubeoceaninformers "github.com/kubeocean/kubeocean/generated/informers/externalversions/kubeocean/v1alpha1"
	kubeoceanlisters "github.com/kubeocean/kubeocean/generated/listers/kubeocean/v1alpha1"
	"github.com/kubeocean/kubeocean/internal/manager/connectivity"
	"github.com/kubeocean/kubeocean/internal/manager/syncers"
	"github.com/kubeocean/kubeocean/pkg/controller"
)

// ControllerName names the controller, its queue and its metrics.
const ControllerName = "manager-clusterbinding"

// DefaultRecheckInterval is how often a connected binding's physical
// cluster is checked again.
const DefaultRecheckInterval = 5 * time.Minute

// Indexes the controller adds to the binding informer.
const (
	clusterIDIndex = "clusterID"
	secretIndex    = "secretRef"
)

// Checker checks a binding's physical cluster; *connectivity.Checker is
// the implementation.
type Checker interface {
	Check(ctx context.Context, spec *kubeoceanv1alpha1.ClusterBindingSpec) *connectivity.Failure
	// Answers says whether the physical API server answers now: one cheap
	// request, to cut the backoff of an unreachable cluster short.
	Answers(ctx context.Context, spec *kubeoceanv1alpha1.ClusterBindingSpec) bool
	Forget(namespace, name string)
	// Identity reads the physical cluster's identity (the UID of its
	// kube-system namespace).
	Identity(ctx context.Context, spec *kubeoceanv1alpha1.ClusterBindingSpec) (string, *connectivity.Failure)
	// ClaimMountNamespace records that the binding's mount namespace
	// belongs to it, or fails when it belongs to another binding.
	ClaimMountNamespace(ctx context.Context, spec *kubeoceanv1alpha1.ClusterBindingSpec, claim connectivity.Claim) *connectivity.Failure
}

// Options are the dependencies of the controller.
type Options struct {
	// Client writes bindings (metadata and status) in the virtual cluster.
	Client kubeoceanv1alpha1client.ClusterBindingsGetter
	// Bindings is an informer on every ClusterBinding; New adds its
	// indexes, so it must not have started.
	Bindings kubeoceaninformers.ClusterBindingInformer
	// Secrets caches the Secrets the bindings reference; the controller
	// tells it which (*secretwatch.Watches).
	Secrets Secrets
	// Checker checks the physical clusters.
	Checker Checker
	// Syncers runs the syncers.
	Syncers syncers.Runner
	// Recorder records events on bindings.
	Recorder record.EventRecorder
	// Metrics receives the controller's reconcile metrics; nil records none.
	Metrics *controller.Metrics
	// Registry receives the manager's own metrics; nil registers none.
	Registry prometheus.Registerer
	// RecheckInterval is how often a connected binding is checked again;
	// zero means DefaultRecheckInterval.
	RecheckInterval time.Duration
	// Clock stamps the status and drives the queue; nil is the real clock.
	Clock clock.WithTicker
	// VirtualClusterUID identifies the virtual cluster (the UID of its
	// kube-system namespace) in the claims of mount namespaces.
	VirtualClusterUID string
}

// Secrets caches the kubeconfig Secrets the bindings reference, and only
// them; *secretwatch.Watches is the implementation.
type Secrets interface {
	// AddEventHandler registers events on every Secret watched, and synced,
	// called with a Secret's key once its watch has synced.
	AddEventHandler(events cache.ResourceEventHandler, synced func(cache.ObjectName)) error
	// Watch makes keys the Secrets watched, and no others.
	Watch(keys []cache.ObjectName)
	// Synced tells whether the Secret key is watched and synced.
	Synced(key cache.ObjectName) bool
	// Get returns a watched Secret; a NotFound error when it does not
	// exist.
	Get(namespace, name string) (*corev1.Secret, error)
}

// Controller reconciles ClusterBindings, keyed by name.
type Controller struct {
	*controller.Controller[string]

	client   kubeoceanv1alpha1client.ClusterBindingsGetter
	bindings kubeoceanlisters.ClusterBindingLister
	index    cache.Indexer
	secrets  Secrets
	// watching serializes the updates of the Secrets watched, so that the
	// last one made is from the latest binding cache.
	watching sync.Mutex
	checker  Checker
	syncers  syncers.Runner
	recorder record.EventRecorder
	clock    clock.PassiveClock
	recheck  time.Duration
	records  *connRecords
	metrics  *metrics
	// virtualCluster identifies this virtual cluster in mount namespace
	// claims.
	virtualCluster string
}

// New builds the controller, adds its indexes and registers its handlers
// and metrics; it starts nothing.
func New(opts Options) (*Controller, error) {
	if err := opts.validate(); err != nil {
		return nil, err
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	if opts.RecheckInterval <= 0 {
		opts.RecheckInterval = DefaultRecheckInterval
	}
	bindingInformer := opts.Bindings.Informer()
	if err := bindingInformer.AddIndexers(cache.Indexers{clusterIDIndex: byClusterID, secretIndex: bySecret}); err != nil {
		return nil, fmt.Errorf("adding the binding indexes: %w", err)
	}
	c := &Controller{
		client: opts.Client, bindings: opts.Bindings.Lister(), index: bindingInformer.GetIndexer(),
		secrets: opts.Secrets, checker: opts.Checker, syncers: opts.Syncers, recorder: opts.Recorder,
		clock: opts.Clock, recheck: opts.RecheckInterval, records: newConnRecords(),
		virtualCluster: opts.VirtualClusterUID,
	}
	metrics, err := newMetrics(opts.Registry, c.bindings, opts.Syncers)
	if err != nil {
		return nil, err
	}
	c.metrics = metrics

	c.Controller = controller.New(controller.Options[string]{
		Name:      ControllerName,
		Reconcile: c.reconcile,
		HasSynced: []cache.InformerSynced{opts.Syncers.HasSynced},
		Metrics:   opts.Metrics,
		Clock:     opts.Clock,
	})
	if err := c.Watch(bindingInformer, bindingHandler(c.index, c.Enqueue)); err != nil {
		return nil, err
	}
	secrets := secretHandler(c.index, c.Enqueue)
	synced := func(key cache.ObjectName) {
		for _, name := range secrets.Keys(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}}) {
			c.Enqueue(name)
		}
	}
	if err := opts.Secrets.AddEventHandler(secrets, synced); err != nil {
		return nil, err
	}
	return c, nil
}

func (opts *Options) validate() error {
	var errs []error
	if opts.Client == nil {
		errs = append(errs, errors.New("option Client is required"))
	}
	if opts.Bindings == nil || opts.Secrets == nil {
		errs = append(errs, errors.New("options Bindings and Secrets are required"))
	}
	if opts.Checker == nil || opts.Syncers == nil || opts.Recorder == nil {
		errs = append(errs, errors.New("options Checker, Syncers and Recorder are required"))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("clusterbinding controller options: %w", err)
	}
	return nil
}

// EnqueueAll reconciles every binding, e.g. after the syncer templates changed.
func (c *Controller) EnqueueAll() {
	bindings, err := c.bindings.List(labels.Everything())
	if err != nil {
		return
	}
	for _, b := range bindings {
		c.Enqueue(b.Name)
	}
}

func byClusterID(obj any) ([]string, error) {
	b, ok := obj.(*kubeoceanv1alpha1.ClusterBinding)
	if !ok || b.Spec.ClusterID == "" {
		return nil, nil
	}
	return []string{b.Spec.ClusterID}, nil
}

func bySecret(obj any) ([]string, error) {
	b, ok := obj.(*kubeoceanv1alpha1.ClusterBinding)
	if !ok {
		return nil, nil
	}
	return []string{secretKey(b.Spec.SecretRef)}, nil
}

func secretKey(ref kubeoceanv1alpha1.SecretReference) string {
	return ref.Namespace + "/" + ref.Name
}

// bindingHandler enqueues a binding and, so that a clusterID freed by a
// deleted binding goes to the next one, the other bindings with its
// clusterID. Status-only updates (the controller's own writes) are dropped.
func bindingHandler(index cache.Indexer, enqueue func(string)) controller.Handler[*kubeoceanv1alpha1.ClusterBinding, string] {
	return controller.Handler[*kubeoceanv1alpha1.ClusterBinding, string]{
		Enqueue: enqueue,
		Keys: func(b *kubeoceanv1alpha1.ClusterBinding) []string {
			keys := []string{b.Name}
			peers, _ := index.ByIndex(clusterIDIndex, b.Spec.ClusterID)
			for _, obj := range peers {
				if peer, ok := obj.(*kubeoceanv1alpha1.ClusterBinding); ok && peer.Name != b.Name {
					keys = append(keys, peer.Name)
				}
			}
			return keys
		},
		Changed: func(oldB, newB *kubeoceanv1alpha1.ClusterBinding) bool {
			return oldB.Generation != newB.Generation ||
				!oldB.DeletionTimestamp.Equal(newB.DeletionTimestamp) ||
				!slices.Equal(oldB.Finalizers, newB.Finalizers) ||
				!maps.Equal(oldB.Annotations, newB.Annotations) ||
				oldB.UID != newB.UID
		},
	}
}

// watchSecrets makes the Secrets the bindings reference, and no others, the
// Secrets watched.
func (c *Controller) watchSecrets() {
	c.watching.Lock()
	defer c.watching.Unlock()
	values := c.index.ListIndexFuncValues(secretIndex)
	keys := make([]cache.ObjectName, 0, len(values))
	for _, value := range values {
		if key, err := cache.ParseObjectName(value); err == nil {
			keys = append(keys, key)
		}
	}
	c.secrets.Watch(keys)
}

// secretHandler maps a Secret to the bindings that reference it.
func secretHandler(index cache.Indexer, enqueue func(string)) controller.Handler[*corev1.Secret, string] {
	return controller.Handler[*corev1.Secret, string]{
		Enqueue: enqueue,
		Keys: func(s *corev1.Secret) []string {
			objs, _ := index.ByIndex(secretIndex, s.Namespace+"/"+s.Name)
			keys := make([]string, 0, len(objs))
			for _, obj := range objs {
				if b, ok := obj.(*kubeoceanv1alpha1.ClusterBinding); ok {
					keys = append(keys, b.Name)
				}
			}
			return keys
		},
		Changed: func(oldS, newS *corev1.Secret) bool {
			return !maps.EqualFunc(oldS.Data, newS.Data, slices.Equal[[]byte])
		},
	}
}
