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

package unbind

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// kindOps lists and changes one kind of object, so the sweep treats every
// kind alike.
type kindOps struct {
	kind string
	list func(ctx context.Context, selector string) ([]metav1.Object, error)
	// belongs, for physical kinds, tells this binding's objects from those
	// of another binding sharing the physical cluster.
	belongs func(obj metav1.Object) bool
	delete  func(ctx context.Context, obj metav1.Object) error
	patch   func(ctx context.Context, obj metav1.Object, data []byte) error
	// keep, for physical kinds whose deletion could take data with it,
	// runs before delete and must succeed first; it returns a volume left
	// in place, to be listed.
	keep func(ctx context.Context, obj metav1.Object) (*retainedVolume, error)
}

// objects turns a list's items into metadata accessors.
func objects[T any, PT interface {
	*T
	metav1.Object
}](items []T) []metav1.Object {
	out := make([]metav1.Object, len(items))
	for i := range items {
		out[i] = PT(&items[i])
	}
	return out
}

func uidPrecondition(obj metav1.Object) metav1.DeleteOptions {
	uid := obj.GetUID()
	return metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}}
}

func byLabel(selector string) metav1.ListOptions { return metav1.ListOptions{LabelSelector: selector} }

// physicalKinds: the copies the top-down side makes. Namespaced copies live
// in the mount namespace; everything the binding made carries its identity
// (the listing selects on it, belongs checks it again), so another binding's
// copies in the same namespace, or PVs whose claims live there, are never
// swept. Deleting a claim or a PV never deletes a volume's data unless
// deleteVolumes (the operator's request) lets provisioned volumes go.
func (c *Controller) physicalKinds(deleteVolumes bool) []kindOps {
	core, ns := c.opts.PhysicalKube.CoreV1(), c.opts.MountNamespace
	inMount := func(obj metav1.Object) bool { return obj.GetNamespace() == ns && c.owner.Owns(obj) }
	return append(c.networkKinds(inMount), []kindOps{
		{kind: "ConfigMap", belongs: inMount,
			list: func(ctx context.Context, s string) ([]metav1.Object, error) {
				l, err := core.ConfigMaps(ns).List(ctx, byLabel(s))
				if err != nil {
					return nil, err
				}
				return objects(l.Items), nil
			},
			delete: func(ctx context.Context, o metav1.Object) error {
				return core.ConfigMaps(ns).Delete(ctx, o.GetName(), uidPrecondition(o))
			}},
		{kind: "Secret", belongs: inMount,
			list: func(ctx context.Context, s string) ([]metav1.Object, error) {
				l, err := core.Secrets(ns).List(ctx, byLabel(s))
				if err != nil {
					return nil, err
				}
				return objects(l.Items), nil
			},
			delete: func(ctx context.Context, o metav1.Object) error {
				return core.Secrets(ns).Delete(ctx, o.GetName(), uidPrecondition(o))
			}},
		{kind: "PersistentVolumeClaim", belongs: inMount,
			list: func(ctx context.Context, s string) ([]metav1.Object, error) {
				l, err := core.PersistentVolumeClaims(ns).List(ctx, byLabel(s))
				if err != nil {
					return nil, err
				}
				return objects(l.Items), nil
			},
			delete: func(ctx context.Context, o metav1.Object) error {
				return core.PersistentVolumeClaims(ns).Delete(ctx, o.GetName(), uidPrecondition(o))
			},
			keep: func(ctx context.Context, o metav1.Object) (*retainedVolume, error) {
				return c.keepClaimData(ctx, o, deleteVolumes)
			}},
		{kind: "PersistentVolume",
			belongs: func(o metav1.Object) bool {
				pv, ok := o.(*corev1.PersistentVolume)
				return ok && c.owner.Owns(pv) && pv.Spec.ClaimRef != nil && pv.Spec.ClaimRef.Namespace == ns
			},
			list: func(ctx context.Context, s string) ([]metav1.Object, error) {
				l, err := core.PersistentVolumes().List(ctx, byLabel(s))
				if err != nil {
					return nil, err
				}
				return objects(l.Items), nil
			},
			delete: func(ctx context.Context, o metav1.Object) error {
				return core.PersistentVolumes().Delete(ctx, o.GetName(), uidPrecondition(o))
			},
			keep: func(ctx context.Context, o metav1.Object) (*retainedVolume, error) {
				return nil, c.keepCopyData(ctx, o)
			}},
	}...)
}

// virtualKinds: the objects the top-down side marks when it copies them.
func (c *Controller) virtualKinds() []kindOps {
	core := c.opts.VirtualKube.CoreV1()
	return []kindOps{
		{kind: "ConfigMap",
			list: func(ctx context.Context, s string) ([]metav1.Object, error) {
				l, err := core.ConfigMaps("").List(ctx, byLabel(s))
				if err != nil {
					return nil, err
				}
				return objects(l.Items), nil
			},
			patch: func(ctx context.Context, o metav1.Object, data []byte) error {
				_, err := core.ConfigMaps(o.GetNamespace()).Patch(ctx, o.GetName(), types.MergePatchType, data, metav1.PatchOptions{})
				return err
			}},
		{kind: "Secret",
			list: func(ctx context.Context, s string) ([]metav1.Object, error) {
				l, err := core.Secrets("").List(ctx, byLabel(s))
				if err != nil {
					return nil, err
				}
				return objects(l.Items), nil
			},
			patch: func(ctx context.Context, o metav1.Object, data []byte) error {
				_, err := core.Secrets(o.GetNamespace()).Patch(ctx, o.GetName(), types.MergePatchType, data, metav1.PatchOptions{})
				return err
			}},
		{kind: "PersistentVolumeClaim",
			list: func(ctx context.Context, s string) ([]metav1.Object, error) {
				l, err := core.PersistentVolumeClaims("").List(ctx, byLabel(s))
				if err != nil {
					return nil, err
				}
				return objects(l.Items), nil
			},
			patch: func(ctx context.Context, o metav1.Object, data []byte) error {
				_, err := core.PersistentVolumeClaims(o.GetNamespace()).Patch(ctx, o.GetName(), types.MergePatchType, data, metav1.PatchOptions{})
				return err
			}},
		{kind: "PersistentVolume",
			list: func(ctx context.Context, s string) ([]metav1.Object, error) {
				l, err := core.PersistentVolumes().List(ctx, byLabel(s))
				if err != nil {
					return nil, err
				}
				return objects(l.Items), nil
			},
			patch: func(ctx context.Context, o metav1.Object, data []byte) error {
				_, err := core.PersistentVolumes().Patch(ctx, o.GetName(), types.MergePatchType, data, metav1.PatchOptions{})
				return err
			}},
	}
}
