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

// Package kubeletapi serves the kubelet API of a binding's virtual nodes:
// the endpoints through which the virtual apiserver reaches a node for
// kubectl logs, exec, attach, port-forward and for metrics-server's stats.
// Each virtual node has a listener of its own (its port tells nodes apart,
// which stats need); every request is authenticated and authorized
// against the virtual cluster like a kubelet in webhook mode, resolved
// through the top-down pod mapping, and served through the physical
// apiserver with the syncer's identity.
package kubeletapi
