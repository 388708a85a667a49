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

// Package syncers runs the syncer of each ClusterBinding, in one of two
// modes (--syncer-mode):
//
//   - Deployments ("deployment", for production) renders the syncer's
//     objects from the templates of --syncer-template-dir, owned by the
//     binding, creates them or updates them when the rendering changes
//     (a template, the image or the kubeconfig Secret), brings back a
//     Deployment deleted by hand, and reads the syncer's readiness from the
//     Deployment's available replicas.
//   - InProcess ("in-process", for local and small setups) runs each
//     binding's syncer as goroutines of the manager, restarts it when the
//     binding's spec or kubeconfig changes, restarts it with backoff when it
//     fails, and reads its readiness from its informers.
//
// Both are driven by the ClusterBinding controller: Ensure when a binding is
// ready for its syncer (and while the syncer cleans up an unbinding binding),
// Observe to report on a syncer without changing it, Remove on unbinding.
package syncers
