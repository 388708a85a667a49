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

package bottomup

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	utilrand "k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2/ktesting"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
	kubeoceanclient "github.com/kubeocean/kubeocean/generated/clientset/versioned"
	"github.com/kubeocean/kubeocean/internal/events"
	"github.com/kubeocean/kubeocean/internal/syncer/bottomup/policy"
	"github.com/kubeocean/kubeocean/pkg/informers"
)

// policyEnv is the policy controller of one binding running against the
// shared clusters, with the clients a test needs to drive and observe it.
type policyEnv struct {
	binding, clusterID string
	physicalKube       kubernetes.Interface
	policies           kubeoceanclient.Interface
	virtualKube        kubernetes.Interface
}

// startPolicyController wires the controller the way the syncer does:
// policies from the physical cluster, virtual nodes scoped to the cluster ID.
func startPolicyController(t *testing.T) *policyEnv {
	t.Helper()
	suffix := utilrand.String(5)
	env := &policyEnv{
		binding:      "policy-test-" + suffix,
		clusterID:    "pol" + suffix,
		physicalKube: physicalCluster.Clientset(),
		policies:     kubeoceanclient.NewForConfigOrDie(physicalCluster.Config()),
		virtualKube:  virtualCluster.Clientset(),
	}
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithCancel(ctx)

	physical := informers.NewCluster("physical", env.physicalKube, env.policies, 0)
	virtual := informers.NewCluster("virtual", env.virtualKube, kubeoceanclient.NewForConfigOrDie(virtualCluster.Config()), 0)
	recorder, stopRecorder := events.NewRecorder(ctx, env.physicalKube, "kubeocean-syncer")
	c, err := policy.New(policy.Options{
		BindingName:    env.binding,
		MountNamespace: env.binding + "-mount",
		Client:         env.policies.KubeoceanV1alpha1(),
		Policies:       physical.Kubeocean(informers.Scope{}).Kubeocean().V1alpha1().ResourceLeasingPolicies(),
		VirtualNodes:   virtual.Kube(informers.Scope{LabelSelector: kubeoceanv1alpha1.LabelClusterID + "=" + env.clusterID}).Core().V1().Nodes(),
		Recorder:       recorder,
	})
	if err != nil {
		t.Fatal(err)
	}
	physical.Start(ctx)
	virtual.Start(ctx)
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx, 2) }()
	// Registered first, so it runs after the cleanups of the objects the
	// tests create, which need the controller to release its finalizer.
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
		physical.Shutdown()
		virtual.Shutdown()
		stopRecorder()
	})
	return env
}

// createPolicy creates a policy and deletes it when the test ends.
func (env *policyEnv) createPolicy(t *testing.T, name string, spec kubeoceanv1alpha1.ResourceLeasingPolicySpec) {
	t.Helper()
	p := &kubeoceanv1alpha1.ResourceLeasingPolicy{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: spec}
	if _, err := env.policies.KubeoceanV1alpha1().ResourceLeasingPolicies().Create(t.Context(), p, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { env.deletePolicy(t, name) })
}

// deletePolicy deletes a policy and waits until it is gone; should the
// controller fail to let go, it strips the finalizers so the shared cluster
// stays clean, and fails the test.
func (env *policyEnv) deletePolicy(t *testing.T, name string) {
	ctx := context.Background()
	client := env.policies.KubeoceanV1alpha1().ResourceLeasingPolicies()
	if err := client.Delete(ctx, name, metav1.DeleteOptions{}); apierrors.IsNotFound(err) {
		return
	} else if err != nil {
		t.Errorf("deleting policy %s: %v", name, err)
	}
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		_, err := client.Get(ctx, name, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
	if err != nil {
		t.Errorf("policy %s not gone 30s after delete; stripping its finalizers", name)
		patch := []byte(`{"metadata":{"finalizers":null}}`)
		_, _ = client.Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{})
	}
}

func (env *policyEnv) getPolicy(t *testing.T, name string) *kubeoceanv1alpha1.ResourceLeasingPolicy {
	t.Helper()
	p, err := env.policies.KubeoceanV1alpha1().ResourceLeasingPolicies().Get(t.Context(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// waitForPolicy polls the policy until done accepts it and returns it.
func (env *policyEnv) waitForPolicy(t *testing.T, name, what string, done func(*kubeoceanv1alpha1.ResourceLeasingPolicy) bool) *kubeoceanv1alpha1.ResourceLeasingPolicy {
	t.Helper()
	var last *kubeoceanv1alpha1.ResourceLeasingPolicy
	err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		p, err := env.policies.KubeoceanV1alpha1().ResourceLeasingPolicies().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		last = p
		return done(p), nil
	})
	if err != nil && last == nil {
		t.Fatalf("policy %s: timed out waiting until %s; never read it", name, what)
	}
	if err != nil {
		t.Fatalf("policy %s: timed out waiting until %s; last seen: finalizers %v, status %+v", name, what, last.Finalizers, last.Status)
	}
	return last
}

// waitForEvent waits for an event with reason on the policy.
func (env *policyEnv) waitForEvent(t *testing.T, name, reason string) *corev1.Event {
	t.Helper()
	var found *corev1.Event
	err := wait.PollUntilContextTimeout(t.Context(), 200*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		list, err := env.physicalKube.CoreV1().Events(metav1.NamespaceAll).List(ctx, metav1.ListOptions{
			FieldSelector: "involvedObject.kind=ResourceLeasingPolicy,involvedObject.name=" + name,
		})
		if err != nil {
			return false, nil
		}
		for i := range list.Items {
			if list.Items[i].Reason == reason {
				found = &list.Items[i]
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("no %s event on policy %s", reason, name)
	}
	return found
}

func hasPolicyFinalizer(p *kubeoceanv1alpha1.ResourceLeasingPolicy) bool {
	return slices.Contains(p.Finalizers, kubeoceanv1alpha1.FinalizerResourceLeasingPolicy)
}

// clockWindow is a daily window from now+from to now+to, in UTC.
func clockWindow(from, to time.Duration) kubeoceanv1alpha1.TimeWindow {
	now := time.Now().UTC()
	return kubeoceanv1alpha1.TimeWindow{Start: now.Add(from).Format("15:04"), End: now.Add(to).Format("15:04")}
}

func TestPolicyController(t *testing.T) {
	env := startPolicyController(t)

	t.Run("a policy inside its window gets the finalizer and an Active status", func(t *testing.T) {
		name := env.binding + "-active"
		window := clockWindow(-time.Hour, time.Hour)
		env.createPolicy(t, name, kubeoceanv1alpha1.ResourceLeasingPolicySpec{Cluster: env.binding,
			TimeWindows: []kubeoceanv1alpha1.TimeWindow{window}})

		p := env.waitForPolicy(t, name, "it is Active", func(p *kubeoceanv1alpha1.ResourceLeasingPolicy) bool {
			return p.Status.Phase == kubeoceanv1alpha1.ResourceLeasingPolicyActive
		})
		if !hasPolicyFinalizer(p) {
			t.Errorf("finalizers = %v", p.Finalizers)
		}
		if !meta.IsStatusConditionTrue(p.Status.Conditions, kubeoceanv1alpha1.ResourceLeasingPolicyConditionValid) {
			t.Errorf("Valid is not True: %+v", p.Status.Conditions)
		}
		active := meta.FindStatusCondition(p.Status.Conditions, kubeoceanv1alpha1.ResourceLeasingPolicyConditionActive)
		if active == nil || active.Status != metav1.ConditionTrue || active.Reason != kubeoceanv1alpha1.ReasonInTimeWindow {
			t.Errorf("Active = %+v", active)
		}
		if w := p.Status.ActiveTimeWindow; w == nil || w.Start != window.Start || w.End != window.End {
			t.Errorf("activeTimeWindow = %+v, want %+v", w, window)
		}
		if next := p.Status.NextTransitionTime; next == nil || time.Until(next.Time) <= 0 || time.Until(next.Time) > time.Hour {
			t.Errorf("nextTransitionTime = %v, want the window's end within the hour", next)
		}
		if p.Status.ObservedGeneration != p.Generation {
			t.Errorf("observedGeneration = %d, generation %d", p.Status.ObservedGeneration, p.Generation)
		}
		env.waitForEvent(t, name, kubeoceanv1alpha1.EventPolicyActivated)
	})

	t.Run("a policy outside its windows is Inactive until the next one opens", func(t *testing.T) {
		name := env.binding + "-inactive"
		env.createPolicy(t, name, kubeoceanv1alpha1.ResourceLeasingPolicySpec{Cluster: env.binding,
			TimeWindows: []kubeoceanv1alpha1.TimeWindow{clockWindow(2*time.Hour, 3*time.Hour)}})

		p := env.waitForPolicy(t, name, "it is Inactive", func(p *kubeoceanv1alpha1.ResourceLeasingPolicy) bool {
			return p.Status.Phase == kubeoceanv1alpha1.ResourceLeasingPolicyInactive
		})
		active := meta.FindStatusCondition(p.Status.Conditions, kubeoceanv1alpha1.ResourceLeasingPolicyConditionActive)
		if active == nil || active.Status != metav1.ConditionFalse || active.Reason != kubeoceanv1alpha1.ReasonOutsideTimeWindows {
			t.Errorf("Active = %+v", active)
		}
		if p.Status.ActiveTimeWindow != nil {
			t.Errorf("activeTimeWindow = %+v, want none", p.Status.ActiveTimeWindow)
		}
		if next := p.Status.NextTransitionTime; next == nil || time.Until(next.Time) < time.Hour+58*time.Minute || time.Until(next.Time) > 2*time.Hour {
			t.Errorf("nextTransitionTime = %v, want the window's start in two hours", next)
		}
	})

	t.Run("an unknown time zone fails the policy", func(t *testing.T) {
		name := env.binding + "-invalid"
		env.createPolicy(t, name, kubeoceanv1alpha1.ResourceLeasingPolicySpec{Cluster: env.binding, TimeZone: "Mars/Olympus_Mons"})

		p := env.waitForPolicy(t, name, "it is Failed", func(p *kubeoceanv1alpha1.ResourceLeasingPolicy) bool {
			return p.Status.Phase == kubeoceanv1alpha1.ResourceLeasingPolicyFailed
		})
		valid := meta.FindStatusCondition(p.Status.Conditions, kubeoceanv1alpha1.ResourceLeasingPolicyConditionValid)
		if valid == nil || valid.Status != metav1.ConditionFalse || valid.Reason != kubeoceanv1alpha1.ReasonInvalidSpec ||
			!strings.Contains(valid.Message, `spec.timeZone: Invalid value: "Mars/Olympus_Mons"`) {
			t.Errorf("Valid = %+v", valid)
		}
		event := env.waitForEvent(t, name, kubeoceanv1alpha1.EventInvalidPolicy)
		if event.Type != corev1.EventTypeWarning || !strings.Contains(event.Message, "Mars/Olympus_Mons") {
			t.Errorf("event = %s %q", event.Type, event.Message)
		}
	})

	t.Run("a deleted policy stays until no virtual node names it", func(t *testing.T) {
		name := env.binding + "-reclaim"
		env.createPolicy(t, name, kubeoceanv1alpha1.ResourceLeasingPolicySpec{Cluster: env.binding})
		env.waitForPolicy(t, name, "it has the finalizer", hasPolicyFinalizer)
		node := env.createVirtualNode(t, "physical-node-1", name)

		if err := env.policies.KubeoceanV1alpha1().ResourceLeasingPolicies().Delete(t.Context(), name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		env.waitForPolicy(t, name, "it is being deleted", func(p *kubeoceanv1alpha1.ResourceLeasingPolicy) bool { return p.DeletionTimestamp != nil })
		time.Sleep(2 * time.Second) // time enough for a wrong release
		if p := env.getPolicy(t, name); !hasPolicyFinalizer(p) {
			t.Fatalf("the finalizer went while virtual node %s still names the policy", node)
		}

		patch := fmt.Appendf(nil, `{"metadata":{"annotations":{%q:null}}}`, kubeoceanv1alpha1.AnnotationResourceLeasingPolicy)
		if _, err := env.virtualKube.CoreV1().Nodes().Patch(t.Context(), node, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
		err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
			_, err := env.policies.KubeoceanV1alpha1().ResourceLeasingPolicies().Get(ctx, name, metav1.GetOptions{})
			return apierrors.IsNotFound(err), nil
		})
		if err != nil {
			t.Fatal("the policy is not gone after the last virtual node let go of it")
		}
		env.waitForEvent(t, name, kubeoceanv1alpha1.EventPolicyReclaimed)
	})

	t.Run("policies of other bindings are left alone", func(t *testing.T) {
		name := env.binding + "-foreign"
		env.createPolicy(t, name, kubeoceanv1alpha1.ResourceLeasingPolicySpec{Cluster: env.binding + "-other"})
		// The controller is running and settled the policies above; give it
		// time to wrongly touch this one.
		time.Sleep(2 * time.Second)
		if p := env.getPolicy(t, name); len(p.Finalizers) > 0 || p.Status.Phase != "" {
			t.Errorf("a policy of another binding was touched: finalizers %v, status %+v", p.Finalizers, p.Status)
		}
	})
}

// createVirtualNode creates the virtual node the node controller would make
// for physicalNode, lent by policyName, and deletes it when the test ends.
func (env *policyEnv) createVirtualNode(t *testing.T, physicalNode, policyName string) string {
	t.Helper()
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{
		Name: kubeoceanv1alpha1.VirtualNodeName(env.clusterID, physicalNode),
		Labels: map[string]string{
			kubeoceanv1alpha1.LabelManagedBy:        kubeoceanv1alpha1.ManagedByKubeocean,
			kubeoceanv1alpha1.LabelClusterID:        env.clusterID,
			kubeoceanv1alpha1.LabelClusterBinding:   env.binding,
			kubeoceanv1alpha1.LabelPhysicalNodeName: physicalNode,
		},
		Annotations: map[string]string{kubeoceanv1alpha1.AnnotationResourceLeasingPolicy: policyName},
	}}
	if _, err := env.virtualKube.CoreV1().Nodes().Create(t.Context(), node, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		err := env.virtualKube.CoreV1().Nodes().Delete(context.Background(), node.Name, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("deleting virtual node %s: %v", node.Name, err)
		}
	})
	return node.Name
}
