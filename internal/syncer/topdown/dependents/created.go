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
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"

	"github.com/kubeocean/kubeocean/pkg/controller"
)

// createdCopyMemory bounds how long a copy just created stands in for the
// physical cache, which normally shows it within milliseconds.
const createdCopyMemory = time.Minute

// The copies a Syncer created that the physical caches have not shown yet
// are expected per kind (kind.created, controller.Expectations). Pods of a burst
// share ConfigMaps and Secrets: the next pod's pass, or the copy
// controller woken by the virtual object's mark, may come before the
// copy's event, and without the memory it would create the copy again, to
// meet AlreadyExists (an HTTP 409) and a live read. A copy is forgotten at
// its first event (add, update or delete: from then on the cache speaks
// for it), when the Syncer deletes it, when the cache is seen holding it,
// and after createdCopyMemory.

// remembering gives k expectations of the copies it creates, timed by
// clock; only kinds whose copies are cached need them.
func remembering[T object](k *kind[T], clock clock.PassiveClock) *kind[T] {
	k.created = controller.NewExpectations[location, T](createdCopyMemory, clock)
	return k
}

func locationOf(obj metav1.Object) location {
	return location{namespace: obj.GetNamespace(), name: obj.GetName()}
}

// CopySeen tells the Syncer that a physical cache delivered an event of
// obj (a copy, or a tombstone of one): from then on the cache speaks for
// it. The per-kind controllers call it (ControllerOptions.Seen) in the
// handler that maps the event to its key, so it is done before the
// reconcile the event brings; tests that fill caches by hand call it for
// what they put in or take out.
func (s *Syncer) CopySeen(obj any) {
	switch o := obj.(type) {
	case cache.DeletedFinalStateUnknown:
		s.CopySeen(o.Obj)
	case *corev1.ConfigMap:
		s.configMaps.created.CreationObserved(locationOf(o))
	case *corev1.Secret:
		s.secrets.created.CreationObserved(locationOf(o))
	case *corev1.PersistentVolumeClaim:
		s.pvcs.created.CreationObserved(locationOf(o))
	case *corev1.PersistentVolume:
		s.pvs.created.CreationObserved(locationOf(o))
	}
}
