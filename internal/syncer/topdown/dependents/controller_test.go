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

package dependents_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
	"github.com/kubeocean/kubeocean/internal/syncer/topdown/dependents"
)

// recordingInformer keeps the handlers registered on it, for a test to
// deliver events by hand.
type recordingInformer struct {
	cache.SharedIndexInformer
	handlers []cache.ResourceEventHandler
}

func (r *recordingInformer) AddEventHandler(h cache.ResourceEventHandler) (cache.ResourceEventHandlerRegistration, error) {
	r.handlers = append(r.handlers, h)
	return registered{}, nil
}

type registered struct {
	cache.ResourceEventHandlerRegistration
}

func (registered) HasSynced() bool { return true }

// Every event of a copy reaches Seen before its key is queued, so the
// reconcile it brings no longer takes a copy the Syncer just created for
// the cache (Syncer.CopySeen): a copy deleted right after its creation is
// made again, not taken for present.
func TestCopyEventsReachSeenBeforeTheirKey(t *testing.T) {
	copyAt := func(version string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "mount", Name: "conf-x", ResourceVersion: version,
			Annotations: map[string]string{kubeoceanv1alpha1.AnnotationVirtualNamespace: "app", kubeoceanv1alpha1.AnnotationVirtualName: "conf"}}}
	}
	for name, deliver := range map[string]func(cache.ResourceEventHandler){
		"add":    func(h cache.ResourceEventHandler) { h.OnAdd(copyAt("1"), false) },
		"update": func(h cache.ResourceEventHandler) { h.OnUpdate(copyAt("1"), copyAt("2")) },
		"delete": func(h cache.ResourceEventHandler) {
			h.OnDelete(cache.DeletedFinalStateUnknown{Key: "mount/conf-x", Obj: copyAt("3")})
		},
	} {
		t.Run(name, func(t *testing.T) {
			physical := &recordingInformer{}
			var c *dependents.Controller[*corev1.ConfigMap]
			seen := 0
			c, err := dependents.NewController(dependents.ControllerOptions[*corev1.ConfigMap]{
				Name:      "test",
				Lifecycle: &dependents.Lifecycle{Kind: dependents.KindConfigMap},
				Get:       func(cache.ObjectName) (*corev1.ConfigMap, error) { return nil, nil },
				Virtual:   &recordingInformer{}, Physical: physical, Namespaced: true,
				Seen: func(any) {
					if c.Len() != 0 {
						t.Error("the key was queued before Seen was told of its event")
					}
					seen++
				},
			})
			if err != nil {
				t.Fatal(err)
			}
			if len(physical.handlers) != 1 {
				t.Fatalf("%d handlers on the copies, want 1", len(physical.handlers))
			}
			deliver(physical.handlers[0])
			if seen == 0 || c.Len() != 1 {
				t.Errorf("Seen told %d times, %d keys queued; want at least once, and 1", seen, c.Len())
			}
		})
	}
}
