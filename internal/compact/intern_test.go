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

package compact

import (
	"maps"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"time"
	"unsafe"
)

// fresh returns a copy of s that shares no memory with it, as decoding
// the same text twice would.
func fresh(s string) string { return strings.Clone(s) }

func TestInternSharesOneCopy(t *testing.T) {
	a, b := Intern(fresh("node.kubernetes.io/instance-type")), Intern(fresh("node.kubernetes.io/instance-type"))
	if a != b || unsafe.StringData(a) != unsafe.StringData(b) {
		t.Fatal("equal strings were not interned into one copy")
	}
	if Intern("") != "" {
		t.Fatal("the empty string changed")
	}
}

func TestInternMap(t *testing.T) {
	if InternMap(nil) != nil {
		t.Fatal("nil must stay nil")
	}
	in := map[string]string{fresh("zone"): fresh("a"), fresh("arch"): fresh("amd64")}
	one, two := InternMap(in), InternMap(map[string]string{fresh("zone"): fresh("a"), fresh("arch"): fresh("amd64")})
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

func TestInternMapOwn(t *testing.T) {
	uid := func(key string) bool { return key == "uid" }
	if InternMapOwn(nil, uid) != nil {
		t.Fatal("nil must stay nil")
	}
	in := map[string]string{fresh("uid"): fresh("5f0c"), fresh("namespace"): fresh("team")}
	one := InternMapOwn(in, uid)
	two := InternMapOwn(map[string]string{fresh("uid"): fresh("5f0c"), fresh("namespace"): fresh("team")}, uid)
	if !maps.Equal(one, in) {
		t.Fatalf("MapOwn changed the contents: %v", one)
	}
	if unsafe.StringData(one["namespace"]) != unsafe.StringData(two["namespace"]) {
		t.Fatal("values of keys not owned were not shared")
	}
	if unsafe.StringData(one["uid"]) != unsafe.StringData(in["uid"]) || unsafe.StringData(one["uid"]) == unsafe.StringData(two["uid"]) {
		t.Fatal("an owned value was interned")
	}
	for k := range one {
		for k2 := range two {
			if k == k2 && unsafe.StringData(k) != unsafe.StringData(k2) {
				t.Fatalf("key %q was not shared", k)
			}
		}
	}
}

func TestSharedMap(t *testing.T) {
	if SharedMap(nil) != nil {
		t.Fatal("nil must stay nil")
	}
	labels := func() map[string]string {
		return map[string]string{fresh("app"): fresh("web"), fresh("pod-template-hash"): fresh("7d9c6b5f4")}
	}
	one, two := SharedMap(labels()), SharedMap(labels())
	if !maps.Equal(one, labels()) {
		t.Fatalf("SharedMap changed the contents: %v", one)
	}
	if !sameMap(one, two) {
		t.Fatal("equal maps were not shared")
	}
	other := labels()
	other["pod-template-hash"] = "5f4c3b2a1"
	if three := SharedMap(other); sameMap(one, three) || three["pod-template-hash"] != "5f4c3b2a1" {
		t.Fatalf("a different map was shared with an equal one's: %v", three)
	}
	if empty := SharedMap(map[string]string{}); empty == nil || len(empty) != 0 {
		t.Fatalf("an empty map must stay empty and not nil: %v", empty)
	}
}

func TestSharedKeys(t *testing.T) {
	if SharedKeys(nil) != nil {
		t.Fatal("nil must stay nil")
	}
	data := func(token string) map[string][]byte {
		return map[string][]byte{fresh("token"): []byte(token), fresh("ca.crt"): []byte("ca"), fresh("namespace"): []byte("shop")}
	}
	one, two := SharedKeys(data("a")), SharedKeys(data("b"))
	if len(one) != 3 || !sameKeys(one, data("")) {
		t.Fatalf("SharedKeys changed the keys: %v", one)
	}
	for k, v := range one {
		if v != nil {
			t.Fatalf("the value of %q was kept", k)
		}
	}
	if !sameMap(one, two) {
		t.Fatal("maps with the same keys were not shared")
	}
	if three := SharedKeys(map[string][]byte{"token": nil}); sameMap(one, three) {
		t.Fatal("maps with different keys were shared")
	}
}

// TestSharedValuesOutliveAndForget: a shared value stays shared across one
// collection, and a table forgets it two collections after it was last
// asked for (the objects holding it keep it).
func TestSharedValuesOutliveAndForget(t *testing.T) {
	labels := func() map[string]string { return map[string]string{fresh("kubeocean.io/outlives"): fresh("yes")} }
	first := SharedMap(labels())
	collect(t)
	if !sameMap(first, SharedMap(labels())) {
		t.Fatal("a map shared before a collection was copied again after it")
	}
	collect(t)
	collect(t)
	sharedMaps.seen.mu.Lock()
	defer sharedMaps.seen.mu.Unlock()
	for _, set := range []map[uint64][]map[string]string{sharedMaps.seen.current, sharedMaps.seen.previous} {
		for _, kept := range set[hashMap(labels())] {
			if sameMap(kept, first) {
				t.Fatal("still kept two collections after it was last asked for")
			}
		}
	}
}

// sameMap reports whether a and b are one map, not two equal ones.
func sameMap[M ~map[K]V, K comparable, V any](a, b M) bool {
	return reflect.ValueOf(a).UnsafePointer() == reflect.ValueOf(b).UnsafePointer()
}

// collect runs a garbage collection and waits until the cleanup that
// follows it has rotated the sets; cleanups run on their own goroutine.
func collect(t *testing.T) {
	t.Helper()
	before := rotationsSoFar()
	runtime.GC()
	deadline := time.Now().Add(10 * time.Second)
	for rotationsSoFar() == before {
		if time.Now().After(deadline) {
			t.Fatal("no rotation after a garbage collection")
		}
		time.Sleep(time.Millisecond)
	}
}

// TestSharingOutlivesAGarbageCollection interns a string, keeps only its
// bytes (as a cached object does) and interns it again after a collection:
// the second call must return the same copy. The unique package alone
// forgets the copy at the collection, once the handle is gone.
func TestSharingOutlivesAGarbageCollection(t *testing.T) {
	first := Intern(fresh("kubeocean.io/survives-a-collection"))
	collect(t)
	again := Intern(fresh("kubeocean.io/survives-a-collection"))
	if unsafe.StringData(first) != unsafe.StringData(again) {
		t.Fatal("a string interned before a collection was copied again after it")
	}
	runtime.KeepAlive(first)
}

// TestForgottenAfterTwoCollections checks that the kept handles do not
// hold a string nobody interns any more: two collections later its
// canonical copy is gone from the sets.
func TestForgottenAfterTwoCollections(t *testing.T) {
	Intern(fresh("kubeocean.io/forgotten"))
	collect(t)
	collect(t)
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

// rotationsSoFar reports after how many collections the sets were
// rotated.
func rotationsSoFar() int {
	rotators.Lock()
	defer rotators.Unlock()
	return rotators.rounds
}
