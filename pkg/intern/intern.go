// Package intern makes strings that repeat across many cached objects
// (label keys and values, node conditions, namespace and node names) share
// one copy. Objects decoded from the API hold a private copy of every
// string; across thousands of nodes and pods these copies add up to
// megabytes that say the same thing.
//
// Interned strings are ordinary strings: nothing changes for readers. A
// string interned here stays reachable only as long as some object holds
// it (the canonical copies are weakly held by the unique package).
package intern

import "unique"

// String returns the canonical copy of s.
func String(s string) string {
	if s == "" {
		return ""
	}
	return unique.Make(s).Value()
}

// Map returns a copy of m, sized to fit, with keys and values interned; nil
// stays nil.
func Map(m map[string]string) map[string]string {
	if m == nil {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[String(k)] = String(v)
	}
	return out
}
