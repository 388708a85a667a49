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

package syncers

import (
	"context"
	"time"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
)

// Phase summarises a syncer.
type Phase string

const (
	// PhaseStarting: created or started, not ready yet.
	PhaseStarting Phase = "Starting"
	// PhaseReady: the syncer runs and its caches are synced.
	PhaseReady Phase = "Ready"
	// PhaseFailed: the syncer cannot run (it crashed, its rollout is stuck,
	// or its templates do not render).
	PhaseFailed Phase = "Failed"
)

// State is what a syncer is doing.
type State struct {
	Phase Phase
	// Reason and Message describe the state for the SyncerReady condition.
	Reason  string
	Message string
	// RetryAfter, when positive, asks the caller to look again this much
	// later (a failed syncer's next restart).
	RetryAfter time.Duration
}

// Runner is what the ClusterBinding controller needs of a syncer mode.
type Runner interface {
	// Ensure makes the binding's syncer run as its spec and kubeconfig
	// (identified by kubeconfigHash) say, and reports its state. An error
	// is a failure to act (e.g. an API error) worth retrying.
	Ensure(ctx context.Context, binding *kubeoceanv1alpha1.ClusterBinding, kubeconfigHash string) (State, error)
	// Observe reports on the binding's syncer without changing anything;
	// false when it has none.
	Observe(binding *kubeoceanv1alpha1.ClusterBinding) (State, bool)
	// Remove stops or deletes the binding's syncer and reports whether it
	// is gone. Only the binding's name is used, so a stub works for a
	// binding already gone.
	Remove(ctx context.Context, binding *kubeoceanv1alpha1.ClusterBinding) (bool, error)
	// HasSynced reports whether the caches the runner reads are filled.
	HasSynced() bool
	// Running counts the syncers that run (for metrics).
	Running() int
}
