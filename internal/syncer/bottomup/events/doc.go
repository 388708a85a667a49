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

// Package events is the bottom-up syncer's event controller: what happens
// to the binding's pods and lent nodes in the physical cluster (the
// kubelet's Pulling, Failed, BackOff, Unhealthy; a node's NodeNotReady)
// is recorded on their virtual pods and nodes, where `kubectl describe`
// shows it, with the physical names rewritten to the virtual ones and the
// virtual apiserver's writes bounded by token buckets (docs/events.md).
package events
