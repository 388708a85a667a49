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

package manager

import (
	"context"
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubeocean/kubeocean/internal/app"
	"github.com/kubeocean/kubeocean/internal/manager"
)

// TestLeaderElection runs two manager replicas: only the leader works, and
// when it stops, the other takes the Lease over and carries on.
func TestLeaderElection(t *testing.T) {
	w := newWorld(t)
	elect := func(identity string) func(*app.Options, *manager.Options) {
		return func(opts *app.Options, o *manager.Options) {
			opts.Election.Enabled, opts.Election.Identity = true, identity
			opts.Election.LeaseDuration, opts.Election.RenewDeadline, opts.Election.RetryPeriod = 4*time.Second, 3*time.Second, 500*time.Millisecond
			o.SyncerMode = manager.ModeInProcess
		}
	}
	replicas := map[string]*runningManager{
		"manager-a": startManager(t, elect("manager-a")),
		"manager-b": startManager(t, elect("manager-b")),
	}
	leader := waitLeader(t, w, "")

	w.putSecret(t, "mgr-lead-1-kubeconfig", kubeconfigData(physicalCluster.Kubeconfig))
	w.createBinding(t, "mgr-lead-1", "mgr-lead-1")
	w.waitPhase(t, "mgr-lead-1", "Ready", "", 60*time.Second)

	replicas[leader].stop(t)
	next := waitLeader(t, w, leader)

	w.putSecret(t, "mgr-lead-2-kubeconfig", kubeconfigData(physicalCluster.Kubeconfig))
	w.createBinding(t, "mgr-lead-2", "mgr-lead-2")
	w.waitPhase(t, "mgr-lead-2", "Ready", "", 60*time.Second)
	// The new leader took over the first binding's syncer too.
	w.waitPhase(t, "mgr-lead-1", "Ready", "", 30*time.Second)
	t.Logf("leadership passed from %s to %s", leader, next)

	for _, name := range []string{"mgr-lead-1", "mgr-lead-2"} {
		w.deleteBinding(t, name, 90*time.Second)
	}
}

// waitLeader waits until the manager Lease is held by someone other than
// previous and returns the holder.
func waitLeader(t *testing.T, w *world, previous string) string {
	t.Helper()
	var holder string
	waitFor(t, 60*time.Second, "a manager leads", func(ctx context.Context) (bool, error) {
		lease, err := w.virtual.CoordinationV1().Leases(systemNamespace).Get(ctx, manager.Component, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		if lease.Spec.HolderIdentity == nil {
			return false, fmt.Errorf("no holder")
		}
		holder = *lease.Spec.HolderIdentity
		return holder != "" && holder != previous, fmt.Errorf("held by %q", holder)
	})
	return holder
}
