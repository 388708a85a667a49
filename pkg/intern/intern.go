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
