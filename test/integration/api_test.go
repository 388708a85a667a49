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

package integration

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/utils/ptr"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
	kubeoceanclient "github.com/kubeocean/kubeocean/generated/clientset/versioned"
	kubeoceaninformers "github.com/kubeocean/kubeocean/generated/informers/externalversions"
)

var (
	bindingsGVR = kubeoceanv1alpha1.SchemeGroupVersion.WithResource("clusterbindings")
	policiesGVR = kubeoceanv1alpha1.SchemeGroupVersion.WithResource("resourceleasingpolicies")
)

func TestTypedClientsAndInformers(t *testing.T) {
	ctx := t.Context()
	virtual := kubeoceanclient.NewForConfigOrDie(virtualCluster.Config())
	physical := kubeoceanclient.NewForConfigOrDie(physicalCluster.Config())

	factory := kubeoceaninformers.NewSharedInformerFactory(virtual, 0)
	bindings := factory.Kubeocean().V1alpha1().ClusterBindings().Lister()
	physicalFactory := kubeoceaninformers.NewSharedInformerFactory(physical, 0)
	policies := physicalFactory.Kubeocean().V1alpha1().ResourceLeasingPolicies().Lister()
	informerCtx, stop := context.WithCancel(ctx)
	defer func() { stop(); factory.Shutdown(); physicalFactory.Shutdown() }()
	factory.Start(informerCtx.Done())
	physicalFactory.Start(informerCtx.Done())
	factory.WaitForCacheSync(informerCtx.Done())
	physicalFactory.WaitForCacheSync(informerCtx.Done())

	binding := &kubeoceanv1alpha1.ClusterBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "worker-typed"},
		Spec: kubeoceanv1alpha1.ClusterBindingSpec{
			ClusterID:         "cls-typed",
			SecretRef:         kubeoceanv1alpha1.SecretReference{Name: "worker-kubeconfig", Namespace: "kubeocean-system"},
			MountNamespace:    "kubeocean-worker",
			ServiceNamespaces: []string{"default"},
		},
	}
	created, err := virtual.KubeoceanV1alpha1().ClusterBindings().Create(ctx, binding, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating a valid ClusterBinding: %v", err)
	}
	created.Status.Phase = kubeoceanv1alpha1.ClusterBindingPending
	created.Status.ObservedGeneration = created.Generation
	if _, err := virtual.KubeoceanV1alpha1().ClusterBindings().UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("updating status: %v", err)
	}
	got, err := virtual.KubeoceanV1alpha1().ClusterBindings().Get(ctx, "worker-typed", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got.Spec.ClusterID != "cls-typed" || got.Status.Phase != kubeoceanv1alpha1.ClusterBindingPending {
		t.Fatalf("read back %+v", got)
	}

	policy := &kubeoceanv1alpha1.ResourceLeasingPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "nights"},
		Spec: kubeoceanv1alpha1.ResourceLeasingPolicySpec{
			Cluster:     "worker-typed",
			TimeZone:    "Europe/Berlin",
			TimeWindows: []kubeoceanv1alpha1.TimeWindow{{Start: "22:00", End: "06:00", Days: []kubeoceanv1alpha1.DayOfWeek{"friday"}}},
			ResourceLimits: []kubeoceanv1alpha1.ResourceLimit{
				{Resource: "cpu", Percent: ptr.To[int32](50)},
			},
		},
	}
	if _, err := physical.KubeoceanV1alpha1().ResourceLeasingPolicies().Create(ctx, policy, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating a valid ResourceLeasingPolicy: %v", err)
	}

	eventually(t, "the listers see both objects", func() bool {
		b, errB := bindings.Get("worker-typed")
		p, errP := policies.Get("nights")
		return errB == nil && errP == nil && b.Status.Phase == kubeoceanv1alpha1.ClusterBindingPending &&
			p.Spec.TimeWindows[0].Start == "22:00"
	})

	if err := virtual.KubeoceanV1alpha1().ClusterBindings().Delete(ctx, "worker-typed", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the lister sees the deletion", func() bool {
		_, err := bindings.Get("worker-typed")
		return apierrors.IsNotFound(err)
	})
}

func TestDiscoveryShowsShortNamesAndScope(t *testing.T) {
	client := discovery.NewDiscoveryClientForConfigOrDie(virtualCluster.Config())
	list, err := client.ServerResourcesForGroupVersion(kubeoceanv1alpha1.SchemeGroupVersion.String())
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"clusterbindings": "cb", "resourceleasingpolicies": "rlp"}
	for _, r := range list.APIResources {
		short, ok := want[r.Name]
		if !ok {
			continue
		}
		if r.Namespaced || !slices.Contains(r.ShortNames, short) {
			t.Errorf("%s: namespaced=%v shortNames=%v, want cluster-scoped with %q", r.Name, r.Namespaced, r.ShortNames, short)
		}
		delete(want, r.Name)
	}
	if len(want) > 0 {
		t.Errorf("resources not served: %v", want)
	}
}

func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	err := wait.PollUntilContextTimeout(t.Context(), 50*time.Millisecond, 30*time.Second, true,
		func(context.Context) (bool, error) { return cond(), nil })
	if err != nil {
		t.Fatalf("timed out waiting until %s", what)
	}
}

// object builds an unstructured kubeocean.io object, the way kubectl sends
// what a user wrote, so that omitted fields really are omitted.
func object(kind, name string, spec map[string]any) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": kubeoceanv1alpha1.SchemeGroupVersion.String(),
		"kind":       kind,
		"metadata":   map[string]any{"name": name},
		"spec":       spec,
	}}
}

func createRejected(t *testing.T, client dynamic.Interface, gvr schema.GroupVersionResource, obj *unstructured.Unstructured, wantMessages ...string) {
	t.Helper()
	_, err := client.Resource(gvr).Create(t.Context(), obj, metav1.CreateOptions{})
	assertRejected(t, err, wantMessages...)
}

func assertRejected(t *testing.T, err error, wantMessages ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("accepted, want rejected with %q", wantMessages)
	}
	if !apierrors.IsInvalid(err) {
		t.Fatalf("rejected with %v, want an Invalid error", err)
	}
	for _, want := range wantMessages {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("message %q does not contain %q", err.Error(), want)
		}
	}
}
