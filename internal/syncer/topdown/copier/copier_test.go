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

package copier

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/kubeocean/kubeocean/internal/syncer/topdown/dependents"
	"github.com/kubeocean/kubeocean/internal/syncer/topdown/dependents/dependentstest"
)

const grace = time.Minute

// newControllers builds the controllers over e.
func newControllers(t *testing.T, e *dependentstest.Env) *Controllers {
	t.Helper()
	v, p := e.VirtualInformers.Core().V1(), e.PhysicalInformers.Core().V1()
	c, err := New(Options{
		ClusterID: dependentstest.ClusterID, MountNamespace: dependentstest.MountNamespace, Syncer: e.Syncer,
		VirtualConfigMaps: v.ConfigMaps(), PhysicalConfigMaps: p.ConfigMaps(),
		VirtualSecrets: v.Secrets(), PhysicalSecrets: p.Secrets(),
		VirtualPVCs: v.PersistentVolumeClaims(), PhysicalPVCs: p.PersistentVolumeClaims(),
		VirtualPVs: v.PersistentVolumes(), PhysicalPVs: p.PersistentVolumes(),
		VirtualPods: v.Pods(), VirtualNodes: v.Nodes(),
		GracePeriod: grace, Clock: e.Clock,
	})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// reconcile reconciles key and returns the requeue the controller asked.
func reconcile[T metav1.Object](t *testing.T, e *dependentstest.Env, c *dependents.Controller[T], key cache.ObjectName) time.Duration {
	t.Helper()
	result, err := c.Reconcile(e.Context(), key)
	if err != nil {
		t.Fatalf("reconcile %v: %v", key, err)
	}
	return result.RequeueAfter
}

// TestNamesStay pins the controllers' names: they name the queues and the
// metrics operators watch (docs/operations.md).
func TestNamesStay(t *testing.T) {
	c := newControllers(t, dependentstest.New(t, nil, nil))
	for got, want := range map[string]string{
		c.ConfigMaps.Name(): "topdown-configmap",
		c.Secrets.Name():    "topdown-secret",
		c.PVCs.Name():       "topdown-pvc",
		c.PVs.Name():        "topdown-pv",
	} {
		if got != want {
			t.Errorf("controller name %q, want %q", got, want)
		}
	}
}

func TestNewRequiresEveryKindsInformers(t *testing.T) {
	e := dependentstest.New(t, nil, nil)
	v := e.VirtualInformers.Core().V1()
	_, err := New(Options{
		ClusterID: dependentstest.ClusterID, MountNamespace: dependentstest.MountNamespace, Syncer: e.Syncer,
		VirtualConfigMaps: v.ConfigMaps(), VirtualPods: v.Pods(), VirtualNodes: v.Nodes(),
	})
	if err == nil {
		t.Fatal("New without the Secret, PVC and PV informers succeeded")
	}
}
