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

// Package serving provides the HTTP endpoints every Kubeocean binary serves:
// Prometheus metrics, and health (liveness) and readiness probes built from
// named checks, plus a runner that shuts the servers down gracefully; and
// what protects a server as a delegate of a cluster's apiserver: a serving
// certificate reloaded from files or self-signed, and authentication
// (TokenReview, client certificates) and authorization
// (SubjectAccessReview) of each request by that apiserver, with caching.
package serving
