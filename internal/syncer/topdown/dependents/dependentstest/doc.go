// Package dependentstest runs a dependents.Syncer over fake clientsets of a
// virtual and a physical cluster, with informer caches the test fills the
// way the production scopes would, and a log of the writes made to both
// clusters in order. The tests of the dependent-object controllers share it.
package dependentstest
