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

package compact

import (
	"time"

	coreinformers "k8s.io/client-go/informers/core/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
)

// physicalPodInformer is the pod informer of the binding's physical pods
// (the syncer's bound scope) as the controllers read it: its lister, indexer
// and event handlers see each record as its Pod.
type physicalPodInformer struct{ records cache.SharedIndexInformer }

// PhysicalPods is records, the informer of PhysicalPod records, as the
// controllers read it: a pod informer whose lister, indexer, store, indexes
// and event handlers see each record as its Pod.
func PhysicalPods(records cache.SharedIndexInformer) coreinformers.PodInformer {
	return physicalPodInformer{records}
}

var _ coreinformers.PodInformer = physicalPodInformer{}

func (i physicalPodInformer) Informer() cache.SharedIndexInformer {
	return podsOfRecords{i.records}
}

func (i physicalPodInformer) Lister() corelisters.PodLister {
	return corelisters.NewPodLister(podIndexer{i.records.GetIndexer()})
}

// podsOfRecords is a shared informer of physical pod records that shows
// them as Pods. It embeds the informer, so a method a newer client-go adds
// would pass records through; physicalinformer_test.go lists every method
// of the interface as wrapped here or knowingly delegated, and fails on
// one it does not list; podIndexer is held to the same. podHandler embeds
// nothing: the compiler holds it to cache.ResourceEventHandler.
type podsOfRecords struct{ cache.SharedIndexInformer }

func (i podsOfRecords) AddEventHandler(handler cache.ResourceEventHandler) (cache.ResourceEventHandlerRegistration, error) {
	return i.SharedIndexInformer.AddEventHandler(podHandler{handler})
}

func (i podsOfRecords) AddEventHandlerWithResyncPeriod(handler cache.ResourceEventHandler, resync time.Duration) (cache.ResourceEventHandlerRegistration, error) {
	return i.SharedIndexInformer.AddEventHandlerWithResyncPeriod(podHandler{handler}, resync)
}

func (i podsOfRecords) AddEventHandlerWithOptions(handler cache.ResourceEventHandler, options cache.HandlerOptions) (cache.ResourceEventHandlerRegistration, error) {
	return i.SharedIndexInformer.AddEventHandlerWithOptions(podHandler{handler}, options)
}

func (i podsOfRecords) GetStore() cache.Store { return podIndexer{i.SharedIndexInformer.GetIndexer()} }

func (i podsOfRecords) GetIndexer() cache.Indexer {
	return podIndexer{i.SharedIndexInformer.GetIndexer()}
}

func (i podsOfRecords) AddIndexers(indexers cache.Indexers) error {
	return i.SharedIndexInformer.AddIndexers(indexesOfPods(indexers))
}

// indexesOfPods are indexers that index the Pods of records.
func indexesOfPods(indexers cache.Indexers) cache.Indexers {
	ofPods := make(cache.Indexers, len(indexers))
	for name, index := range indexers {
		ofPods[name] = func(obj any) ([]string, error) { return index(asPod(obj)) }
	}
	return ofPods
}

// podHandler hands a handler the Pods of records.
type podHandler struct{ handler cache.ResourceEventHandler }

func (h podHandler) OnAdd(obj any, isInInitialList bool) {
	h.handler.OnAdd(asPod(obj), isInInitialList)
}
func (h podHandler) OnUpdate(oldObj, newObj any) { h.handler.OnUpdate(asPod(oldObj), asPod(newObj)) }
func (h podHandler) OnDelete(obj any)            { h.handler.OnDelete(asPod(obj)) }

// podIndexer reads an indexer of records as one of Pods. Nothing but the
// informer writes to it.
type podIndexer struct{ cache.Indexer }

func (i podIndexer) Get(obj any) (any, bool, error) {
	item, exists, err := i.Indexer.Get(obj)
	return asPod(item), exists, err
}

func (i podIndexer) GetByKey(key string) (any, bool, error) {
	item, exists, err := i.Indexer.GetByKey(key)
	return asPod(item), exists, err
}

func (i podIndexer) List() []any { return podsOf(i.Indexer.List()) }

func (i podIndexer) Index(indexName string, obj any) ([]any, error) {
	items, err := i.Indexer.Index(indexName, obj)
	return podsOf(items), err
}

func (i podIndexer) ByIndex(indexName, indexedValue string) ([]any, error) {
	items, err := i.Indexer.ByIndex(indexName, indexedValue)
	return podsOf(items), err
}

func (i podIndexer) AddIndexers(indexers cache.Indexers) error {
	return i.Indexer.AddIndexers(indexesOfPods(indexers))
}

func podsOf(items []any) []any {
	for n, item := range items {
		items[n] = asPod(item)
	}
	return items
}
