package syncer

import (
	"sync/atomic"
	"time"
	"weak"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	coreinformers "k8s.io/client-go/informers/core/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
)

// physicalPod is what the cache of the binding's physical pods keeps of
// each: metadata and status whole, and of the spec what the controllers
// read (physicalPodSpec). A *corev1.Pod takes 1.2 KB before anything it
// points to, half of it a spec the physical pod cache left empty; this
// takes 0.7 KB.
//
// The controllers read these pods as *corev1.Pod, through
// physicalPodInformer, which hands out the Pod of a record (Pod).
type physicalPod struct {
	metav1.ObjectMeta
	Spec   physicalPodSpec
	Status corev1.PodStatus
	// pod is the Pod last made of the record, as long as someone holds
	// it: the event handlers of one change, and the reads soon after it,
	// share one.
	pod atomic.Pointer[weak.Pointer[corev1.Pod]]
}

// physicalPodSpec is what slimPhysicalPod keeps of a physical pod's spec.
type physicalPodSpec struct {
	NodeName              string
	ActiveDeadlineSeconds *int64
	// Of each container, only the name and the image.
	InitContainers, Containers []corev1.Container
	EphemeralContainers        []corev1.EphemeralContainer
}

var _ runtime.Object = &physicalPod{}

// recordPhysicalPod is the record of pod, which slimPhysicalPod has
// slimmed; it shares what it points to with pod.
func recordPhysicalPod(pod *corev1.Pod) *physicalPod {
	return &physicalPod{
		ObjectMeta: pod.ObjectMeta,
		Spec: physicalPodSpec{
			NodeName:              pod.Spec.NodeName,
			ActiveDeadlineSeconds: pod.Spec.ActiveDeadlineSeconds,
			InitContainers:        pod.Spec.InitContainers,
			Containers:            pod.Spec.Containers,
			EphemeralContainers:   pod.Spec.EphemeralContainers,
		},
		Status: pod.Status,
	}
}

// Pod is the physical pod the record keeps: what it points to is the
// cache's, read only, as with any cached object.
func (p *physicalPod) Pod() *corev1.Pod {
	if last := p.pod.Load(); last != nil {
		if pod := last.Value(); pod != nil {
			return pod
		}
	}
	pod := &corev1.Pod{
		ObjectMeta: p.ObjectMeta,
		Spec: corev1.PodSpec{
			NodeName:              p.Spec.NodeName,
			ActiveDeadlineSeconds: p.Spec.ActiveDeadlineSeconds,
			InitContainers:        p.Spec.InitContainers,
			Containers:            p.Spec.Containers,
			EphemeralContainers:   p.Spec.EphemeralContainers,
		},
		Status: p.Status,
	}
	made := weak.Make(pod)
	p.pod.Store(&made)
	return pod
}

// GetObjectKind implements runtime.Object; a record is only ever cached,
// never sent.
func (p *physicalPod) GetObjectKind() schema.ObjectKind { return schema.EmptyObjectKind }

// DeepCopyObject implements runtime.Object.
func (p *physicalPod) DeepCopyObject() runtime.Object { return recordPhysicalPod(p.Pod().DeepCopy()) }

// asPod is obj as a *corev1.Pod when it is a record; anything else (a Pod
// of an informer without the record, a tombstone's key) stays as it is.
func asPod(obj any) any {
	switch o := obj.(type) {
	case *physicalPod:
		return o.Pod()
	case cache.DeletedFinalStateUnknown:
		o.Obj = asPod(o.Obj)
		return o
	}
	return obj
}

// physicalPodStatus is the status of a cached physical pod, record or Pod;
// nil for anything else.
func physicalPodStatus(obj any) *corev1.PodStatus {
	switch o := obj.(type) {
	case *physicalPod:
		return &o.Status
	case *corev1.Pod:
		return &o.Status
	}
	return nil
}

// physicalPodsOn lists the cached physical pods (records or Pods) on a
// physical node, as they are cached: for the kubelet API's node stats,
// which read their metadata only.
func physicalPodsOn(store cache.Store) func(physicalNode string) []metav1.Object {
	return func(physicalNode string) []metav1.Object {
		var on []metav1.Object
		for _, obj := range store.List() {
			switch o := obj.(type) {
			case *physicalPod:
				if o.Spec.NodeName == physicalNode {
					on = append(on, o)
				}
			case *corev1.Pod:
				if o.Spec.NodeName == physicalNode {
					on = append(on, o)
				}
			}
		}
		return on
	}
}

// physicalPodInformer is the pod informer of the binding's physical pods
// (boundScope) as the controllers read it: its lister, indexer and event
// handlers see each record as its Pod.
type physicalPodInformer struct{ records cache.SharedIndexInformer }

var _ coreinformers.PodInformer = physicalPodInformer{}

func (i physicalPodInformer) Informer() cache.SharedIndexInformer {
	return podsOfRecords{i.records}
}

func (i physicalPodInformer) Lister() corelisters.PodLister {
	return corelisters.NewPodLister(podIndexer{i.records.GetIndexer()})
}

// podsOfRecords is a shared informer of physical pod records that shows
// them as Pods.
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

func (i podIndexer) List() []any { return pods(i.Indexer.List()) }

func (i podIndexer) Index(indexName string, obj any) ([]any, error) {
	items, err := i.Indexer.Index(indexName, obj)
	return pods(items), err
}

func (i podIndexer) ByIndex(indexName, indexedValue string) ([]any, error) {
	items, err := i.Indexer.ByIndex(indexName, indexedValue)
	return pods(items), err
}

func (i podIndexer) AddIndexers(indexers cache.Indexers) error {
	return i.Indexer.AddIndexers(indexesOfPods(indexers))
}

func pods(items []any) []any {
	for n, item := range items {
		items[n] = asPod(item)
	}
	return items
}
