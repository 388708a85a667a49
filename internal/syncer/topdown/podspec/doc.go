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

// Package podspec makes the physical pod of a virtual pod and keeps it in
// step: PhysicalPod translates the virtual pod (the physical node, the
// copies' names, the identity served from the token Secret, the binding's
// network, scheduling fields dropped), and UpdatePatch carries later
// changes of the virtual pod's metadata, deadline and images by a
// three-way merge over AnnotationLastApplied. It only computes: the pod
// controller (package pod) reads the caches and writes.
package podspec
