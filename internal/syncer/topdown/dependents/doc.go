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

// Package dependents copies the objects a virtual pod depends on —
// ConfigMaps, Secrets, PersistentVolumeClaims and their PersistentVolumes —
// into the physical cluster, keeps the copies in step and removes them.
// The virtual pod controller calls Ensure* before it creates a physical
// pod; the per-kind controllers (package copier) call it again
// on every change and call Release* when an object is deleted or no pod of
// the binding uses it any more.
//
// Mapping: a copy of namespace/name lives in the binding's
// mount namespace as kubeoceanv1alpha1.PhysicalName(namespace, name), labelled like
// the virtual object plus kubeocean.io/managed-by=kubeocean and annotated
// with kubeocean.io/virtual-name and -namespace. The labels are kept in
// step by a three-way merge (AnnotationLastApplied records what we wrote),
// so labels and annotations other controllers add to a copy stay and no
// two writers take turns. PVs are cluster-scoped and
// named PhysicalPVName(name). A CSI node-publish Secret keeps its name and
// namespace, since the PV names it there. The virtual object is marked
// first — label kubeocean.io/synced-by-<clusterID>, managed-by, the
// physical-name/-namespace annotations and the finalizer
// kubeocean.io/finalizer-<clusterID> — and only then is the copy created,
// so a crash never leaves a copy nothing will clean up.
//
// A claim bound to a volume the binding provisioned (package provision) is
// the exception: it is neither marked nor copied, and EnsurePVC names its
// holder claim, which already holds the physical volume in the mount
// namespace, so that the physical cluster has one PV per volume.
//
// Ownership: every copy carries the binding's identity (labels
// kubeocean.io/cluster-id and kubeocean.io/binding-uid, package ownership).
// A physical object at the mapped name is ours when it carries that
// identity and its virtual-name/-namespace annotations name the virtual
// object. One that names the object but carries no binding identity (made
// by an older version, or stripped of its labels) is adopted when the
// object is copied (identity, labels and content put right), never
// deleted otherwise. Any other object there, another binding's included,
// is never overwritten: the call fails with a ConflictError and a Warning
// event on the virtual object.
package dependents
