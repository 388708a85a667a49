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
	"fmt"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	k8sleaderelection "k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/klog/v2"
)

// ErrLeadershipLost is returned by Run when the lease was lost while leading.
var ErrLeadershipLost = errors.New("leader election lost")

// Run calls run while this process leads the Lease described by opts and
// returns when ctx is done (nil), when run returns by itself (nil, after
// releasing the lease) or when leadership is lost (ErrLeadershipLost, after
// run has returned). With leader election disabled it just calls run(ctx).
//
// kube should have a request timeout below RenewDeadline, so that one hung
// request cannot cost the leadership.
func Run(ctx context.Context, kube kubernetes.Interface, opts Options, run func(ctx context.Context)) error {
	if !opts.Enabled {
		run(ctx)
		return nil
	}
	opts, err := opts.completed()
	if err != nil {
		return err
	}
	logger := klog.FromContext(ctx).WithValues(
		"lease", klog.KRef(opts.LeaseNamespace, opts.LeaseName), "identity", opts.Identity)
	ctx = klog.NewContext(ctx, logger)

	c := newCampaign(ctx, opts.Identity, run)
	elector, err := k8sleaderelection.NewLeaderElector(k8sleaderelection.LeaderElectionConfig{
		Lock: &resourcelock.LeaseLock{
			LeaseMeta:  metav1.ObjectMeta{Namespace: opts.LeaseNamespace, Name: opts.LeaseName},
			Client:     kube.CoordinationV1(),
			LockConfig: resourcelock.ResourceLockConfig{Identity: opts.Identity},
		},
		LeaseDuration:   opts.LeaseDuration,
		RenewDeadline:   opts.RenewDeadline,
		RetryPeriod:     opts.RetryPeriod,
		ReleaseOnCancel: true,
		Name:            opts.LeaseName,
		WatchDog:        opts.Healthz,
		Callbacks: k8sleaderelection.LeaderCallbacks{
			OnStartedLeading: c.lead,
			OnStoppedLeading: c.stoppedLeading,
			OnNewLeader:      c.newLeader,
		},
	})
	if err != nil {
		return fmt.Errorf("leader election: %w", err)
	}
	if opts.Healthz != nil {
		opts.Healthz.SetLeaderElection(elector)
	}
	if err := c.campaign(elector); err != nil {
		return fmt.Errorf("%w on lease %s/%s", err, opts.LeaseNamespace, opts.LeaseName)
	}
	return nil
}

// campaign ties the work to the election. The election runs on a context of
// its own: client-go releases the lease as soon as that context ends, so it
// must end only after the work has drained, or a new leader could start while
// this one is still writing.
type campaign struct {
	ctx          context.Context
	identity     string
	run          func(context.Context)
	electionCtx  context.Context
	stopElection context.CancelFunc

	mu           sync.Mutex
	stopping     bool // no new work may start
	leading      bool
	workReturned bool // run returned while it still held the lease
	work         sync.WaitGroup
}

func newCampaign(ctx context.Context, identity string, run func(context.Context)) *campaign {
	electionCtx, stopElection := context.WithCancel(context.WithoutCancel(ctx))
	return &campaign{ctx: ctx, identity: identity, run: run, electionCtx: electionCtx, stopElection: stopElection}
}

// campaign blocks until the election is over and the work has returned.
func (c *campaign) campaign(elector *k8sleaderelection.LeaderElector) error {
	defer c.stopElection()
	stopWatching := context.AfterFunc(c.ctx, c.drainThenStopElection)
	defer stopWatching()

	elector.Run(c.electionCtx)
	c.drainWork()

	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ctx.Err() != nil || c.workReturned {
		return nil
	}
	return ErrLeadershipLost
}

func (c *campaign) drainThenStopElection() {
	c.drainWork()
	c.stopElection()
}

func (c *campaign) drainWork() {
	c.mu.Lock()
	c.stopping = true
	c.mu.Unlock()
	c.work.Wait()
}

// lead runs the work; client-go calls it in its own goroutine once the lease
// is acquired, with a context that ends when the lease is lost.
func (c *campaign) lead(leaderCtx context.Context) {
	c.mu.Lock()
	if c.stopping {
		c.mu.Unlock()
		return
	}
	c.leading = true
	c.work.Add(1)
	c.mu.Unlock()
	defer c.work.Done()
	// However the work ends, the election ends with it and the lease is released.
	defer c.stopElection()

	workCtx, cancelWork := context.WithCancel(leaderCtx)
	defer cancelWork()
	// leaderCtx derives from the detached election context, so the caller's
	// cancellation has to be passed on to the work explicitly.
	stopPropagating := context.AfterFunc(c.ctx, cancelWork)
	defer stopPropagating()

	klog.FromContext(c.ctx).Info("Started leading")
	c.run(workCtx)
	if workCtx.Err() == nil {
		c.mu.Lock()
		c.workReturned = true
		c.mu.Unlock()
	}
}

func (c *campaign) stoppedLeading() {
	c.mu.Lock()
	wasLeading := c.leading
	c.mu.Unlock()
	if wasLeading {
		klog.FromContext(c.ctx).Info("Stopped leading")
	}
}

func (c *campaign) newLeader(identity string) {
	if identity == c.identity {
		return // reported as "Started leading"
	}
	klog.FromContext(c.ctx).Info("New leader elected", "leader", identity)
}
