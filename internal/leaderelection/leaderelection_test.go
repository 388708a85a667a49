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

package leaderelection

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/klog/v2/ktesting"
)

func TestRunDisabledCallsRunDirectly(t *testing.T) {
	client := fake.NewClientset()
	_, ctx := ktesting.NewTestContext(t)
	type key struct{}
	ctx = context.WithValue(ctx, key{}, "caller")
	var got any

	err := Run(ctx, client, Options{Enabled: false}, func(ctx context.Context) { got = ctx.Value(key{}) })

	if err != nil {
		t.Fatalf("Run = %v", err)
	}
	if got != "caller" {
		t.Error("run did not get the caller's context")
	}
	if actions := client.Actions(); len(actions) != 0 {
		t.Errorf("disabled leader election called the API: %v", actions)
	}
}

func TestRunOnlyOneCandidateLeadsAtATime(t *testing.T) {
	t.Parallel()
	client := newLeaseClient()
	var mu sync.Mutex
	active, maxActive := 0, 0
	leading := make(chan string, 2)
	type candidate struct {
		cancel context.CancelFunc
		done   chan error
	}
	candidates := map[string]candidate{}
	for _, identity := range []string{"a", "b"} {
		_, ctx := ktesting.NewTestContext(t)
		ctx, cancel := context.WithCancel(ctx)
		done := make(chan error, 1)
		candidates[identity] = candidate{cancel, done}
		go func() {
			done <- Run(ctx, client, testOptions("exclusive", identity), func(ctx context.Context) {
				mu.Lock()
				active++
				maxActive = max(maxActive, active)
				mu.Unlock()
				defer func() {
					mu.Lock()
					active--
					mu.Unlock()
				}()
				leading <- identity
				<-ctx.Done()
			})
		}()
	}
	t.Cleanup(func() {
		for _, c := range candidates {
			c.cancel()
		}
	})

	first := waitFor(t, leading, 10*time.Second, "a first leader")
	// Longer than the lease: a standby ignoring a renewed lease would show up here.
	time.Sleep(3 * time.Second)
	if holder := holder(getLease(t, client, "exclusive")); holder != first {
		t.Fatalf("lease held by %q while %q leads", holder, first)
	}
	candidates[first].cancel()
	if err := waitFor(t, candidates[first].done, 10*time.Second, "the first leader to stop"); err != nil {
		t.Errorf("first leader's Run = %v, want nil after cancel", err)
	}
	second := waitFor(t, leading, 10*time.Second, "the standby to take over")

	if second == first {
		t.Errorf("%q led twice", first)
	}
	mu.Lock()
	defer mu.Unlock()
	if maxActive != 1 {
		t.Errorf("%d candidates ran at once, want 1", maxActive)
	}
}

func TestRunReleasesLeaseOnCancelAfterWorkDrains(t *testing.T) {
	t.Parallel()
	client := newLeaseClient()
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	started := make(chan struct{})
	holderWhileDraining := make(chan string, 1)
	done := make(chan error, 1)

	go func() {
		done <- Run(ctx, client, testOptions("release", "me"), func(ctx context.Context) {
			close(started)
			<-ctx.Done()
			time.Sleep(200 * time.Millisecond) // slow cleanup must still be covered by the lease
			lease, err := client.CoordinationV1().Leases(testNamespace).Get(context.Background(), "release", metav1.GetOptions{})
			if err != nil {
				holderWhileDraining <- err.Error()
				return
			}
			holderWhileDraining <- holder(lease)
		})
	}()
	waitFor(t, started, 10*time.Second, "leadership")
	cancel()

	if err := waitFor(t, done, 10*time.Second, "Run to return"); err != nil {
		t.Fatalf("Run = %v, want nil", err)
	}
	if got := <-holderWhileDraining; got != "me" {
		t.Errorf("lease holder while the work drained = %q, want %q", got, "me")
	}
	lease := getLease(t, client, "release")
	if got := holder(lease); got != "" {
		t.Errorf("lease holder after release = %q, want empty", got)
	}
	if lease.Spec.LeaseDurationSeconds == nil || *lease.Spec.LeaseDurationSeconds != 1 {
		t.Errorf("released lease duration = %v, want 1s so a standby takes over at once", lease.Spec.LeaseDurationSeconds)
	}
}

func TestRunReturnsErrorWhenLeadershipIsLost(t *testing.T) {
	t.Parallel()
	client := newLeaseClient()
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	started, workStopped := make(chan struct{}), make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- Run(ctx, client, testOptions("stolen", "me"), func(ctx context.Context) {
			close(started)
			<-ctx.Done()
			close(workStopped)
		})
	}()
	waitFor(t, started, 10*time.Second, "leadership")

	stealLease(t, client, "stolen", "thief")

	err := waitFor(t, done, 10*time.Second, "Run to return")
	if !errors.Is(err, ErrLeadershipLost) {
		t.Fatalf("Run = %v, want ErrLeadershipLost", err)
	}
	select {
	case <-workStopped:
	default:
		t.Error("Run returned before the work stopped")
	}
	if got := holder(getLease(t, client, "stolen")); got != "thief" {
		t.Errorf("lease holder = %q, the losing leader must not touch the new leader's lease", got)
	}
}

// stealLease makes another identity hold the lease for long, as a leader on
// the other side of a network partition would after this one's lease expired.
func stealLease(t *testing.T, client *fake.Clientset, name, thief string) {
	t.Helper()
	lease := getLease(t, client, name)
	now := metav1.NewMicroTime(time.Now())
	duration := int32(60)
	lease.Spec.HolderIdentity = &thief
	lease.Spec.AcquireTime, lease.Spec.RenewTime = &now, &now
	lease.Spec.LeaseDurationSeconds = &duration
	if _, err := client.CoordinationV1().Leases(testNamespace).Update(context.Background(), lease, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("stealing lease: %v", err)
	}
}

func TestRunReleasesLeaseWhenWorkReturns(t *testing.T) {
	t.Parallel()
	client := newLeaseClient()
	_, ctx := ktesting.NewTestContext(t)

	err := Run(ctx, client, testOptions("one-shot", "me"), func(context.Context) {})

	if err != nil {
		t.Fatalf("Run = %v, want nil", err)
	}
	if got := holder(getLease(t, client, "one-shot")); got != "" {
		t.Errorf("lease holder = %q, want released", got)
	}
}

func TestRunCancelledBeforeLeadingDoesNotRunWork(t *testing.T) {
	t.Parallel()
	client := newLeaseClient()
	_, ctx := ktesting.NewTestContext(t)
	createHeldLease(t, client, "taken", "other")
	ctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
	defer cancel()
	var ran atomic.Bool

	err := Run(ctx, client, testOptions("taken", "me"), func(context.Context) { ran.Store(true) })

	if err != nil {
		t.Errorf("Run = %v, want nil", err)
	}
	if ran.Load() {
		t.Error("work ran without the lease")
	}
	if got := holder(getLease(t, client, "taken")); got != "other" {
		t.Errorf("lease holder = %q, a standby must not touch it", got)
	}
}

func createHeldLease(t *testing.T, client *fake.Clientset, name, holder string) {
	t.Helper()
	now := metav1.NewMicroTime(time.Now())
	duration := int32(60)
	lease := &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Namespace: testNamespace, Name: name},
		Spec: coordinationv1.LeaseSpec{
			HolderIdentity: &holder, AcquireTime: &now, RenewTime: &now, LeaseDurationSeconds: &duration,
		},
	}
	if _, err := client.CoordinationV1().Leases(testNamespace).Create(context.Background(), lease, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating lease: %v", err)
	}
}
