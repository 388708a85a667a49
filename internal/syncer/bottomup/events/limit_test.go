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

package events

import (
	"testing"
	"time"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
)

func TestLimiterBoundsWritesPerObjectAndBinding(t *testing.T) {
	l := newLimiter(Limits{ObjectQPS: 1, ObjectBurst: 3, BindingQPS: 10, BindingBurst: 4})
	now := started
	for i := range 3 {
		if wait, _ := l.take("Pod/a/x", now); wait != 0 {
			t.Fatalf("write %d of the burst waits %v", i+1, wait)
		}
	}
	wait, reason := l.take("Pod/a/x", now)
	if wait != time.Second || reason != kubeoceanv1alpha1.EventDropObjectRateLimit {
		t.Fatalf("4th write of one object: wait %v reason %q, want 1s for the object's bucket", wait, reason)
	}
	// Refused writes take no token: the binding's bucket still has one.
	if wait, _ := l.take("Pod/a/y", now); wait != 0 {
		t.Fatalf("another object waits %v", wait)
	}
	wait, reason = l.take("Pod/a/z", now)
	if wait == 0 || reason != kubeoceanv1alpha1.EventDropBindingRateLimit {
		t.Fatalf("5th write of the binding: wait %v reason %q, want the binding's bucket", wait, reason)
	}
	// A second later the object has one token again.
	if wait, _ := l.take("Pod/a/x", now.Add(time.Second)); wait != 0 {
		t.Fatalf("after a second the object still waits %v", wait)
	}
}

func TestLimiterWritesOverTimeStayWithinTheRate(t *testing.T) {
	l := newLimiter(Limits{ObjectQPS: 2, ObjectBurst: 5, BindingQPS: 100, BindingBurst: 100})
	allowed := 0
	// 5,000 attempts over 10 s: the burst, then 2 a second.
	for i := range 5000 {
		if wait, _ := l.take("Pod/a/x", started.Add(time.Duration(i)*2*time.Millisecond)); wait == 0 {
			allowed++
		}
	}
	if allowed < 20 || allowed > 5+2*10+1 {
		t.Errorf("%d writes allowed in 10 s, want about 5 + 2/s", allowed)
	}
}
