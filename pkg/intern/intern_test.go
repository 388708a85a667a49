package intern

import (
	"strings"
	"testing"
	"unsafe"
)

// fresh returns a copy of s that shares no memory with it, as decoding
// the same text twice would.
func fresh(s string) string { return strings.Clone(s) }

func TestStringSharesOneCopy(t *testing.T) {
	a, b := String(fresh("node.kubernetes.io/instance-type")), String(fresh("node.kubernetes.io/instance-type"))
	if a != b || unsafe.StringData(a) != unsafe.StringData(b) {
		t.Fatal("equal strings were not interned into one copy")
	}
	if String("") != "" {
		t.Fatal("the empty string changed")
	}
}

func TestMap(t *testing.T) {
	if Map(nil) != nil {
		t.Fatal("nil must stay nil")
	}
	in := map[string]string{fresh("zone"): fresh("a"), fresh("arch"): fresh("amd64")}
	one, two := Map(in), Map(map[string]string{fresh("zone"): fresh("a"), fresh("arch"): fresh("amd64")})
	if len(one) != 2 || one["zone"] != "a" || one["arch"] != "amd64" {
		t.Fatalf("Map changed the contents: %v", one)
	}
	if unsafe.StringData(one["zone"]) != unsafe.StringData(two["zone"]) {
		t.Fatal("values of two maps were not shared")
	}
	one["zone"] = "b"
	if in["zone"] != "a" {
		t.Fatal("Map must copy, not alias, its input")
	}
}
