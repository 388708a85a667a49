// Package intern makes strings that repeat across many cached objects
// (label keys and values, node conditions, namespace and node names) share
// one copy. Objects decoded from the API hold a private copy of every
// string; across thousands of nodes and pods these copies add up to
// megabytes that say the same thing.
//
// Interned strings are ordinary strings: nothing changes for readers. The
// canonical copies are weakly held by the unique package; this package
// keeps each one's handle for two garbage collections after it was last
// interned, so that sharing survives collections while a string that
// nothing interns any more is still freed.
//
// Not part of Kubeocean's library: this package is implementation, with no
// compatibility promise; it may change in any release. See docs/library.md.
package intern
