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

// Package copier is the top-down syncer's controllers of copied objects:
// one controller per copied kind — ConfigMaps, Secrets,
// PersistentVolumeClaims and PersistentVolumes — built from one table
// (kinds.go) of what the kinds differ in. How copies are named, labelled
// and written is package dependents'.
//
// For every virtual object marked for this binding a controller keeps the
// physical copy in step with the virtual object (restoring it when someone
// deletes or edits it; past creation only a resize changes a claim's
// copy), deletes the copy and then drops the finalizer when the virtual
// object is deleted, and releases the copy once nothing of the binding
// uses the object any more:
//
//   - a ConfigMap or a PVC while a pod of the binding refers to it;
//   - a Secret while a pod refers to it (the copy in the mount namespace)
//     or a copied PV names it as its CSI node-publish Secret (the copy a
//     CSI driver reads, under the Secret's own name and namespace);
//   - a PV while the claim it is bound to is copied, so a PV goes after
//     its PVC.
//
// Copies are first made by the pod controller through package dependents.
package copier
