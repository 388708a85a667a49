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

// Package podidentity gives a physical pod the identity of its virtual pod.
//
// A pod in the physical cluster must still see itself as the virtual pod:
// its service-account token must be one of the virtual cluster, bound to
// the virtual pod, with the virtual cluster's CA; and the downward API must
// answer the virtual name, namespace, UID, node, labels and annotations.
// The physical kubelet can provide none of that, so each such pod gets a
// Secret of its own, the token Secret (SecretName, label
// kubeoceanv1alpha1.LabelPodToken), and the physical pod mounts these
// values from there at the same paths.
//
// PlanFor says what a pod's token Secret must hold; Secrets makes,
// renews, and deletes it, and reads it from a cache that keeps a compact
// record of it (CompactTokenSecret). The pod controller (package pod)
// calls Secrets.Ensure before it creates a physical pod and on every later
// pass, Secrets.Delete once the physical pod is gone, and Secrets.Seen
// from its token Secret event handler.
package podidentity
