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

package ownership

import (
	"context"
	"fmt"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
	kubeoceanclient "github.com/kubeocean/kubeocean/generated/clientset/versioned/typed/kubeocean/v1alpha1"
)

// BindingLive tells whether a ClusterBinding with uid exists in the virtual
// cluster (deleting or not).
type BindingLive func(ctx context.Context, uid types.UID) (bool, error)

// Predecessors proves earlier bindings of the same virtual cluster under
// the same cluster ID: a binding recreated (new UID) after its
// predecessor went without its unbinding sweep, or a restored virtual
// cluster, finds the predecessor's physical objects at the names it needs.
//
// A cluster ID label alone proves nothing: another virtual cluster may
// bind the same physical cluster under the same cluster ID. What proves a
// predecessor is a physical pod made for a virtual pod that exists in
// this virtual cluster now, by its UID (UIDs are unique; only a syncer of
// this virtual cluster saw that pod; the tenant cannot choose a pod's
// UID), under a binding UID that no ClusterBinding here has any more: a
// binding still deleting runs its own sweep and keeps its objects. Once
// proven, a predecessor's objects are adopted (their identity restamped)
// like those of older versions without identity, copies included.
//
// A nil *Predecessors proves nothing.
type Predecessors struct {
	owner Owner
	live  BindingLive

	mu sync.Mutex
	// proven holds predecessor UIDs. UIDs never come back, so a proof
	// holds for the life of the process.
	proven map[types.UID]struct{}
}

// NewPredecessors proves owner's predecessors, asking live whether a
// binding still exists.
func NewPredecessors(owner Owner, live BindingLive) *Predecessors {
	return &Predecessors{owner: owner, live: live, proven: map[types.UID]struct{}{}}
}

// Sibling returns the binding UID of obj when it is another binding's
// object under owner's cluster ID: managed by Kubeocean, with a binding
// UID that is not owner's.
func (o Owner) Sibling(obj metav1.Object) (types.UID, bool) {
	labels := obj.GetLabels()
	uid := types.UID(labels[kubeoceanv1alpha1.LabelBindingUID])
	if o.ClusterID == "" || uid == "" || uid == o.BindingUID ||
		labels[kubeoceanv1alpha1.LabelManagedBy] != kubeoceanv1alpha1.ManagedByKubeocean ||
		labels[kubeoceanv1alpha1.LabelClusterID] != o.ClusterID {
		return "", false
	}
	return uid, true
}

// ProveByTwin tells whether physical, a physical pod the caller found
// recording the UID of a virtual pod that exists now (the caller checks
// that), was made by a predecessor, and remembers the predecessor then.
// An error says liveness could not be read; nothing is proven.
func (p *Predecessors) ProveByTwin(ctx context.Context, physical metav1.Object) (bool, error) {
	if p == nil {
		return false, nil
	}
	uid, ok := p.owner.Sibling(physical)
	if !ok {
		return false, nil
	}
	if p.known(uid) {
		return true, nil
	}
	live, err := p.live(ctx, uid)
	if err != nil {
		return false, fmt.Errorf("reading whether binding %s still exists: %w", uid, err)
	}
	if live {
		return false, nil
	}
	p.mu.Lock()
	p.proven[uid] = struct{}{}
	p.mu.Unlock()
	return true, nil
}

// Proven tells whether obj carries owner's cluster ID and the UID of a
// proven predecessor.
func (p *Predecessors) Proven(obj metav1.Object) bool {
	if p == nil {
		return false
	}
	uid, ok := p.owner.Sibling(obj)
	return ok && p.known(uid)
}

func (p *Predecessors) known(uid types.UID) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	_, ok := p.proven[uid]
	return ok
}

// BindingsLive reads whether a binding exists from the virtual cluster's
// ClusterBindings, live: a predecessor is looked up once per UID found on
// a physical pod, and a cache scoped to one binding's name would not show
// a binding of another name still deleting.
func BindingsLive(bindings kubeoceanclient.ClusterBindingInterface) BindingLive {
	return func(ctx context.Context, uid types.UID) (bool, error) {
		list, err := bindings.List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		for i := range list.Items {
			if list.Items[i].UID == uid {
				return true, nil
			}
		}
		return false, nil
	}
}
