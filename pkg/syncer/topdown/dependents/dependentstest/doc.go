// Package dependentstest runs a dependents.Syncer over fake clientsets of a
// virtual and a physical cluster, with informer caches the test fills the
// way the production scopes would, and a log of the writes made to both
// clusters in order. The tests of the dependent-object controllers share it.
//
// Not part of Kubeocean's library: this package is implementation, with no
// compatibility promise; it may change in any release. See docs/library.md.
package dependentstest
