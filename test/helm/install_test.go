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

package helm

import (
	"context"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/restmapper"

	"github.com/kubeocean/kubeocean/test/controlplane"
	"github.com/kubeocean/kubeocean/test/stack"
)

// TestInstall installs both charts with helm into the virtual and the
// physical control plane and checks that every object of each release is
// there as rendered, CRDs included; then switches the virtual release to
// in-process mode, which must add and remove the RBAC of each mode, and
// runs the demo's sample application through a manager with nothing but
// what the charts installed.
func TestInstall(t *testing.T) {
	install := func(t *testing.T, c *controlplane.Cluster, release, chart string, args ...string) objects {
		t.Helper()
		_, err := runHelm(t.Context(), append([]string{"upgrade", "--install", release, chart,
			"--kubeconfig", c.KubeconfigPath, "--namespace", systemNamespace, "--create-namespace"}, args...)...)
		if err != nil {
			t.Fatal(err)
		}
		out, err := runHelm(t.Context(), "get", "manifest", release, "--kubeconfig", c.KubeconfigPath, "--namespace", systemNamespace)
		if err != nil {
			t.Fatal(err)
		}
		return parseObjects(t, out)
	}

	t.Run("physical", func(t *testing.T) {
		release := install(t, physical, "kubeocean-physical", physicalChart)
		checkLive(t, physical, release)
		checkLive(t, physical, helmTemplate(t, physicalChart).only("CustomResourceDefinition"))
		if _, ok := release["Namespace kubeocean-worker"]; !ok {
			t.Errorf("the release has no mount namespace: %v", release.keys())
		}
	})

	var deploymentMode objects
	t.Run("virtual, deployment mode", func(t *testing.T) {
		deploymentMode = install(t, virtual, "kubeocean", virtualChart)
		checkLive(t, virtual, deploymentMode)
		checkLive(t, virtual, helmTemplate(t, virtualChart).only("CustomResourceDefinition"))
		for _, k := range []string{"Deployment kubeocean-system/kubeocean-manager", "ServiceAccount kubeocean-system/kubeocean-syncer",
			"ConfigMap kubeocean-system/kubeocean-syncer-template", "ClusterRole kubeocean-manager"} {
			if _, ok := deploymentMode[k]; !ok {
				t.Errorf("the release has no %s", k)
			}
		}
	})
	t.Run("virtual, in-process mode", func(t *testing.T) {
		inProcess := install(t, virtual, "kubeocean", virtualChart, "--set", "syncerMode=in-process")
		checkLive(t, virtual, inProcess)
		if _, ok := inProcess["ClusterRoleBinding kubeocean-manager-runs-syncers"]; !ok {
			t.Errorf("in-process mode without the manager's syncer grants: %v", inProcess.keys())
		}
		gone := 0
		for k, obj := range deploymentMode {
			if _, ok := inProcess[k]; !ok {
				gone++
				checkGone(t, virtual, k, obj)
			}
		}
		if gone == 0 {
			t.Error("in-process mode kept every object of deployment mode")
		}
	})
	t.Run("sample app runs", func(t *testing.T) {
		sampleAppRuns(t)
	})
}

// sampleAppRuns is the demo on the charts' objects: the manager runs as
// its ServiceAccount with the arguments of the in-process mode, the
// physical cluster is bound with the token of the chart's syncer identity,
// and the sample application must reach Running on virtual nodes.
func sampleAppRuns(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	step := func(what string, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	step("physical nodes", world.CreateNodes(ctx, []string{"worker-a", "worker-b", "worker-c"}, map[string]string{stack.LendableLabel: "true"}))
	kubeconfig, err := world.VirtualKubeconfig(ctx, stack.SystemNamespace, stack.ManagerAccount)
	step("manager kubeconfig", err)
	manager, err := world.StartBinary("kubeocean-manager", managerBin, kubeconfig,
		"--syncer-mode=in-process", "--leader-elect", "--leader-elect-resource-namespace="+stack.SystemNamespace)
	step("starting the manager", err)
	defer func() {
		if t.Failed() {
			t.Logf("manager log:\n%s", manager.Tail(40))
		}
	}()
	physicalKubeconfig, err := world.PhysicalSyncerKubeconfig(ctx)
	step("the syncer's kubeconfig from the chart's token Secret", err)
	step("binding", world.Bind(ctx, physicalKubeconfig))
	step("binding Ready", world.WaitBindingCondition(ctx, "Ready", metav1.ConditionTrue))
	step("virtual nodes Ready", world.WaitVirtualNodesReady(ctx, 3))
	step("deploying the sample app", world.DeployApp(ctx))
	step("sample app Running", world.WaitAppRunning(ctx))
}

func (o objects) only(kind string) objects {
	out := objects{}
	for k, obj := range o {
		if obj["kind"] == kind {
			out[k] = obj
		}
	}
	return out
}

// resourceOf finds the API resource of a rendered object.
func resourceOf(t *testing.T, c *controlplane.Cluster, obj map[string]any) (dynamic.ResourceInterface, string) {
	t.Helper()
	u := unstructured.Unstructured{Object: obj}
	dc, err := discovery.NewDiscoveryClientForConfig(c.Config())
	if err != nil {
		t.Fatal(err)
	}
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(dc))
	gvk := u.GroupVersionKind()
	m, err := mapper.RESTMapping(schema.GroupKind{Group: gvk.Group, Kind: gvk.Kind}, gvk.Version)
	if err != nil {
		t.Fatalf("%s: %v", keyOf(obj), err)
	}
	client := dynamic.NewForConfigOrDie(c.Config()).Resource(m.Resource)
	if u.GetNamespace() != "" {
		return client.Namespace(u.GetNamespace()), u.GetName()
	}
	return client, u.GetName()
}

// checkLive reads every object back from the cluster: each field rendered
// must be there with its value.
func checkLive(t *testing.T, c *controlplane.Cluster, want objects) {
	t.Helper()
	for _, k := range want.keys() {
		client, name := resourceOf(t, c, want[k])
		live, err := client.Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			t.Errorf("%s in %s: %v", k, c.Name, err)
			continue
		}
		if diff := subset(live.Object, want[k], ""); len(diff) > 0 {
			t.Errorf("%s in %s differs from the chart:\n%s", k, c.Name, joinLines(diff))
		}
	}
}

func checkGone(t *testing.T, c *controlplane.Cluster, key string, obj map[string]any) {
	t.Helper()
	client, name := resourceOf(t, c, obj)
	if _, err := client.Get(context.Background(), name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("%s is still in %s after switching to in-process mode (%v)", key, c.Name, err)
	}
}
