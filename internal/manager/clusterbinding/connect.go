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

package clusterbinding

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
	"github.com/kubeocean/kubeocean/internal/manager/connectivity"
	"github.com/kubeocean/kubeocean/pkg/remotecluster"
)

// connRecord is the outcome of the last check of one binding's physical
// cluster. The controller keeps one per binding in memory, so that the
// reconciles its own writes cause do not check again.
type connRecord struct {
	// inputs are what the check depended on (see connInputs); a record is
	// reused only for the same inputs.
	inputs    string
	secret    kubeoceanv1alpha1.SecretReference
	checkedAt time.Time
	// failure is nil when the check passed.
	failure *connectivity.Failure
	// clusterUID is the identity of the physical cluster a passing check
	// read.
	clusterUID string
	// failures counts the transient failures in a row with these inputs;
	// retryAt is when the next check is due.
	failures int
	retryAt  time.Time
}

func (r *connRecord) transient() bool { return r.failure != nil && !r.failure.Permanent }

// connInputs identify what a check depends on: the binding's spec and its
// kubeconfig. A change to either bypasses the backoff.
func connInputs(b *kubeoceanv1alpha1.ClusterBinding, kubeconfigHash string) string {
	return strconv.FormatInt(b.Generation, 10) + "/" + kubeconfigHash + "/" + pinInputs(b)
}

const (
	// backoffBase is the delay after the first transient failure.
	backoffBase = 30 * time.Second
	// backoffMax caps the delay, so that a cluster that comes back is
	// noticed within a few minutes.
	backoffMax = 5 * time.Minute
)

// backoffDelay is the wait after the n-th transient failure in a row:
// 30s, 60s, 120s, 240s, then 5m.
func backoffDelay(failures int) time.Duration {
	delay := backoffBase
	for i := 1; i < failures && delay < backoffMax; i++ {
		delay *= 2
	}
	return min(delay, backoffMax)
}

// UnreachableProbeInterval is how often the manager asks an unreachable
// physical cluster whether it answers again, between the checks of its
// backoff; once it does, the full check runs at once.
const UnreachableProbeInterval = 5 * time.Second

// unreachable says whether record is a backoff for a cluster that did not
// answer, which a cheap probe may end early.
func (r *connRecord) unreachable() bool {
	return r.transient() && r.failure.Reason == kubeoceanv1alpha1.ReasonUnreachable
}

// reusable says whether record still answers for inputs at now: a success
// until the recheck is due, a transient failure until its retry, a
// permanent failure until the inputs change.
func reusable(record *connRecord, inputs string, now time.Time, recheck time.Duration) bool {
	switch {
	case record == nil || record.inputs != inputs:
		return false
	case record.failure == nil:
		return now.Before(record.checkedAt.Add(recheck))
	case record.transient():
		return now.Before(record.retryAt)
	default:
		return true
	}
}

// nextRecord is the record after a check that ended in failure (nil on
// success) at now.
func nextRecord(previous *connRecord, inputs string, secret kubeoceanv1alpha1.SecretReference, failure *connectivity.Failure, now time.Time) *connRecord {
	record := &connRecord{inputs: inputs, secret: secret, checkedAt: now, failure: failure}
	if record.transient() {
		record.failures = 1
		if previous != nil && previous.inputs == inputs && previous.transient() {
			record.failures = previous.failures + 1
		}
		record.retryAt = now.Add(backoffDelay(record.failures))
	}
	return record
}

// connect returns the binding's connection record, checking the physical
// cluster unless the last record still answers.
func (c *Controller) connect(ctx context.Context, b *kubeoceanv1alpha1.ClusterBinding, kubeconfigHash string) *connRecord {
	inputs := connInputs(b, kubeconfigHash)
	now := c.clock.Now()
	previous := c.records.get(b.Name)
	if previous == nil {
		previous = resumedRecord(b, inputs)
	}
	if reusable(previous, inputs, now, c.recheck) {
		// A cluster that did not answer is asked again between the checks
		// of its backoff, so that a binding resumes within seconds of its
		// cluster's return, whatever the backoff has grown to.
		if !previous.unreachable() || !c.checker.Answers(ctx, &b.Spec) {
			return previous
		}
		klog.FromContext(ctx).Info("Physical cluster answers again; checking it now", "failures", previous.failures)
	}
	failure := c.checker.Check(ctx, &b.Spec)
	var clusterUID string
	if failure == nil {
		clusterUID, failure = c.checkIdentity(ctx, b)
	}
	if failure == nil {
		failure = c.checker.ClaimMountNamespace(ctx, &b.Spec, connectivity.Claim{
			VirtualCluster: c.virtualCluster, Binding: b.Name, BindingUID: string(b.UID), ClusterID: b.Spec.ClusterID,
		})
	}
	c.metrics.observeCheck(failure, c.clock.Since(now))
	record := nextRecord(previous, inputs, b.Spec.SecretRef, failure, c.clock.Now())
	record.clusterUID = clusterUID
	c.records.set(b.Name, record)

	logger := klog.FromContext(ctx)
	switch {
	case failure == nil:
		logger.V(2).Info("Physical cluster connected")
	case failure.Permanent:
		logger.Info("Physical cluster configuration is broken; waiting for the binding or its Secret to change", "reason", failure.Reason, "err", failure.Err)
	default:
		logger.Info("Physical cluster check failed; retrying with backoff", "reason", failure.Reason, "failures", record.failures, "retryAt", record.retryAt, "message", failure.Message)
	}
	return record
}

// backoffState is the value of kubeoceanv1alpha1.AnnotationConnectBackoff.
type backoffState struct {
	Failures int         `json:"failures"`
	RetryAt  metav1.Time `json:"retryAt"`
	Inputs   string      `json:"inputs"`
}

// backoffAnnotation is the annotation value record calls for; "" means
// none.
func backoffAnnotation(record *connRecord) string {
	if record == nil || !record.transient() {
		return ""
	}
	data, _ := json.Marshal(backoffState{Failures: record.failures, RetryAt: metav1.NewTime(record.retryAt.UTC()), Inputs: record.inputs})
	return string(data)
}

// resumedRecord rebuilds, after a restart, the record of a binding whose
// connection was failing with the same inputs, from its annotation and its
// Connected condition; nil when there is nothing to resume.
func resumedRecord(b *kubeoceanv1alpha1.ClusterBinding, inputs string) *connRecord {
	value, ok := b.Annotations[kubeoceanv1alpha1.AnnotationConnectBackoff]
	if !ok {
		return nil
	}
	var state backoffState
	if err := json.Unmarshal([]byte(value), &state); err != nil || state.Inputs != inputs || state.Failures < 1 {
		return nil
	}
	connected := meta.FindStatusCondition(b.Status.Conditions, kubeoceanv1alpha1.ClusterBindingConditionConnected)
	if connected == nil || connected.Status != metav1.ConditionFalse {
		return nil
	}
	return &connRecord{
		inputs: inputs, secret: b.Spec.SecretRef,
		failure:  &connectivity.Failure{Reason: connected.Reason, Message: connected.Message},
		failures: state.Failures, retryAt: state.RetryAt.Time,
	}
}

// persistBackoff writes the backoff annotation record calls for, when it
// differs from the binding's. It runs after the status write, with the
// binding that write returned.
func (c *Controller) persistBackoff(ctx context.Context, b *kubeoceanv1alpha1.ClusterBinding, record *connRecord) error {
	want := backoffAnnotation(record)
	have, present := b.Annotations[kubeoceanv1alpha1.AnnotationConnectBackoff]
	if have == want && (present || want == "") {
		return nil
	}
	updated := b.DeepCopy()
	if want == "" {
		delete(updated.Annotations, kubeoceanv1alpha1.AnnotationConnectBackoff)
	} else {
		if updated.Annotations == nil {
			updated.Annotations = map[string]string{}
		}
		updated.Annotations[kubeoceanv1alpha1.AnnotationConnectBackoff] = want
	}
	if _, err := c.client.ClusterBindings().Update(ctx, updated, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("recording the connection backoff: %w", err)
	}
	return nil
}

// kubeconfigHash identifies the content of the binding's kubeconfig, or
// says why there is none, so that any change to the Secret shows.
func (c *Controller) kubeconfigHash(b *kubeoceanv1alpha1.ClusterBinding) string {
	ref := b.Spec.SecretRef
	secret, err := c.secrets.Get(ref.Namespace, ref.Name)
	switch {
	case apierrors.IsNotFound(err):
		return "absent"
	case err != nil:
		return "unreadable"
	}
	kubeconfig := secret.Data[remotecluster.KubeconfigKey]
	if len(kubeconfig) == 0 {
		return "empty"
	}
	sum := sha256.Sum256(kubeconfig)
	return hex.EncodeToString(sum[:8])
}

// connRecords holds the connection records by binding name.
type connRecords struct {
	mu      sync.Mutex
	records map[string]*connRecord
}

func newConnRecords() *connRecords { return &connRecords{records: map[string]*connRecord{}} }

func (r *connRecords) get(name string) *connRecord {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.records[name]
}

func (r *connRecords) set(name string, record *connRecord) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.records[name] = record
}

// waitingForNamespace names the bindings whose last check found their
// mount namespace taken.
func (r *connRecords) waitingForNamespace() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var names []string
	for name, record := range r.records {
		if record.failure != nil && record.failure.Reason == kubeoceanv1alpha1.ReasonMountNamespaceTaken {
			names = append(names, name)
		}
	}
	return names
}

// retryNow ends the backoff of a binding's failing record at now (the
// record, not dropped, keeps counting failures and stands in for the
// backoff annotation).
func (r *connRecords) retryNow(name string, now time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if record, ok := r.records[name]; ok && record.transient() {
		copied := *record
		copied.retryAt = now
		r.records[name] = &copied
	}
}

func (r *connRecords) delete(name string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.records, name)
}
