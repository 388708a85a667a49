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

package dependents

import (
	"fmt"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	corev1informers "k8s.io/client-go/informers/core/v1"
	corev1listers "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
	"github.com/kubeocean/kubeocean/internal/ownership"
	"github.com/kubeocean/kubeocean/internal/syncer/topdown/references"
	"github.com/kubeocean/kubeocean/pkg/controller"
)

// PodReferences tells whether pods of one binding still use an object, from
// the virtual pod informer's references index.
type PodReferences struct {
	owner          ownership.Owner
	mountNamespace string
	pods           cache.Indexer
	nodes          corev1listers.NodeLister
	physicalPods   corev1listers.PodLister
	hasSynced      []cache.InformerSynced

	// witnesses remembers, per index key, the key of a pod that counted
	// at the last look, so InUse rechecks one pod rather than listing
	// every pod that shares the object: in a burst of pods that all
	// mount one ConfigMap, each pass would list them all. It is only a
	// hint; the pod is read from the cache and checked again each time.
	mu        sync.Mutex
	witnesses map[string]string
}

// NewPodReferences reads pods from pods (every virtual pod the binding may
// run; the references index is added unless the informer has it) and tells
// the binding's pods by nodes (the binding's virtual nodes: label
// kubeocean.io/cluster-id=<clusterID>) and, for a pod whose node is gone,
// by physicalPods (the binding's physical pods; nil: such pods never count).
func NewPodReferences(owner ownership.Owner, mountNamespace string, pods corev1informers.PodInformer, nodes corev1informers.NodeInformer, physicalPods corev1informers.PodInformer) (*PodReferences, error) {
	if err := AddIndex(pods.Informer(), references.IndexName, references.IndexKeys); err != nil {
		return nil, err
	}
	r := &PodReferences{
		owner: owner, mountNamespace: mountNamespace,
		pods: pods.Informer().GetIndexer(), nodes: nodes.Lister(),
		hasSynced: []cache.InformerSynced{pods.Informer().HasSynced, nodes.Informer().HasSynced},
		witnesses: map[string]string{},
	}
	if physicalPods != nil {
		r.physicalPods = physicalPods.Lister()
		r.hasSynced = append(r.hasSynced, physicalPods.Informer().HasSynced)
	}
	return r, nil
}

// AddIndex adds an index to an informer that does not have one of that
// name yet; several controllers may share one informer and ask for the
// same index. Call it before the informer starts.
func AddIndex(informer cache.SharedIndexInformer, name string, keys cache.IndexFunc) error {
	if _, ok := informer.GetIndexer().GetIndexers()[name]; ok {
		return nil
	}
	if err := informer.AddIndexers(cache.Indexers{name: keys}); err != nil {
		return fmt.Errorf("adding index %s: %w", name, err)
	}
	return nil
}

// HasSynced are the informers InUse reads.
func (r *PodReferences) HasSynced() []cache.InformerSynced { return r.hasSynced }

// InUse tells whether a pod of the binding that counts (see Counts) refers
// to the object of kind (a references.Kind*) namespace/name. The pod that
// answered yes last time is asked first, so while an object is in use the
// answer costs one cache read, not a list of its users.
func (r *PodReferences) InUse(kind, namespace, name string) (bool, error) {
	indexKey := references.IndexKey(kind, namespace, name)
	if r.witnessed(indexKey) {
		return true, nil
	}
	objs, err := r.pods.ByIndex(references.IndexName, indexKey)
	if err != nil {
		return false, err
	}
	for _, obj := range objs {
		if pod, ok := obj.(*corev1.Pod); ok && r.Counts(pod) {
			r.setWitness(indexKey, pod.Namespace+"/"+pod.Name)
			return true, nil
		}
	}
	r.setWitness(indexKey, "")
	return false, nil
}

// witnessed tells whether the pod remembered for indexKey still refers to
// the object and still counts.
func (r *PodReferences) witnessed(indexKey string) bool {
	r.mu.Lock()
	podKey, ok := r.witnesses[indexKey]
	r.mu.Unlock()
	if !ok {
		return false
	}
	obj, exists, err := r.pods.GetByKey(podKey)
	if err != nil || !exists {
		return false
	}
	pod, ok := obj.(*corev1.Pod)
	if !ok || !r.Counts(pod) {
		return false
	}
	keys, err := references.IndexKeys(pod)
	return err == nil && slices.Contains(keys, indexKey)
}

// setWitness remembers podKey for indexKey; "" forgets it.
func (r *PodReferences) setWitness(indexKey, podKey string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if podKey == "" {
		delete(r.witnesses, indexKey)
		return
	}
	r.witnesses[indexKey] = podKey
}

// Counts tells whether pod keeps the copies of what it refers to: it is a
// pod of this binding, and it is not finished or its physical twin still
// exists, whose volumes must not go while it may still run or be
// inspected. A finished pod whose twin is gone (the pod controller deletes
// the twin once the final status is copied) keeps nothing: a Job's
// finished pods stay in the virtual cluster, their copies do not. A pod
// being deleted counts until it is gone.
//
// A pod is this binding's when it is bound to one of the binding's virtual
// nodes, or, once that node is gone, when the binding's own physical pod
// was made for it. Mapping annotations alone prove nothing: every binding
// with the same mount namespace writes the same ones, and counting pods of
// another binding by them kept our copies forever.
func (r *PodReferences) Counts(pod *corev1.Pod) bool {
	if !isFinished(pod) && r.onOurNode(pod) {
		return true
	}
	name, ours := r.twinName(pod)
	return ours && r.hasOurTwin(pod, name)
}

// twinName is the name of pod's physical pod in the mount namespace: the
// one its mapping names, or, before the mapping is recorded, the one the
// name rule gives. ours is false when the mapping names another place.
func (r *PodReferences) twinName(pod *corev1.Pod) (name string, ours bool) {
	namespace := pod.Annotations[kubeoceanv1alpha1.AnnotationPhysicalPodNamespace]
	name = pod.Annotations[kubeoceanv1alpha1.AnnotationPhysicalPodName]
	if namespace == "" && name == "" {
		return kubeoceanv1alpha1.PhysicalName(pod.Namespace, pod.Name), true
	}
	return name, name != "" && namespace == r.mountNamespace
}

func (r *PodReferences) onOurNode(pod *corev1.Pod) bool {
	if pod.Spec.NodeName == "" {
		return false
	}
	node, err := r.nodes.Get(pod.Spec.NodeName)
	return err == nil && node.Labels[kubeoceanv1alpha1.LabelClusterID] == r.owner.ClusterID
}

// hasOurTwin tells whether the physical pod name is the binding's and was
// made for pod.
func (r *PodReferences) hasOurTwin(pod *corev1.Pod, name string) bool {
	if r.physicalPods == nil {
		return false
	}
	physical, err := r.physicalPods.Pods(r.mountNamespace).Get(name)
	return err == nil && r.owner.Owns(physical) &&
		physical.Annotations[kubeoceanv1alpha1.AnnotationVirtualPodUID] == string(pod.UID)
}

// PodHandler enqueues the objects of kind (a references.Kind*) that a pod
// refers to, when the pod comes, goes, or changes in a way that may change
// whether it counts.
func PodHandler(kind string, enqueue func(cache.ObjectName)) controller.Handler[*corev1.Pod, cache.ObjectName] {
	return controller.Handler[*corev1.Pod, cache.ObjectName]{
		Enqueue: enqueue,
		Keys:    func(pod *corev1.Pod) []cache.ObjectName { return referencedKeys(kind, pod) },
		Changed: podChanged,
	}
}

// PhysicalPodGoneHandler enqueues the objects of kind (a references.Kind*)
// that a finished virtual pod refers to when its physical twin is deleted:
// a finished pod keeps its copies only while the twin exists (see Counts),
// and nothing changes on the virtual pod when the twin goes. Register it on
// the binding's physical pod informer; adds and updates are ignored.
func (r *PodReferences) PhysicalPodGoneHandler(kind string, enqueue func(cache.ObjectName)) cache.ResourceEventHandler {
	return onDeleteOnly{controller.Handler[*corev1.Pod, cache.ObjectName]{
		Enqueue: enqueue,
		Keys: func(physical *corev1.Pod) []cache.ObjectName {
			namespace := physical.Annotations[kubeoceanv1alpha1.AnnotationVirtualPodNamespace]
			name := physical.Annotations[kubeoceanv1alpha1.AnnotationVirtualPodName]
			obj, exists, err := r.pods.GetByKey(namespace + "/" + name)
			if err != nil || !exists {
				return nil
			}
			pod, ok := obj.(*corev1.Pod)
			if !ok || string(pod.UID) != physical.Annotations[kubeoceanv1alpha1.AnnotationVirtualPodUID] || !isFinished(pod) {
				return nil
			}
			return referencedKeys(kind, pod)
		},
	}}
}

// onDeleteOnly passes on deletions only.
type onDeleteOnly struct {
	controller.Handler[*corev1.Pod, cache.ObjectName]
}

func (onDeleteOnly) OnAdd(any, bool)   {}
func (onDeleteOnly) OnUpdate(any, any) {}

func isFinished(pod *corev1.Pod) bool {
	return pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed
}

func referencedKeys(kind string, pod *corev1.Pod) []cache.ObjectName {
	refs := references.Copied(pod)
	var names []string
	switch kind {
	case references.KindConfigMap:
		names = refs.ConfigMaps
	case references.KindSecret:
		names = refs.Secrets
	case references.KindPVC:
		names = refs.PVCs
	}
	keys := make([]cache.ObjectName, 0, len(names))
	for _, name := range names {
		keys = append(keys, cache.ObjectName{Namespace: pod.Namespace, Name: name})
	}
	return keys
}

// podChanged drops the many pod updates (status, mostly) that cannot
// change what a pod refers to or whether it counts.
func podChanged(oldPod, newPod *corev1.Pod) bool {
	mapping := func(p *corev1.Pod) [2]string {
		return [2]string{p.Annotations[kubeoceanv1alpha1.AnnotationPhysicalPodNamespace], p.Annotations[kubeoceanv1alpha1.AnnotationPhysicalPodName]}
	}
	return oldPod.Spec.NodeName != newPod.Spec.NodeName || isFinished(oldPod) != isFinished(newPod) ||
		mapping(oldPod) != mapping(newPod) ||
		len(oldPod.Spec.EphemeralContainers) != len(newPod.Spec.EphemeralContainers)
}

// CSISecretIndexName is the name of the virtual PV informer index that
// CSISecretIndexKeys feeds.
const CSISecretIndexName = "kubeocean.io/csi-node-publish-secret"

// CSISecretIndexKeys indexes PVs by the namespace/name of their CSI
// node-publish Secret, so the Secret controller can ask which PVs use a
// Secret.
func CSISecretIndexKeys(obj any) ([]string, error) {
	pv, ok := obj.(*corev1.PersistentVolume)
	if !ok {
		return nil, nil
	}
	if secret, ok := CSISecretOf(pv); ok {
		return []string{secret.String()}, nil
	}
	return nil, nil
}

// DefaultGracePeriod is how long an object stays copied after the last pod
// using it went: a rolling update replaces pods within it without deleting
// and recreating the copies, and no pod cache lag can make a copy go under
// a pod that is just being started.
const DefaultGracePeriod = 30 * time.Second

// UnusedTracker remembers since when objects have been unused, so a copy is
// collected only after a grace period. It lives in memory: after a restart
// the grace period starts again, which only delays collection.
type UnusedTracker struct {
	clock clock.PassiveClock
	grace time.Duration

	mu    sync.Mutex
	since map[cache.ObjectName]time.Time
}

// NewUnusedTracker returns a tracker with the given grace period; a nil
// clock is the real one and a zero grace DefaultGracePeriod.
func NewUnusedTracker(passive clock.PassiveClock, grace time.Duration) *UnusedTracker {
	if passive == nil {
		passive = clock.RealClock{}
	}
	if grace == 0 {
		grace = DefaultGracePeriod
	}
	return &UnusedTracker{clock: passive, grace: grace, since: map[cache.ObjectName]time.Time{}}
}

// Unused records that key has no user and returns how much longer to wait
// before collecting it; 0 means now.
func (t *UnusedTracker) Unused(key cache.ObjectName) time.Duration {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := t.clock.Now()
	since, ok := t.since[key]
	if !ok {
		since = now
		t.since[key] = now
	}
	return max(0, since.Add(t.grace).Sub(now))
}

// Forget drops what is known about key: it is used again, gone or
// collected.
func (t *UnusedTracker) Forget(key cache.ObjectName) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.since, key)
}
