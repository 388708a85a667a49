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

// Package clusterhealth tells whether an apiserver answers, and keeps the
// informers of a cluster that stopped answering from backing off.
//
// A Prober asks an apiserver's /readyz at a steady period and reports
// whether it answered lately; the node Lease controller renews heartbeats
// only while the physical cluster answers, so a virtual node's health
// follows what the syncer knows of its physical cluster, whether or not
// the syncer restarted during an outage.
//
// WaitForAnswer wraps the transport of the clients that informers list and
// watch with: a list or watch that cannot reach the apiserver waits for it,
// polling every second, instead of failing. client-go's reflector backs off
// up to 30 s (jittered to 60 s) after failed lists and watches, and that
// backoff cannot be configured through the shared informer factories; a
// request that waits instead keeps it from growing, so informers resume
// within a second of the apiserver answering again.
package clusterhealth
