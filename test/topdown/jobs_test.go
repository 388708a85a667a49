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

package topdown

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
	"github.com/kubeocean/kubeocean/internal/syncer/tenantmeta"
	"github.com/kubeocean/kubeocean/test/testenv"
)

// finishPhysicalPods plays the physical kubelet of pods that run to
// completion, which kwok does only for pods a Job owns (physical pods are
// owned by nobody): every running physical pod of the mount namespace ends
// once, with exit code exitCode(pod) — Succeeded for 0, Failed otherwise —
// as a kubelet reports it. It runs until the test ends and returns how many
// pods it ended.
func finishPhysicalPods(t *testing.T, w *testenv.SyncerWorld, exitCode func(*corev1.Pod) int32) func() int {
	ctx, cancel := context.WithCancel(context.Background())
	var mu sync.Mutex
	ended := map[types.UID]bool{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			pods, err := w.Physical.CoreV1().Pods(w.Mount).List(ctx, metav1.ListOptions{})
			if err == nil {
				for i := range pods.Items {
					p := &pods.Items[i]
					mu.Lock()
					seen := ended[p.UID]
					mu.Unlock()
					if seen || p.DeletionTimestamp != nil || p.Status.Phase != corev1.PodRunning {
						continue
					}
					if _, err := w.Physical.CoreV1().Pods(w.Mount).UpdateStatus(ctx, finished(p, exitCode(p)), metav1.UpdateOptions{}); err == nil {
						mu.Lock()
						ended[p.UID] = true
						mu.Unlock()
					}
				}
			}
			select {
			case <-ctx.Done():
			case <-time.After(200 * time.Millisecond):
			}
		}
	}()
	t.Cleanup(func() { cancel(); <-done })
	return func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(ended)
	}
}

// finished is pod as its kubelet reports it once every container exited
// with code.
func finished(pod *corev1.Pod, code int32) *corev1.Pod {
	p := pod.DeepCopy()
	now := metav1.Now()
	p.Status.Phase, p.Status.Reason = corev1.PodSucceeded, ""
	reason := "Completed"
	if code != 0 {
		p.Status.Phase, reason = corev1.PodFailed, "Error"
	}
	for i := range p.Status.Conditions {
		if c := &p.Status.Conditions[i]; c.Type == corev1.PodReady || c.Type == corev1.ContainersReady {
			c.Status, c.Reason, c.LastTransitionTime = corev1.ConditionFalse, "PodCompleted", now
		}
	}
	p.Status.ContainerStatuses = nil
	for _, c := range p.Spec.Containers {
		p.Status.ContainerStatuses = append(p.Status.ContainerStatuses, corev1.ContainerStatus{
			Name: c.Name, Image: c.Image, ImageID: c.Image, ContainerID: "kwok://" + string(p.UID) + "-" + c.Name,
			Started: ptr.To(false),
			State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
				ExitCode: code, Reason: reason, StartedAt: now, FinishedAt: now,
				ContainerID: "kwok://" + string(p.UID) + "-" + c.Name,
			}},
		})
	}
	return p
}

func jobOf(ns, name, clusterID string, completions, parallelism, backoffLimit int32) *batchv1.Job {
	pod := workload(ns, name, clusterID, func(p *corev1.Pod) {
		p.Spec.RestartPolicy = corev1.RestartPolicyNever
		c := &p.Spec.Containers[0]
		c.EnvFrom = []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "job-settings"}}}}
		c.Env = []corev1.EnvVar{{Name: "TOKEN", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
			LocalObjectReference: corev1.LocalObjectReference{Name: "job-creds"}, Key: "token"}}}}
	})
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: batchv1.JobSpec{
			Completions: ptr.To(completions), Parallelism: ptr.To(parallelism), BackoffLimit: ptr.To(backoffLimit),
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"suite": "job"}}, Spec: pod.Spec},
		},
	}
}

// mountNamespaceObjects counts what Kubeocean keeps in the mount
// namespace: pods, and copies of ConfigMaps and Secrets (token Secrets
// included).
func mountNamespaceObjects(ctx context.Context, w *testenv.SyncerWorld) (int, error) {
	selector := metav1.ListOptions{LabelSelector: kubeoceanv1alpha1.LabelManagedBy + "=" + kubeoceanv1alpha1.ManagedByKubeocean}
	pods, err := w.Physical.CoreV1().Pods(w.Mount).List(ctx, metav1.ListOptions{})
	if err != nil {
		return 0, err
	}
	cms, err := w.Physical.CoreV1().ConfigMaps(w.Mount).List(ctx, selector)
	if err != nil {
		return 0, err
	}
	secrets, err := w.Physical.CoreV1().Secrets(w.Mount).List(ctx, selector)
	if err != nil {
		return 0, err
	}
	return len(pods.Items) + len(cms.Items) + len(secrets.Items), nil
}

func waitJobCondition(t *testing.T, w *testenv.SyncerWorld, ns, name string, condition batchv1.JobConditionType) *batchv1.Job {
	t.Helper()
	var job *batchv1.Job
	testenv.WaitFor(t, 180*time.Second, fmt.Sprintf("Job %s/%s is %s", ns, name, condition), func(ctx context.Context) (bool, error) {
		var err error
		if job, err = w.Virtual.BatchV1().Jobs(ns).Get(ctx, name, metav1.GetOptions{}); err != nil {
			return false, err
		}
		for _, c := range job.Status.Conditions {
			if c.Type == condition && c.Status == corev1.ConditionTrue {
				return true, nil
			}
		}
		return false, fmt.Errorf("succeeded %d, failed %d, active %d", job.Status.Succeeded, job.Status.Failed, job.Status.Active)
	})
	return job
}

// TestJobsFinishAndLeaveNothing: a Job of 20 completions runs on a
// virtual node and completes with succeeded=20; its pods stay Succeeded in
// the virtual cluster with their containers' exit codes, while the
// physical cluster keeps nothing of them (no pod, no ConfigMap or Secret
// copy, no token Secret). A Job whose pods fail is retried up to its
// backoffLimit and fails with every failure counted and exit code 1 on its
// pods. ttlSecondsAfterFinished deletes a finished Job with its pods.
func TestJobsFinishAndLeaveNothing(t *testing.T) {
	w := lendNode(t, "job", "cls-job")
	ctx := t.Context()
	ns := "batch"
	testenv.CreateNamespace(t, w.Virtual, ns)
	waitDefaultServiceAccount(t, w, ns)
	if _, err := w.Virtual.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "job-settings"},
		Data: map[string]string{"MODE": "batch"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Virtual.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "job-creds"},
		StringData: map[string]string{"token": "t0ken"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	ended := finishPhysicalPods(t, w, func(p *corev1.Pod) int32 {
		if p.Labels[tenantmeta.LabelKey(batchv1.JobNameLabel)] == "fails" {
			return 1
		}
		return 0
	})

	start := time.Now()
	if _, err := w.Virtual.BatchV1().Jobs(ns).Create(ctx, jobOf(ns, "twenty", "cls-job", 20, 5, 6), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	job := waitJobCondition(t, w, ns, "twenty", batchv1.JobComplete)
	t.Logf("Job of 20 completions complete in %v: succeeded %d, failed %d; physical pods ended %d", time.Since(start).Round(time.Second),
		job.Status.Succeeded, job.Status.Failed, ended())
	if job.Status.Succeeded != 20 || job.Status.Failed != 0 {
		t.Errorf("succeeded %d, failed %d; want 20 and 0", job.Status.Succeeded, job.Status.Failed)
	}
	checkJobPods(t, w, ns, "twenty", 20, corev1.PodSucceeded, 0)

	if _, err := w.Virtual.BatchV1().Jobs(ns).Create(ctx, jobOf(ns, "fails", "cls-job", 1, 1, 1), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	job = waitJobCondition(t, w, ns, "fails", batchv1.JobFailed)
	t.Logf("failing Job: succeeded %d, failed %d", job.Status.Succeeded, job.Status.Failed)
	if job.Status.Succeeded != 0 || job.Status.Failed != 2 {
		t.Errorf("succeeded %d, failed %d; want 0 and 2 (backoffLimit 1: one retry)", job.Status.Succeeded, job.Status.Failed)
	}
	checkJobPods(t, w, ns, "fails", 2, corev1.PodFailed, 1)

	testenv.WaitFor(t, 90*time.Second, "nothing of the finished pods is left in the physical cluster", func(ctx context.Context) (bool, error) {
		left, err := mountNamespaceObjects(ctx, w)
		return err == nil && left == 0, fmt.Errorf("%d objects left in %s (%v)", left, w.Mount, err)
	})
	// The virtual pods are still there, finished, and nothing made them
	// run again.
	checkJobPods(t, w, ns, "twenty", 20, corev1.PodSucceeded, 0)
	checkJobPods(t, w, ns, "fails", 2, corev1.PodFailed, 1)
	if n := ended(); n != 22 {
		t.Errorf("%d physical pods ran, want 22", n)
	}

	// ttlSecondsAfterFinished, set now, deletes the Jobs and their pods.
	for _, name := range []string{"twenty", "fails"} {
		if _, err := w.Virtual.BatchV1().Jobs(ns).Patch(ctx, name, types.MergePatchType,
			[]byte(`{"spec":{"ttlSecondsAfterFinished":0}}`), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	testenv.WaitFor(t, 60*time.Second, "the Jobs and their pods are deleted", func(ctx context.Context) (bool, error) {
		jobs, err := w.Virtual.BatchV1().Jobs(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		pods, err := w.Virtual.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		return len(jobs.Items) == 0 && len(pods.Items) == 0, fmt.Errorf("%d Jobs, %d pods", len(jobs.Items), len(pods.Items))
	})
	if left, err := mountNamespaceObjects(ctx, w); err != nil || left != 0 {
		t.Errorf("%d objects in %s after the Jobs went (%v)", left, w.Mount, err)
	}
}

// checkJobPods checks that the Job's virtual pods are count, all in phase
// with every container terminated with exitCode.
func checkJobPods(t *testing.T, w *testenv.SyncerWorld, ns, job string, count int, phase corev1.PodPhase, exitCode int32) {
	t.Helper()
	pods, err := w.Virtual.CoreV1().Pods(ns).List(t.Context(), metav1.ListOptions{LabelSelector: batchv1.JobNameLabel + "=" + job})
	if err != nil {
		t.Fatal(err)
	}
	if len(pods.Items) != count {
		t.Errorf("Job %s has %d pods, want %d", job, len(pods.Items), count)
	}
	for _, p := range pods.Items {
		if p.Status.Phase != phase {
			t.Errorf("pod %s is %s, want %s", p.Name, p.Status.Phase, phase)
			continue
		}
		if len(p.Status.ContainerStatuses) != 1 {
			t.Errorf("pod %s has %d container statuses", p.Name, len(p.Status.ContainerStatuses))
			continue
		}
		if term := p.Status.ContainerStatuses[0].State.Terminated; term == nil || term.ExitCode != exitCode {
			t.Errorf("pod %s container state %+v, want terminated with exit code %d", p.Name, p.Status.ContainerStatuses[0].State, exitCode)
		}
	}
}
