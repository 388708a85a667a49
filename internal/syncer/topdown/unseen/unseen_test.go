package unseen

import (
	"testing"
	"time"
)

func TestObjects(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	o := New[string, int](time.Minute)
	if _, ok := o.Get("a", now); ok {
		t.Fatal("an empty memory remembers a")
	}
	o.Replace("a", 1, now)
	if _, ok := o.Get("a", now); ok {
		t.Fatal("Replace recorded an object that was not remembered")
	}
	o.Remember("a", 1, now)
	o.Replace("a", 2, now.Add(30*time.Second))
	if got, ok := o.Get("a", now.Add(80*time.Second)); !ok || got != 2 {
		t.Fatalf("Get = %d, %v; want the replacement, its time counted from the replace", got, ok)
	}
	if _, ok := o.Get("a", now.Add(90*time.Second)); ok {
		t.Fatal("a is remembered past its time")
	}
	o.Remember("b", 3, now)
	o.Forget("b")
	if _, ok := o.Get("b", now); ok {
		t.Fatal("b is remembered after Forget")
	}

	var none *Objects[string, int]
	none.Remember("a", 1, now)
	none.Replace("a", 1, now)
	none.Forget("a")
	if _, ok := none.Get("a", now); ok {
		t.Fatal("a nil memory remembers a")
	}
}
