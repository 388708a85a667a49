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

// Package informers gives each cluster Kubeocean talks to (the virtual
// cluster, each physical cluster) one set of shared informer factories: a
// factory per scope (namespace, label and field selector, slimming), for
// both the Kubernetes and the Kubeocean API, so controllers that read the
// same objects share one watch and one cache, while controllers that need
// only a slice of a large cluster never cache the rest.
//
// Every object is stored without managedFields; a scope may slim objects
// further (e.g. keep only what capacity math needs of foreign pods), so that
// memory grows with what Kubeocean manages, not with the cluster.
package informers

import (
	"context"
	"fmt"
	"maps"
	"sort"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubeinformers "k8s.io/client-go/informers"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	kubeoceanclient "github.com/kubeocean/kubeocean/generated/clientset/versioned"
	kubeoceaninformers "github.com/kubeocean/kubeocean/generated/informers/externalversions"
)

// Scope selects the objects a factory's informers list and watch, and how
// they are stored. The zero Scope is every object of the cluster.
type Scope struct {
	// Namespace limits the informers to one namespace; "" is all.
	Namespace string
	// LabelSelector and FieldSelector are passed to list and watch.
	LabelSelector string
	FieldSelector string
	// Slim, when set, trims each object after managedFields are dropped.
	// It may return a smaller type of its own (with object metadata); then
	// only the Informer of that resource may be used, not its typed Lister.
	// SlimName tells slimmings apart (functions cannot be compared) and is
	// required with Slim.
	Slim     cache.TransformFunc
	SlimName string
	// KeepPod, when set, keeps of the pods that list and watch return only
	// those it accepts: the others are dropped as they are decoded, before
	// the pod informer of the scope, so they cost no memory and no handler
	// ever sees them. It is for what a selector cannot say (a prefix of
	// spec.nodeName). It must accept or refuse a pod for good once it
	// accepts it (decide on fields that do not change from then on, like
	// spec.nodeName once set): a kept pod whose later events were dropped
	// would stay in the cache as it was. A pod it starts to accept comes as
	// an add. KeepPodName tells filters apart and is required with KeepPod.
	// Only the scope's pod informer filters.
	KeepPod     func(*corev1.Pod) bool
	KeepPodName string
}

// key identifies a scope; the Slim and KeepPod functions are identified by
// SlimName and KeepPodName.
type key struct {
	namespace, labelSelector, fieldSelector, slimName, keepPodName string
}

func (s Scope) key() key {
	return key{s.Namespace, s.LabelSelector, s.FieldSelector, s.SlimName, s.KeepPodName}
}

func (s Scope) String() string {
	return fmt.Sprintf("namespace=%q labels=%q fields=%q slim=%q keepPods=%q",
		s.Namespace, s.LabelSelector, s.FieldSelector, s.SlimName, s.KeepPodName)
}

// Cluster holds the informer factories of one cluster.
type Cluster struct {
	name      string
	kube      kubernetes.Interface
	kubeocean kubeoceanclient.Interface
	resync    time.Duration

	mu        sync.Mutex
	kubeSets  map[key]kubeinformers.SharedInformerFactory
	oceanSets map[key]kubeoceaninformers.SharedInformerFactory
}

// NewCluster prepares factories for the cluster reached by the two clients.
// name ("virtual", a binding name) shows in errors. resync is the periodic
// resync of every informer; 0 disables it.
func NewCluster(name string, kube kubernetes.Interface, kubeocean kubeoceanclient.Interface, resync time.Duration) *Cluster {
	return &Cluster{
		name:      name,
		kube:      kube,
		kubeocean: kubeocean,
		resync:    resync,
		kubeSets:  map[key]kubeinformers.SharedInformerFactory{},
		oceanSets: map[key]kubeoceaninformers.SharedInformerFactory{},
	}
}

// Name is the cluster's name as given to NewCluster.
func (c *Cluster) Name() string { return c.name }

// Kube returns the Kubernetes informer factory for scope, creating it on
// first use. Ask for informers before Start.
func (c *Cluster) Kube(scope Scope) kubeinformers.SharedInformerFactory {
	mustBeNamed(scope)
	c.mu.Lock()
	defer c.mu.Unlock()
	if f, ok := c.kubeSets[scope.key()]; ok {
		return f
	}
	f := kubeinformers.NewSharedInformerFactoryWithOptions(c.kube, c.resync,
		kubeinformers.WithNamespace(scope.Namespace),
		kubeinformers.WithTweakListOptions(scope.tweak),
		kubeinformers.WithTransform(scope.transform()),
	)
	if scope.KeepPod != nil {
		// The factory's pod informer is the filtering one from the start,
		// whoever asks for pods.
		f.InformerFor(&corev1.Pod{}, scope.keptPodInformer)
	}
	c.kubeSets[scope.key()] = f
	return f
}

// PodsWithoutIndexes returns the pod informer of scope without the
// namespace index the factory's pod informers carry; callers add the
// indexes they use. It suits a scope that caches many pods and never lists
// them by namespace, where the index would cost about as much as the pods.
// It is the pod informer of scope's factory, so ask for it before anything
// else asks that factory for pods. Not for a scope with KeepPod.
func (c *Cluster) PodsWithoutIndexes(scope Scope) cache.SharedIndexInformer {
	if scope.KeepPod != nil {
		panic(fmt.Sprintf("informers: PodsWithoutIndexes of scope %v, which filters pods", scope))
	}
	return c.Kube(scope).InformerFor(&corev1.Pod{}, func(client kubernetes.Interface, resync time.Duration) cache.SharedIndexInformer {
		return coreinformers.NewFilteredPodInformer(client, scope.Namespace, resync, cache.Indexers{}, scope.tweak)
	})
}

// Kubeocean returns the kubeocean.io informer factory for scope, creating it
// on first use. The CRDs are cluster-scoped, so Namespace has no effect.
func (c *Cluster) Kubeocean(scope Scope) kubeoceaninformers.SharedInformerFactory {
	mustBeNamed(scope)
	c.mu.Lock()
	defer c.mu.Unlock()
	if f, ok := c.oceanSets[scope.key()]; ok {
		return f
	}
	f := kubeoceaninformers.NewSharedInformerFactoryWithOptions(c.kubeocean, c.resync,
		kubeoceaninformers.WithNamespace(scope.Namespace),
		kubeoceaninformers.WithTweakListOptions(scope.tweak),
		kubeoceaninformers.WithTransform(scope.transform()),
	)
	c.oceanSets[scope.key()] = f
	return f
}

// Start starts every informer requested so far; call it again after asking
// for more. It does not block.
func (c *Cluster) Start(ctx context.Context) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, f := range c.kubeSets {
		f.Start(ctx.Done())
	}
	for _, f := range c.oceanSets {
		f.Start(ctx.Done())
	}
}

// WaitForCacheSync blocks until every started informer has synced, or ctx
// ends; the error then names the informers that did not sync.
func (c *Cluster) WaitForCacheSync(ctx context.Context) error {
	c.mu.Lock()
	kubeSets := maps.Clone(c.kubeSets)
	oceanSets := maps.Clone(c.oceanSets)
	c.mu.Unlock()

	var unsynced []string
	for k, f := range kubeSets {
		for typ, ok := range f.WaitForCacheSync(ctx.Done()) {
			if !ok {
				unsynced = append(unsynced, fmt.Sprintf("%v (%v)", typ, k))
			}
		}
	}
	for k, f := range oceanSets {
		for typ, ok := range f.WaitForCacheSync(ctx.Done()) {
			if !ok {
				unsynced = append(unsynced, fmt.Sprintf("%v (%v)", typ, k))
			}
		}
	}
	if len(unsynced) > 0 {
		sort.Strings(unsynced)
		return fmt.Errorf("cluster %s: informers did not sync: %v", c.name, unsynced)
	}
	return nil
}

// Shutdown stops every informer and waits for their goroutines to end. The
// context passed to Start must be cancelled first.
func (c *Cluster) Shutdown() {
	c.mu.Lock()
	kubeSets := maps.Clone(c.kubeSets)
	oceanSets := maps.Clone(c.oceanSets)
	c.mu.Unlock()
	for _, f := range kubeSets {
		f.Shutdown()
	}
	for _, f := range oceanSets {
		f.Shutdown()
	}
}

func mustBeNamed(scope Scope) {
	if scope.Slim != nil && scope.SlimName == "" {
		panic(fmt.Sprintf("informers: scope %v has a Slim function without a SlimName", scope))
	}
	if scope.KeepPod != nil && scope.KeepPodName == "" {
		panic(fmt.Sprintf("informers: scope %v has a KeepPod function without a KeepPodName", scope))
	}
}

func (s Scope) tweak(opts *metav1.ListOptions) {
	if s.LabelSelector != "" {
		opts.LabelSelector = s.LabelSelector
	}
	if s.FieldSelector != "" {
		opts.FieldSelector = s.FieldSelector
	}
}

func (s Scope) transform() cache.TransformFunc {
	if s.Slim == nil {
		return DropManagedFields
	}
	return func(obj any) (any, error) {
		obj, err := DropManagedFields(obj)
		if err != nil {
			return nil, err
		}
		if _, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			return obj, nil
		}
		return s.Slim(obj)
	}
}

// DropManagedFields removes metadata.managedFields, which no controller
// reads and which is often the largest part of an object.
func DropManagedFields(obj any) (any, error) {
	if _, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		return obj, nil
	}
	accessor, err := meta.Accessor(obj)
	if err != nil {
		// Not an object with metadata (e.g. a tombstone of an unknown type):
		// store it unchanged.
		return obj, nil
	}
	if len(accessor.GetManagedFields()) > 0 {
		accessor.SetManagedFields(nil)
	}
	return obj, nil
}
