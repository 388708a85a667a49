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

package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
	"github.com/kubeocean/kubeocean/internal/syncer/topdown/podidentity"
	"github.com/kubeocean/kubeocean/test/bench/benchenv"
	"github.com/kubeocean/kubeocean/test/kwokkubelet"
	"github.com/kubeocean/kubeocean/test/stack"
)

// TestForgedMappingReachesNoOtherPod: without the admission policy, a
// tenant of team-a who may only create pods, exec into them and read their
// logs creates a pod whose mapping annotations name the physical pod of
// team-b/db-0. kubectl logs and exec on it are answered 404 without a
// request to the physical cluster, a Warning event says why, and deleting
// the forger's pod leaves team-b's physical pod and token Secret alone.
func TestForgedMappingReachesNoOtherPod(t *testing.T) {
	s := startTenantWorld(t, false)
	ctx := t.Context()
	tenant := tenantKubeconfig(t, "team-a", tenantRules(false))
	tenantNamespace(t, "team-b")
	// team-b's pod mounts its ServiceAccount token, which the syncer keeps
	// in a Secret beside the physical pod.
	_, err := s.VirtualKube.CoreV1().Pods("team-b").Create(ctx, tenantPod("team-b", "db-0", nil), metav1.CreateOptions{})
	step(t, "create team-b/db-0", err)
	waitMapped(t, "team-b", "db-0")
	victimPod := kubeoceanv1alpha1.PhysicalName("team-b", "db-0")
	physicalPod, err := s.PhysicalKube.CoreV1().Pods(stack.MountNamespace).Get(ctx, victimPod, metav1.GetOptions{})
	step(t, "get team-b's physical pod", err)
	tokenSecret, err := s.PhysicalKube.CoreV1().Secrets(stack.MountNamespace).Get(ctx, podidentity.SecretName(victimPod), metav1.GetOptions{})
	step(t, "get team-b's token Secret", err)

	forged := map[string]string{
		kubeoceanv1alpha1.AnnotationPhysicalPodNamespace: stack.MountNamespace,
		kubeoceanv1alpha1.AnnotationPhysicalPodName:      victimPod,
	}
	_, err = applyAs(t, tenant, tenantPod("team-a", "forger", forged))
	step(t, "kubectl apply of the forger's pod (no admission policy)", err)

	before, err := benchenv.ScrapeAPIServer(ctx, s.Physical)
	step(t, "physical apiserver metrics", err)
	out, err := s.Virtual.KubectlAs(ctx, tenant, "-n", "team-a", "logs", "forger")
	notFound(t, "kubectl logs forger", out, err)
	for _, line := range kwokkubelet.LogLines {
		if strings.Contains(out, line) {
			t.Errorf("kubectl logs forger shows team-b's log line %q", line)
		}
	}
	out, err = s.Virtual.KubectlAs(ctx, tenant, "-n", "team-a", "exec", "forger", "--", "echo", "reached")
	notFound(t, "kubectl exec forger", out, err)
	after, err := benchenv.ScrapeAPIServer(ctx, s.Physical)
	step(t, "physical apiserver metrics", err)
	grown := after.Sub(before)
	if n := grown.Total(func(r benchenv.APIRequest) bool { return r.Resource == "pods/exec" || r.Resource == "pods/log" }); n != 0 {
		t.Errorf("the physical apiserver served %v pods/exec and pods/log requests for the forger: %v", n, grown)
	}
	waitMappingRefusedEvent(t)

	step(t, "delete the forger's pod", s.VirtualKube.CoreV1().Pods("team-a").Delete(ctx, "forger", metav1.DeleteOptions{}))
	waitFor(t, "the forger's pod is gone", func(ctx context.Context) (string, error) {
		_, err := s.VirtualKube.CoreV1().Pods("team-a").Get(ctx, "forger", metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return "", nil
		}
		return fmt.Sprintf("still there (%v)", err), nil
	})
	// The syncer finishes a virtual pod after its cleanup: what it was
	// going to delete is deleted by now.
	secret, err := s.PhysicalKube.CoreV1().Secrets(stack.MountNamespace).Get(ctx, tokenSecret.Name, metav1.GetOptions{})
	if err != nil || secret.UID != tokenSecret.UID {
		t.Errorf("team-b's token Secret after the forger's pod went: %v (UID %q, was %q)", err, secret.UID, tokenSecret.UID)
	}
	pod, err := s.PhysicalKube.CoreV1().Pods(stack.MountNamespace).Get(ctx, victimPod, metav1.GetOptions{})
	if err != nil || pod.UID != physicalPod.UID || pod.DeletionTimestamp != nil {
		t.Errorf("team-b's physical pod after the forger's pod went: %v (UID %q, was %q, deleted %v)", err, pod.UID, physicalPod.UID, pod.DeletionTimestamp)
	}
}

// notFound fails the test unless kubectl failed with the kubelet API's
// 404, as the virtual apiserver passes it on: a NotFound status for logs;
// for exec, whose upgrade failed, the kubelet API's message.
func notFound(t *testing.T, what, out string, err error) {
	t.Helper()
	if err != nil && slices.ContainsFunc([]string{"NotFound", "not found", "404", "has not been created in the physical cluster"},
		func(s string) bool { return strings.Contains(err.Error(), s) }) {
		t.Logf("%s: %v", what, err)
		return
	}
	t.Errorf("%s: %v (output %q); want the kubelet API's 404", what, err, out)
}

// waitMappingRefusedEvent waits for the Warning event on the forger's pod;
// without it the test goes on, to check the deletion too.
func waitMappingRefusedEvent(t *testing.T) {
	t.Helper()
	selector := fields.Set{"involvedObject.name": "forger", "reason": kubeoceanv1alpha1.ReasonPhysicalPodMappingRefused}.String()
	err := stack.Poll(waitCtx(t), "a Warning event "+kubeoceanv1alpha1.ReasonPhysicalPodMappingRefused+" on team-a/forger", func(ctx context.Context) (string, error) {
		events, err := world.VirtualKube.CoreV1().Events("team-a").List(ctx, metav1.ListOptions{FieldSelector: selector})
		if err != nil {
			return err.Error(), nil
		}
		for _, e := range events.Items {
			if e.Type == corev1.EventTypeWarning {
				return "", nil
			}
		}
		return "no such event", nil
	})
	if err != nil {
		t.Error(err)
	}
}
