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

package preflight

import (
	"fmt"
	"hash/fnv"
	"maps"
	"slices"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/tools/cache"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
)

// Memory remembers the virtual pods whose physical pod was refused, with
// the version of the pod that was refused, so that the same pod is not
// sent again: only a change of the pod or a wake-up (the mount namespace's
// labels or its quotas changed) lets it through. It lives in memory: after
// a restart each refused pod is tried once more.
type Memory struct {
	mu   sync.Mutex
	pods map[cache.ObjectName]podVersion
	// ephemeral are the refused ephemeral containers of running pods, by
	// pod, so that each is reported once. They are judged again on every
	// pass (it costs no request); this only keeps the events down.
	ephemeral map[cache.ObjectName]refusedContainers
	// portWaits are the refused pods waiting for host ports, by the
	// physical node; a port freed there sends them again.
	portWaits map[cache.ObjectName]string
}

// refusedContainers are the names of a pod's refused ephemeral
// containers; uid tells the pod from a later one of the same name.
type refusedContainers struct {
	uid   types.UID
	names sets.Set[string]
}

// podVersion is what of a virtual pod a refusal depends on: its spec
// (generation), labels and annotations, save those Kubeocean writes.
type podVersion struct {
	uid        types.UID
	generation int64
	metadata   uint64
}

func versionOf(pod *corev1.Pod) podVersion {
	h := fnv.New64a()
	write := func(m map[string]string, skipOurs bool) {
		for _, k := range slices.Sorted(maps.Keys(m)) {
			if skipOurs && strings.HasPrefix(k, kubeoceanv1alpha1.GroupName+"/") {
				continue
			}
			fmt.Fprintf(h, "%s=%s\x00", k, m[k])
		}
		h.Write([]byte{0xff})
	}
	write(pod.Labels, false)
	write(pod.Annotations, true)
	return podVersion{uid: pod.UID, generation: pod.Generation, metadata: h.Sum64()}
}

// NewMemory returns an empty memory.
func NewMemory() *Memory {
	return &Memory{pods: map[cache.ObjectName]podVersion{}, ephemeral: map[cache.ObjectName]refusedContainers{}, portWaits: map[cache.ObjectName]string{}}
}

// RememberEphemeral remembers that the pod's ephemeral container name was
// refused; false when it was already.
func (r *Memory) RememberEphemeral(key cache.ObjectName, uid types.UID, name string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	refused, ok := r.ephemeral[key]
	if !ok || refused.uid != uid {
		refused = refusedContainers{uid: uid, names: sets.New[string]()}
		r.ephemeral[key] = refused
	}
	if refused.names.Has(name) {
		return false
	}
	refused.names.Insert(name)
	return true
}

// Remember keeps pod, refused, from being sent again as it is.
func (r *Memory) Remember(key cache.ObjectName, pod *corev1.Pod) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.pods[key] = versionOf(pod)
}

// Holds tells whether this version of the pod was refused and nothing has
// changed since.
func (r *Memory) Holds(key cache.ObjectName, pod *corev1.Pod) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	refused, ok := r.pods[key]
	return ok && refused == versionOf(pod)
}

// Forget drops key: its virtual pod is gone.
func (r *Memory) Forget(key cache.ObjectName) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.pods, key)
	delete(r.ephemeral, key)
	delete(r.portWaits, key)
}

// ReleaseAll forgets every refused pod and returns them, to be tried
// again, with the pods whose ephemeral containers were refused, to be
// judged again; those stay remembered, so that a container refused again
// is not reported twice.
func (r *Memory) ReleaseAll() []cache.ObjectName {
	r.mu.Lock()
	defer r.mu.Unlock()
	keys := slices.Collect(maps.Keys(r.pods))
	clear(r.pods)
	for key := range r.ephemeral {
		if !slices.Contains(keys, key) {
			keys = append(keys, key)
		}
	}
	return keys
}

// WaitForPorts remembers that the refused pod key waits for host ports on
// node.
func (r *Memory) WaitForPorts(key cache.ObjectName, node string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.portWaits[key] = node
}

// ReleasePorts forgets the pods that wait for host ports on node, and
// their refusals, and returns them, to be sent again.
func (r *Memory) ReleasePorts(node string) []cache.ObjectName {
	r.mu.Lock()
	defer r.mu.Unlock()
	var keys []cache.ObjectName
	for key, n := range r.portWaits {
		if n == node {
			keys = append(keys, key)
			delete(r.portWaits, key)
			delete(r.pods, key)
			delete(r.ephemeral, key)
		}
	}
	return keys
}
