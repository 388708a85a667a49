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

// Package clusterbinding runs the manager's ClusterBinding controller. For
// each binding it:
//
//  1. adds the finalizer kubeocean.io/manager and sets the phase Pending on
//     first sight;
//  2. validates the spec, including what the CRD schema cannot express (a
//     clusterID another, older binding already uses; a name too long for the
//     label values it ends up in). An invalid binding is Failed, with a
//     condition and an event, and is not retried until it changes;
//  3. checks the physical cluster through the kubeconfig Secret (package
//     connectivity: parse, reach within 30 s, review the syncer's
//     permissions). A broken Secret or kubeconfig is Failed and waits for the
//     binding or the Secret to change; an unreachable cluster or missing
//     permissions is Failed and retried with backoff 30s, 60s, ... 5m, the
//     count kept in the annotation kubeocean.io/connect-backoff so that it
//     survives restarts. A changed Secret is noticed at once: each Secret a
//     binding references is watched on its own, by name (package
//     secretwatch), and no other Secret is; its events are mapped to the
//     bindings that reference it. A connected binding is checked again
//     every few minutes;
//  4. runs its syncer (package syncers, as a Deployment or in-process) and
//     reports it in the SyncerReady condition. The binding is Ready once its
//     syncer is. A failing check never stops a syncer that runs: only
//     unbinding does.
//
// # Unbinding
//
// A deleted binding keeps its syncer running while the syncer's finalizer
// kubeocean.io/syncer is on it: the syncer removes its virtual nodes, the
// physical objects it created in the mount namespace and its finalizers and
// labels on virtual objects, then drops its finalizer. The manager then
// stops (in-process) or deletes (Deployment, in the foreground) the syncer
// and drops kubeocean.io/manager, which releases the binding. Delete
// bindings in the background (the default): in the foreground the garbage
// collector deletes the syncer Deployment, which the binding owns, before
// the syncer has cleaned up.
//
// When the physical cluster is gone or its credentials are revoked, the
// syncer cannot clean up and the unbinding waits: Ready=False with reason
// Unbinding, or UnbindingBlocked (phase Failed, with the syncer's error)
// when the syncer cannot even run. Annotate the binding with
// kubeocean.io/force-unbind=true to finish anyway: the manager stops the
// syncer, removes the syncer's finalizer and its own, and records a Warning
// event (ForceUnbind) listing what may be left behind, so it can be removed
// by hand.
package clusterbinding
