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
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
	"github.com/kubeocean/kubeocean/test/stack"
)

// TestPodMetadataPolicy: under manifests/admission, a tenant of team-a
// cannot write a mapping to another pod's physical twin, neither when
// creating a pod nor by editing one, while Kubeocean still records its
// mappings (through pods and pods/status) and the tenant still edits its
// own labels on a pod that carries them. Not even the virtual cluster's
// admin writes kubeocean.io/ metadata on a pod, through any subresource
// that carries it.
func TestPodMetadataPolicy(t *testing.T) {
	s := startTenantWorld(t, true)
	ctx := t.Context()
	tenant := tenantKubeconfig(t, "team-a", tenantRules(true))
	forged := map[string]string{
		kubeoceanv1alpha1.AnnotationPhysicalPodNamespace: stack.MountNamespace,
		kubeoceanv1alpha1.AnnotationPhysicalPodName:      kubeoceanv1alpha1.PhysicalName("team-b", "db-0"),
	}

	_, err := applyAs(t, tenant, tenantPod("team-a", "forger", forged))
	refused(t, "kubectl apply of a pod with mapping annotations, as a tenant", err)
	if _, err := s.VirtualKube.CoreV1().Pods("team-a").Get(ctx, "forger", metav1.GetOptions{}); err == nil {
		t.Error("the forger's pod was created")
	}
	subdomain := tenantPod("team-a", "labelled", nil)
	subdomain.Labels["x.kubeocean.io/role"] = "db"
	_, err = applyAs(t, tenant, subdomain)
	refused(t, "kubectl apply of a pod with a label under x.kubeocean.io/, as a tenant", err)

	_, err = applyAs(t, tenant, tenantPod("team-a", "app", map[string]string{"example.com/owner": "team-a"}))
	step(t, "kubectl apply of a plain pod, as a tenant", err)
	// Kubeocean's writes pass: the mapping on the pod, its UID on the
	// status, which only the syncer's writes put there.
	mapped := waitMapped(t, "team-a", "app")
	if got := mapped.Annotations[kubeoceanv1alpha1.AnnotationPhysicalPodName]; got != kubeoceanv1alpha1.PhysicalName("team-a", "app") {
		t.Errorf("the syncer recorded physical pod %q", got)
	}

	kubectl := func(args ...string) error {
		_, err := s.Virtual.KubectlAs(ctx, tenant, append([]string{"-n", "team-a"}, args...)...)
		return err
	}
	step(t, "a tenant labels its mapped pod", kubectl("label", "pod", "app", "color=blue"))
	step(t, "a tenant annotates its mapped pod", kubectl("annotate", "pod", "app", "example.com/note=edited"))
	refused(t, "a tenant adds a mapping annotation", kubectl("annotate", "pod", "app",
		kubeoceanv1alpha1.AnnotationVirtualPodUID+"="+string(mapped.UID)))
	refused(t, "a tenant changes the mapping", kubectl("annotate", "--overwrite", "pod", "app",
		kubeoceanv1alpha1.AnnotationPhysicalPodName+"="+forged[kubeoceanv1alpha1.AnnotationPhysicalPodName]))
	refused(t, "a tenant removes the mapping", kubectl("annotate", "pod", "app", kubeoceanv1alpha1.AnnotationPhysicalPodUID+"-"))
	refused(t, "a tenant adds a kubeocean.io/ label", kubectl("label", "pod", "app", kubeoceanv1alpha1.LabelManagedBy+"=kubeocean"))

	live, err := s.VirtualKube.CoreV1().Pods("team-a").Get(ctx, "app", metav1.GetOptions{})
	step(t, "get team-a/app", err)
	if live.Labels["color"] != "blue" || live.Annotations["example.com/note"] != "edited" {
		t.Errorf("the tenant's edits are missing: labels %v, annotations %v", live.Labels, live.Annotations)
	}
	for k, v := range mapped.Annotations {
		if strings.HasPrefix(k, "kubeocean.io/") && live.Annotations[k] != v {
			t.Errorf("annotation %s is %q, the syncer wrote %q", k, live.Annotations[k], v)
		}
	}
	adminWrites(t, live)
}

// adminWrites: the admin is not Kubeocean either, on pods/status (whose
// updates keep metadata changes) and pods/binding (whose annotations the
// apiserver copies onto the pod); a status write that leaves Kubeocean's
// keys alone passes.
func adminWrites(t *testing.T, pod *corev1.Pod) {
	ctx, pods := t.Context(), world.VirtualKube.CoreV1().Pods(pod.Namespace)
	// The syncer writes the status too: each write starts from a fresh
	// read and is retried on a conflict.
	updateStatus := func(mutate func(*corev1.Pod)) error {
		return retry.RetryOnConflict(retry.DefaultRetry, func() error {
			live, err := pods.Get(ctx, pod.Name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			mutate(live)
			_, err = pods.UpdateStatus(ctx, live, metav1.UpdateOptions{})
			return err
		})
	}
	step(t, "the admin updates the status of a mapped pod", updateStatus(func(p *corev1.Pod) {
		p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: "example.com/Checked", Status: corev1.ConditionTrue})
	}))
	refused(t, "the admin changes the mapping through pods/status", updateStatus(func(p *corev1.Pod) {
		p.Annotations[kubeoceanv1alpha1.AnnotationPhysicalPodUID] = "forged"
	}))

	// A pod no node suits stays unscheduled, to be bound by hand.
	pending := tenantPod(pod.Namespace, "pending", nil)
	pending.Spec.NodeName = ""
	pending.Spec.NodeSelector = map[string]string{"example.com/none": "true"}
	_, err := pods.Create(ctx, pending, metav1.CreateOptions{})
	step(t, "create an unscheduled pod", err)
	binding := &corev1.Binding{
		ObjectMeta: metav1.ObjectMeta{Name: pending.Name, Annotations: map[string]string{
			kubeoceanv1alpha1.AnnotationPhysicalPodName: kubeoceanv1alpha1.PhysicalName("team-b", "db-0")}},
		Target: corev1.ObjectReference{Kind: "Node", Name: tenantNode},
	}
	refused(t, "the admin binds a pod with a mapping annotation", pods.Bind(ctx, binding, metav1.CreateOptions{}))
}

// refused fails the test unless err is the admission policy's refusal.
func refused(t *testing.T, what string, err error) {
	t.Helper()
	if err == nil || !strings.Contains(err.Error(), stack.PodMetadataRefusal) {
		t.Errorf("%s: %v; want the refusal %q", what, err, stack.PodMetadataRefusal)
	}
}
