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
	"k8s.io/client-go/tools/cache"

	"github.com/kubeocean/kubeocean/internal/compact"
	"github.com/kubeocean/kubeocean/pkg/controller"
)

// usageHandler keeps the per-node sums of the foreign pods in step with the
// informer's store, then passes the event on. It sees every event, in the
// store's order and tombstones included, before the keys it enqueues are
// reconciled, so a reconcile reads sums at least as new as the event that
// queued it.
type usageHandler struct {
	sums *compact.UsageByNode
	next cache.ResourceEventHandler
}

func (h usageHandler) OnAdd(obj any, initial bool) {
	if u, ok := controller.Unwrap[*compact.PodUsage](obj); ok {
		h.sums.Update(nil, u)
	}
	h.next.OnAdd(obj, initial)
}

func (h usageHandler) OnUpdate(oldObj, newObj any) {
	old, okOld := controller.Unwrap[*compact.PodUsage](oldObj)
	updated, okNew := controller.Unwrap[*compact.PodUsage](newObj)
	if okOld && okNew {
		h.sums.Update(old, updated)
	}
	h.next.OnUpdate(oldObj, newObj)
}

func (h usageHandler) OnDelete(obj any) {
	if u, ok := controller.Unwrap[*compact.PodUsage](obj); ok {
		h.sums.Update(u, nil)
	}
	h.next.OnDelete(obj)
}
