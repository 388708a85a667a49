package intern

import (
	"runtime"
	"strings"
	"testing"
	"time"
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

// TestSharingOutlivesAGarbageCollection interns a string, keeps only its
// bytes (as a cached object does) and interns it again after a collection:
// the second call must return the same copy. The unique package alone
// forgets the copy at the collection, once the handle is gone.
func TestSharingOutlivesAGarbageCollection(t *testing.T) {
	first := String(fresh("kubeocean.io/survives-a-collection"))
	before := recent.rotationsSoFar()
	runtime.GC()
	waitForRotation(t, before)
	again := String(fresh("kubeocean.io/survives-a-collection"))
	if unsafe.StringData(first) != unsafe.StringData(again) {
		t.Fatal("a string interned before a collection was copied again after it")
	}
	runtime.KeepAlive(first)
}

// TestForgottenAfterTwoCollections checks that the kept handles do not
// hold a string nobody interns any more: two collections later its
// canonical copy is gone from the sets.
func TestForgottenAfterTwoCollections(t *testing.T) {
	String(fresh("kubeocean.io/forgotten"))
	for range 2 {
		before := recent.rotationsSoFar()
		runtime.GC()
		waitForRotation(t, before)
	}
	recent.mu.Lock()
	defer recent.mu.Unlock()
	for h := range recent.current {
		if h.Value() == "kubeocean.io/forgotten" {
			t.Fatal("still kept in the current set")
		}
	}
	for h := range recent.previous {
		if h.Value() == "kubeocean.io/forgotten" {
			t.Fatal("still kept two collections later")
		}
	}
}

// waitForRotation waits until the cleanup that follows a collection has
// rotated the sets; cleanups run on their own goroutine.
func waitForRotation(t *testing.T, before int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for recent.rotationsSoFar() == before {
		if time.Now().After(deadline) {
			t.Fatal("no rotation after a garbage collection")
		}
		time.Sleep(time.Millisecond)
	}
}

// rotationsSoFar reports how many collections the sets have seen.
func (h *handles) rotationsSoFar() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.rotations
}
