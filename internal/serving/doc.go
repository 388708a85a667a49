// Package serving provides the HTTP endpoints every Kubeocean binary serves:
// Prometheus metrics, and health (liveness) and readiness probes built from
// named checks, plus a runner that shuts the servers down gracefully; and
// what protects a server as a delegate of a cluster's apiserver: a serving
// certificate reloaded from files or self-signed, and authentication
// (TokenReview, client certificates) and authorization
// (SubjectAccessReview) of each request by that apiserver, with caching.
package serving
