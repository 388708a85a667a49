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

package node

import (
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// DefaultStatusUpdateInterval is the shortest time between two status
// writes of one virtual node, unless configured otherwise.
const DefaultStatusUpdateInterval = time.Second

// writes remembers, per virtual node, what the controller last wrote, so
// that:
//
//   - the next write is made against the resourceVersion the API server
//     returned, not the older one an informer that has not caught up yet
//     still holds (which would be refused with 409 Conflict);
//   - a node just created is not created again before the informer has it
//     (which would be refused with 409 AlreadyExists);
//   - status writes of one node are at least an interval apart: foreign pods
//     that come and go by the hundred per second change the capacity of a
//     node many times a second, and each change needs no write of its own.
//     A write put off is made at the end of the interval with the figures of
//     that moment, so the node is never more than one interval behind,
//     whether capacity grows or shrinks.
//
// Entries are dropped once the informer shows the written object, or shows
// another writer's, and when the node is removed; so it holds at most one
// node object per virtual node, and usually none.
type writes struct {
	interval time.Duration

	mu sync.Mutex
	// written is the object returned by the last write of each node, with
	// the resourceVersions it supersedes ("" for none: a create).
	written map[string]writtenNode
	// lastStatus is when each node's status was last written.
	lastStatus map[string]time.Time
}

type writtenNode struct {
	node       *corev1.Node
	supersedes map[string]bool
}

func newWrites(interval time.Duration) *writes {
	return &writes{interval: interval, written: map[string]writtenNode{}, lastStatus: map[string]time.Time{}}
}

// latest returns the freshest known state of the node: listed (nil when the
// informer has no such node) unless that is older than what the controller
// wrote itself.
func (w *writes) latest(name string, listed *corev1.Node) *corev1.Node {
	w.mu.Lock()
	defer w.mu.Unlock()
	entry, ok := w.written[name]
	if !ok {
		return listed
	}
	listedVersion := ""
	if listed != nil {
		listedVersion = listed.ResourceVersion
	}
	if entry.supersedes[listedVersion] {
		return entry.node // the informer is behind our own write
	}
	// The informer shows our write, or something newer from another
	// writer: it is the freshest from now on.
	delete(w.written, name)
	return listed
}

// wrote records the object the API server returned for a write made
// against basedOn ("" for a create).
func (w *writes) wrote(name, basedOn string, node *corev1.Node) {
	w.mu.Lock()
	defer w.mu.Unlock()
	supersedes := map[string]bool{basedOn: true}
	// A chain of writes before the informer catches up (metadata, then
	// status): the informer may still show any of the earlier versions.
	if prev, ok := w.written[name]; ok && prev.node.ResourceVersion == basedOn {
		for v := range prev.supersedes {
			supersedes[v] = true
		}
	}
	w.written[name] = writtenNode{node: node, supersedes: supersedes}
}

// statusWait returns how long the node's next status write must wait: 0
// when it may be made now.
func (w *writes) statusWait(name string, now time.Time) time.Duration {
	w.mu.Lock()
	defer w.mu.Unlock()
	last, ok := w.lastStatus[name]
	if !ok {
		return 0
	}
	if wait := last.Add(w.interval).Sub(now); wait > 0 {
		return wait
	}
	return 0
}

// wroteStatus records a status write of the node at now.
func (w *writes) wroteStatus(name string, now time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.lastStatus[name] = now
}

// forget drops all that is known of the node: it is gone, or a write
// failed in a way that makes the remembered state doubtful.
func (w *writes) forget(name string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.written, name)
	delete(w.lastStatus, name)
}

// forgetWritten drops the remembered object but keeps the pacing: after a
// conflict the informer's copy is the one to trust.
func (w *writes) forgetWritten(name string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.written, name)
}
