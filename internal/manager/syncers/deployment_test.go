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
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	kubeinformers "k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2/ktesting"
	"k8s.io/utils/ptr"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
	"github.com/kubeocean/kubeocean/internal/manager/syncertemplate"
)

const testTemplate = `apiVersion: v1
kind: ServiceAccount
metadata:
  name: {{ .Name }}
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .Name }}
spec:
  replicas: 1
  selector:
    matchLabels: {app: {{ .BindingName }}}
  template:
    metadata:
      labels: {app: {{ .BindingName }}}
      annotations: {kubeconfig: {{ quote .KubeconfigHash }}}
    spec:
      serviceAccountName: {{ .Name }}
      containers:
      - name: syncer
        image: {{ quote .Image }}
        args: {{ json .Args }}
`

// deploymentFixture is a Deployments runner over a fake clientset whose
// informer caches are seeded by hand.
type deploymentFixture struct {
	t           *testing.T
	ctx         context.Context
	client      *fake.Clientset
	deployments cache.Indexer
	accounts    cache.Indexer
	recorder    *record.FakeRecorder
	templateDir string
	runner      *Deployments
	changed     []string
}

func newDeploymentFixture(t *testing.T, image string, objects ...runtime.Object) *deploymentFixture {
	t.Helper()
	f := &deploymentFixture{t: t, client: fake.NewClientset(objects...), recorder: record.NewFakeRecorder(50), templateDir: t.TempDir()}
	_, f.ctx = ktesting.NewTestContext(t)
	f.writeTemplate(testTemplate)
	source, err := syncertemplate.NewSource(f.templateDir)
	if err != nil {
		t.Fatal(err)
	}
	factory := kubeinformers.NewSharedInformerFactory(f.client, 0)
	deployments, accounts, configMaps := factory.Apps().V1().Deployments(), factory.Core().V1().ServiceAccounts(), factory.Core().V1().ConfigMaps()
	f.runner, err = NewDeployments(DeploymentsOptions{
		Namespace: "kubeocean-system", Image: image, ServiceAccountName: "unused", Templates: source,
		Args:              []string{"--virtual-apiserver-address=10.0.0.1:443"},
		DeploymentsClient: f.client.AppsV1(), ServiceAccountsClient: f.client.CoreV1(), ConfigMapsClient: f.client.CoreV1(),
		Deployments: deployments, ServiceAccounts: accounts, ConfigMaps: configMaps,
		Recorder: f.recorder, OnChange: func(name string) { f.changed = append(f.changed, name) },
	})
	if err != nil {
		t.Fatal(err)
	}
	f.deployments, f.accounts = deployments.Informer().GetIndexer(), accounts.Informer().GetIndexer()
	for _, obj := range objects {
		f.cache(obj)
	}
	return f
}

func (f *deploymentFixture) writeTemplate(content string) {
	f.t.Helper()
	if err := os.WriteFile(filepath.Join(f.templateDir, "syncer.yaml"), []byte(content), 0o644); err != nil {
		f.t.Fatal(err)
	}
}

func (f *deploymentFixture) cache(obj runtime.Object) {
	f.t.Helper()
	var err error
	switch obj.(type) {
	case *appsv1.Deployment:
		err = f.deployments.Update(obj)
	case *corev1.ServiceAccount:
		err = f.accounts.Update(obj)
	}
	if err != nil {
		f.t.Fatal(err)
	}
}

// ensure runs Ensure and returns the writes it made, feeding them back into
// the caches as the informers would.
func (f *deploymentFixture) ensure(b *kubeoceanv1alpha1.ClusterBinding) (State, []clienttesting.Action) {
	f.t.Helper()
	f.client.ClearActions()
	state, err := f.runner.Ensure(f.ctx, b, "hash-1")
	if err != nil {
		f.t.Fatalf("Ensure: %v", err)
	}
	actions := f.client.Actions()
	for _, a := range actions {
		switch a := a.(type) {
		case clienttesting.CreateAction:
			f.cache(a.GetObject())
		case clienttesting.UpdateAction:
			f.cache(a.GetObject())
		}
	}
	return state, actions
}

func testBinding() *kubeoceanv1alpha1.ClusterBinding {
	return &kubeoceanv1alpha1.ClusterBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "worker-1", UID: types.UID("uid-worker-1"), Generation: 1},
		Spec:       kubeoceanv1alpha1.ClusterBindingSpec{ClusterID: "w1", MountNamespace: "mount-w1"},
	}
}

func verbs(actions []clienttesting.Action) []string {
	var got []string
	for _, a := range actions {
		got = append(got, a.GetVerb()+" "+a.GetResource().Resource)
	}
	return got
}

func TestDeploymentsEnsureCreatesOnceAndDecorates(t *testing.T) {
	f := newDeploymentFixture(t, "syncer:v1")
	b := testBinding()

	state, actions := f.ensure(b)

	if got := verbs(actions); !slices.Equal(got, []string{"create serviceaccounts", "create deployments"}) {
		t.Fatalf("writes = %v", got)
	}
	if state.Phase != PhaseStarting {
		t.Errorf("state = %+v, want Starting", state)
	}
	d := actions[1].(clienttesting.CreateAction).GetObject().(*appsv1.Deployment)
	if d.Namespace != "kubeocean-system" || d.Name != "kubeocean-syncer-worker-1" {
		t.Errorf("deployment %s/%s", d.Namespace, d.Name)
	}
	if d.Labels[kubeoceanv1alpha1.LabelAppManagedBy] != kubeoceanv1alpha1.AppManagedByManager || d.Labels[kubeoceanv1alpha1.LabelClusterBinding] != "worker-1" || d.Annotations[kubeoceanv1alpha1.AnnotationSyncerRenderHash] == "" {
		t.Errorf("deployment not decorated: labels %v annotations %v", d.Labels, d.Annotations)
	}
	owner := metav1.GetControllerOf(d)
	if owner == nil || owner.UID != b.UID || owner.Kind != "ClusterBinding" || owner.APIVersion != "kubeocean.io/v1alpha1" {
		t.Errorf("controller owner = %+v", owner)
	}
	container := d.Spec.Template.Spec.Containers[0]
	if container.Image != "syncer:v1" || !slices.Contains(container.Args, "--cluster-binding=worker-1") ||
		!slices.Contains(container.Args, "--leader-elect-resource-namespace=kubeocean-system") ||
		container.Args[len(container.Args)-1] != "--virtual-apiserver-address=10.0.0.1:443" {
		t.Errorf("container = %+v", container)
	}
	if d.Spec.Template.Annotations["kubeconfig"] != "hash-1" {
		t.Errorf("pod template does not carry the kubeconfig hash: %v", d.Spec.Template.Annotations)
	}
	if events := drain(f.recorder); len(events) != 2 || !strings.Contains(events[1], kubeoceanv1alpha1.EventSyncerCreated) {
		t.Errorf("events = %v", events)
	}

	if _, actions := f.ensure(b); len(actions) != 0 {
		t.Errorf("second Ensure wrote %v", verbs(actions))
	}
}

func TestDeploymentsEnsureRollsOutChanges(t *testing.T) {
	f := newDeploymentFixture(t, "syncer:v1")
	b := testBinding()
	f.ensure(b)

	t.Run("a template change updates the Deployment only", func(t *testing.T) {
		f.writeTemplate(strings.Replace(testTemplate, "name: syncer", "name: syncer-renamed", 1))
		if _, err := f.runner.opts.Templates.(*syncertemplate.Source).Reload(); err != nil {
			t.Fatal(err)
		}
		_, actions := f.ensure(b)
		if got := verbs(actions); !slices.Equal(got, []string{"update deployments"}) {
			t.Fatalf("writes = %v", got)
		}
		d := actions[0].(clienttesting.UpdateAction).GetObject().(*appsv1.Deployment)
		if d.Spec.Template.Spec.Containers[0].Name != "syncer-renamed" {
			t.Errorf("updated container = %+v", d.Spec.Template.Spec.Containers[0])
		}
	})
	t.Run("an image change updates it", func(t *testing.T) {
		f.runner.opts.Image = "syncer:v2"
		_, actions := f.ensure(b)
		if got := verbs(actions); !slices.Equal(got, []string{"update deployments"}) {
			t.Fatalf("writes = %v", got)
		}
	})
	t.Run("a deleted Deployment comes back", func(t *testing.T) {
		d, _, _ := f.deployments.GetByKey("kubeocean-system/kubeocean-syncer-worker-1")
		if err := f.deployments.Delete(d); err != nil {
			t.Fatal(err)
		}
		gvr := appsv1.SchemeGroupVersion.WithResource("deployments")
		if err := f.client.Tracker().Delete(gvr, "kubeocean-system", "kubeocean-syncer-worker-1"); err != nil {
			t.Fatal(err)
		}
		_, actions := f.ensure(b)
		if got := verbs(actions); !slices.Equal(got, []string{"create deployments"}) {
			t.Fatalf("writes = %v", got)
		}
	})
}

func TestDeploymentsEnsureLeavesForeignObjects(t *testing.T) {
	foreign := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "kubeocean-system", Name: "kubeocean-syncer-worker-1"}}
	f := newDeploymentFixture(t, "syncer:v1", foreign)

	state, actions := f.ensure(testBinding())

	if got := verbs(actions); !slices.Equal(got, []string{"create serviceaccounts"}) {
		t.Fatalf("writes = %v; the foreign Deployment must not be touched", got)
	}
	if state.Phase != PhaseFailed || !strings.Contains(state.Message, "is not the syncer of ClusterBinding worker-1") || state.RetryAfter == 0 {
		t.Errorf("state = %+v", state)
	}
}

func TestDeploymentsEnsureTemplateErrorIsReported(t *testing.T) {
	f := newDeploymentFixture(t, "syncer:v1")
	// Renders for the sample binding checked at load, not for worker-1.
	f.writeTemplate(testTemplate + `        env: [{name: X, value: "{{ if ne .BindingName "sample" }}{{ index .Args 9 }}{{ end }}"}]` + "\n")
	if _, err := f.runner.opts.Templates.(*syncertemplate.Source).Reload(); err != nil {
		t.Fatal(err)
	}

	state, actions := f.ensure(testBinding())

	if len(actions) != 0 || state.Phase != PhaseFailed || state.Reason != kubeoceanv1alpha1.ReasonSyncerTemplateError || !strings.Contains(state.Message, "index") {
		t.Fatalf("state %+v after writes %v; want a template error and no write", state, verbs(actions))
	}
}

func TestDeploymentsEnsureDuringForegroundDeletion(t *testing.T) {
	f := newDeploymentFixture(t, "syncer:v1")
	b := testBinding()
	now := metav1.Now()
	b.DeletionTimestamp = &now
	b.Finalizers = []string{metav1.FinalizerDeleteDependents, kubeoceanv1alpha1.FinalizerClusterBindingSyncer}

	state, actions := f.ensure(b)

	if len(actions) != 0 || state.Phase != PhaseFailed || !strings.Contains(state.Message, "foreground") {
		t.Fatalf("state %+v after writes %v; want no syncer recreated for the garbage collector to delete", state, verbs(actions))
	}
}

func TestDeploymentsRemove(t *testing.T) {
	f := newDeploymentFixture(t, "syncer:v1")
	b := testBinding()
	f.ensure(b)
	stale := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "kubeocean-system", Name: "old-name", UID: "uid-old",
		Labels: map[string]string{kubeoceanv1alpha1.LabelAppManagedBy: kubeoceanv1alpha1.AppManagedByManager, kubeoceanv1alpha1.LabelClusterBinding: "worker-1"}}}
	f.cache(stale)
	f.client.ClearActions()

	gone, err := f.runner.Remove(f.ctx, b)

	if err != nil || gone {
		t.Fatalf("Remove = %v, %v; want not gone yet", gone, err)
	}
	deletes := 0
	for _, a := range f.client.Actions() {
		del, ok := a.(clienttesting.DeleteAction)
		if !ok {
			t.Fatalf("unexpected write %v", a)
		}
		deletes++
		opts := del.GetDeleteOptions()
		if opts.Preconditions == nil || opts.Preconditions.UID == nil || ptr.Deref(opts.PropagationPolicy, "") != metav1.DeletePropagationForeground {
			t.Errorf("delete of %s without UID precondition or foreground propagation: %+v", del.GetName(), opts)
		}
	}
	if deletes != 2 {
		t.Errorf("%d deletes, want 2", deletes)
	}
	for _, key := range []string{"kubeocean-system/kubeocean-syncer-worker-1", "kubeocean-system/old-name"} {
		obj, _, _ := f.deployments.GetByKey(key)
		if err := f.deployments.Delete(obj); err != nil {
			t.Fatal(err)
		}
	}
	if gone, err := f.runner.Remove(f.ctx, b); !gone || err != nil {
		t.Fatalf("Remove after the Deployments went = %v, %v", gone, err)
	}
}

func TestDeploymentsPruneRenamed(t *testing.T) {
	f := newDeploymentFixture(t, "syncer:v1")
	b := testBinding()
	f.ensure(b)
	renamed := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "kubeocean-system", Name: "renamed", UID: "uid-renamed",
		Labels:          map[string]string{kubeoceanv1alpha1.LabelAppManagedBy: kubeoceanv1alpha1.AppManagedByManager, kubeoceanv1alpha1.LabelClusterBinding: "worker-1"},
		OwnerReferences: []metav1.OwnerReference{{Kind: "ClusterBinding", Name: "worker-1", UID: b.UID, Controller: ptr.To(true)}}}}
	f.cache(renamed)

	_, actions := f.ensure(b)

	if got := verbs(actions); !slices.Equal(got, []string{"delete deployments"}) || actions[0].(clienttesting.DeleteAction).GetName() != "renamed" {
		t.Fatalf("writes = %v, want the renamed Deployment deleted", got)
	}
}

func TestDeploymentState(t *testing.T) {
	deployment := func(mutate func(*appsv1.Deployment)) *appsv1.Deployment {
		d := &appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "syncer", Generation: 2},
			Spec:       appsv1.DeploymentSpec{Replicas: ptr.To[int32](2)},
			Status:     appsv1.DeploymentStatus{ObservedGeneration: 2, UpdatedReplicas: 2, AvailableReplicas: 1},
		}
		mutate(d)
		return d
	}
	now := metav1.Now()
	tests := []struct {
		name       string
		deployment *appsv1.Deployment
		want       Phase
		wantReason string
	}{
		{"not created yet", nil, PhaseStarting, kubeoceanv1alpha1.ReasonSyncerStarting},
		{"available", deployment(func(*appsv1.Deployment) {}), PhaseReady, kubeoceanv1alpha1.ReasonSyncerRunning},
		{"none available", deployment(func(d *appsv1.Deployment) { d.Status.AvailableReplicas = 0 }), PhaseStarting, kubeoceanv1alpha1.ReasonSyncerUnavailable},
		{"new generation not observed", deployment(func(d *appsv1.Deployment) { d.Status.ObservedGeneration = 1 }), PhaseStarting, kubeoceanv1alpha1.ReasonSyncerRollingOut},
		{"rolling out", deployment(func(d *appsv1.Deployment) { d.Status.UpdatedReplicas = 1 }), PhaseStarting, kubeoceanv1alpha1.ReasonSyncerRollingOut},
		{"progress deadline exceeded", deployment(func(d *appsv1.Deployment) {
			d.Status.Conditions = []appsv1.DeploymentCondition{{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionFalse, Reason: "ProgressDeadlineExceeded"}}
		}), PhaseFailed, kubeoceanv1alpha1.ReasonSyncerDeploymentFailed},
		{"stale failure of an older generation", deployment(func(d *appsv1.Deployment) {
			d.Status.ObservedGeneration = 1
			d.Status.Conditions = []appsv1.DeploymentCondition{{Type: appsv1.DeploymentReplicaFailure, Status: corev1.ConditionTrue}}
		}), PhaseStarting, kubeoceanv1alpha1.ReasonSyncerRollingOut},
		{"being deleted", deployment(func(d *appsv1.Deployment) { d.DeletionTimestamp = &now }), PhaseStarting, kubeoceanv1alpha1.ReasonSyncerDeploymentDeleting},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := deploymentState(tt.deployment)
			if got.Phase != tt.want || got.Reason != tt.wantReason || got.Message == "" {
				t.Errorf("state = %+v, want %s/%s", got, tt.want, tt.wantReason)
			}
		})
	}
}

func TestSyncerObjectHandlerMapsToBinding(t *testing.T) {
	f := newDeploymentFixture(t, "syncer:v1")
	handler := f.runner.handler()
	labelled := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "d", ResourceVersion: "1",
		Labels: map[string]string{kubeoceanv1alpha1.LabelClusterBinding: "worker-1"}}}
	handler.OnDelete(cache.DeletedFinalStateUnknown{Obj: labelled})
	handler.OnAdd(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "unlabelled"}}, false)
	if !slices.Equal(f.changed, []string{"worker-1"}) {
		t.Errorf("changed = %v", f.changed)
	}
}

func drain(r *record.FakeRecorder) []string {
	var got []string
	for {
		select {
		case e := <-r.Events:
			got = append(got, e)
		default:
			return got
		}
	}
}
