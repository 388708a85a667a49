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

package controller

import (
	"sync"
	"testing"
	"time"

	testingclock "k8s.io/utils/clock/testing"
)

func TestExpectations(t *testing.T) {
	clock := testingclock.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	e := NewExpectations[string, int](time.Minute, clock)
	if !e.SatisfiedExpectations("a") {
		t.Fatal("nothing written, and a is expected")
	}
	e.UpdateExpectation("a", 1)
	if _, _, ok := e.GetExpectations("a"); ok {
		t.Fatal("UpdateExpectation expected an object that was not expected")
	}
	e.ExpectCreation("a", 1)
	clock.Step(30 * time.Second)
	e.UpdateExpectation("a", 2)
	clock.Step(50 * time.Second)
	if got, left, ok := e.GetExpectations("a"); !ok || got != 2 || left != 10*time.Second {
		t.Fatalf("GetExpectations = %d, %v, %v; want the update, its time counted from the update", got, left, ok)
	}
	clock.Step(10 * time.Second)
	if _, _, ok := e.GetExpectations("a"); ok {
		t.Fatal("a is expected past its timeout")
	}
	e.ExpectCreation("b", 3)
	e.CreationObserved("b")
	e.ExpectCreation("c", 4)
	e.DeleteExpectations("c")
	if !e.SatisfiedExpectations("b") || !e.SatisfiedExpectations("c") {
		t.Fatal("an object observed or deleted is still expected")
	}

	var none *Expectations[string, int]
	none.ExpectCreation("a", 1)
	none.UpdateExpectation("a", 1)
	none.CreationObserved("a")
	none.DeleteExpectations("a")
	if !none.SatisfiedExpectations("a") {
		t.Fatal("nil expectations expect a")
	}
}

// Workers write and event handlers observe at once.
func TestExpectationsConcurrently(t *testing.T) {
	e := NewExpectations[int, int](time.Minute, nil)
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range 100 {
				e.ExpectCreation(j, i)
				e.GetExpectations(j)
				e.CreationObserved(j)
			}
		}()
	}
	wg.Wait()
	for j := range 100 {
		if !e.SatisfiedExpectations(j) {
			t.Errorf("%d still expected after every write was observed", j)
		}
	}
}
