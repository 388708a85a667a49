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
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilrand "k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2/ktesting"
	"k8s.io/utils/ptr"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
	kubeoceanclient "github.com/kubeocean/kubeocean/generated/clientset/versioned"
	"github.com/kubeocean/kubeocean/internal/events"
	"github.com/kubeocean/kubeocean/internal/syncer/bottomup/csinode"
	"github.com/kubeocean/kubeocean/internal/syncer/bottomup/lease"
	"github.com/kubeocean/kubeocean/pkg/informers"
	"github.com/kubeocean/kubeocean/test/testenv"
)

// nodeMonitorGracePeriod is kube-controller-manager's default
// --node-monitor-grace-period (v1.36): a node whose Lease and Ready
// condition have not moved for this long is marked Unknown.
const nodeMonitorGracePeriod = 50 * time.Second

// leaseCSINodeEnv runs the lease and CSINode controllers of one binding
// against the shared clusters, wired as the syncer wires them.
type leaseCSINodeEnv struct {
	clusterID         string
	virtual, physical kubernetes.Interface
}

func startLeaseCSINodeControllers(t *testing.T, clusterID string) *leaseCSINodeEnv {
	t.Helper()
	env := &leaseCSINodeEnv{clusterID: clusterID, virtual: virtualCluster.Clientset(), physical: physicalCluster.Clientset()}
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithCancel(ctx)

	virtual := informers.NewCluster("virtual", env.virtual, kubeoceanclient.NewForConfigOrDie(virtualCluster.Config()), 0)
	physical := informers.NewCluster("physical", env.physical, kubeoceanclient.NewForConfigOrDie(physicalCluster.Config()), 0)
	ours := kubeoceanv1alpha1.LabelManagedBy + "=" + kubeoceanv1alpha1.ManagedByKubeocean + "," +
		kubeoceanv1alpha1.LabelClusterID + "=" + clusterID
	virtualScoped := virtual.Kube(informers.Scope{LabelSelector: ours})
	virtualLeases := virtual.Kube(informers.Scope{Namespace: corev1.NamespaceNodeLease, LabelSelector: ours})
	physicalAll := physical.Kube(informers.Scope{})
	recorder, stopRecorder := events.NewRecorder(ctx, env.virtual, "kubeocean-syncer")

	leases, err := lease.New(lease.Options{
		ClusterID:     clusterID,
		Client:        env.virtual.CoordinationV1(),
		VirtualNodes:  virtualScoped.Core().V1().Nodes(),
		Leases:        virtualLeases.Coordination().V1().Leases(),
		PhysicalNodes: physicalAll.Core().V1().Nodes(),
	})
	if err != nil {
		t.Fatal(err)
	}
	csiNodes, err := csinode.New(csinode.Options{
		ClusterID:        clusterID,
		VirtualClient:    env.virtual.StorageV1(),
		PhysicalCSINodes: physicalAll.Storage().V1().CSINodes(),
		VirtualCSINodes:  virtualScoped.Storage().V1().CSINodes(),
		VirtualNodes:     virtualScoped.Core().V1().Nodes(),
		Recorder:         recorder,
	})
	if err != nil {
		t.Fatal(err)
	}
	virtual.Start(ctx)
	physical.Start(ctx)
	done := make(chan error, 2)
	go func() { done <- leases.Run(ctx, 2) }()
	go func() { done <- csiNodes.Run(ctx, 2) }()
	t.Cleanup(func() {
		cancel()
		for range 2 {
			if err := <-done; err != nil {
				t.Errorf("Run: %v", err)
			}
		}
		virtual.Shutdown()
		physical.Shutdown()
		stopRecorder()
	})
	return env
}

// createPhysicalNode creates a kwok node, waits until kwok made it Ready
// and deletes it when the test ends.
func (env *leaseCSINodeEnv) createPhysicalNode(t *testing.T, name string) {
	t.Helper()
	if _, err := env.physical.CoreV1().Nodes().Create(t.Context(), testenv.KwokNode(name, "8", "16Gi", nil), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { deleteIgnoringNotFound(t, env.physical.CoreV1().Nodes().Delete, name) })
	env.waitFor(t, "physical node "+name+" Ready", 30*time.Second, func(ctx context.Context) (bool, error) {
		node, err := env.physical.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		return err == nil && readyStatus(node) == corev1.ConditionTrue, nil
	})
}

// createVirtualNode creates, as the node controller would, a Ready virtual
// node standing for physicalName, and deletes it when the test ends.
func (env *leaseCSINodeEnv) createVirtualNode(t *testing.T, physicalName string) *corev1.Node {
	t.Helper()
	resources := corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse("4"),
		corev1.ResourceMemory: resource.MustParse("8Gi"),
		corev1.ResourcePods:   resource.MustParse("110"),
	}
	now := metav1.Now()
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name: kubeoceanv1alpha1.VirtualNodeName(env.clusterID, physicalName),
			Labels: map[string]string{
				kubeoceanv1alpha1.LabelManagedBy:        kubeoceanv1alpha1.ManagedByKubeocean,
				kubeoceanv1alpha1.LabelClusterID:        env.clusterID,
				kubeoceanv1alpha1.LabelClusterBinding:   "binding-" + env.clusterID,
				kubeoceanv1alpha1.LabelPhysicalNodeName: physicalName,
			},
		},
		Spec: corev1.NodeSpec{Taints: []corev1.Taint{{Key: kubeoceanv1alpha1.TaintVirtualNode, Effect: corev1.TaintEffectNoSchedule}}},
		Status: corev1.NodeStatus{
			Capacity: resources, Allocatable: resources,
			Conditions: []corev1.NodeCondition{{
				Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "PhysicalNodeReady",
				LastHeartbeatTime: now, LastTransitionTime: now,
			}},
		},
	}
	created, err := env.virtual.CoreV1().Nodes().Create(t.Context(), node, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { deleteIgnoringNotFound(t, env.virtual.CoreV1().Nodes().Delete, node.Name) })
	return created
}

func deleteIgnoringNotFound(t *testing.T, del func(context.Context, string, metav1.DeleteOptions) error, name string) {
	if err := del(context.Background(), name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		t.Errorf("deleting %s: %v", name, err)
	}
}

func (env *leaseCSINodeEnv) waitFor(t *testing.T, what string, timeout time.Duration, cond wait.ConditionWithContextFunc) {
	t.Helper()
	if err := wait.PollUntilContextTimeout(t.Context(), 250*time.Millisecond, timeout, true, cond); err != nil {
		t.Fatalf("waiting %v for %s: %v", timeout, what, err)
	}
}

func (env *leaseCSINodeEnv) lease(ctx context.Context, name string) (*coordinationv1.Lease, error) {
	return env.virtual.CoordinationV1().Leases(corev1.NamespaceNodeLease).Get(ctx, name, metav1.GetOptions{})
}

// renewTime is the lease's renewTime, zero when there is no lease.
func (env *leaseCSINodeEnv) renewTime(t *testing.T, name string) time.Time {
	t.Helper()
	l, err := env.lease(t.Context(), name)
	if apierrors.IsNotFound(err) {
		return time.Time{}
	}
	if err != nil {
		t.Fatal(err)
	}
	return l.Spec.RenewTime.Time
}

func (env *leaseCSINodeEnv) virtualReady(t *testing.T, name string) corev1.ConditionStatus {
	t.Helper()
	node, err := env.virtual.CoreV1().Nodes().Get(t.Context(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return readyStatus(node)
}

func readyStatus(node *corev1.Node) corev1.ConditionStatus {
	for _, c := range node.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status
		}
	}
	return ""
}

// TestLeaseKeepsVirtualNodeReady shows, against the virtual cluster's real
// node-lifecycle controller, that the lease alone keeps a virtual node
// Ready well past the grace period while its physical node is Ready, that a
// virtual node without renewals goes Unknown in that time, that renewals
// stop when the physical node goes and resume at once when it is back.
func TestLeaseKeepsVirtualNodeReady(t *testing.T) {
	t.Parallel()
	suffix := utilrand.String(5)
	env := startLeaseCSINodeControllers(t, "lease"+suffix)
	alive, flapping, missing := "lease-"+suffix+"-alive", "lease-"+suffix+"-flapping", "lease-"+suffix+"-missing"
	env.createPhysicalNode(t, alive)
	env.createPhysicalNode(t, flapping)
	start := time.Now()
	vAlive := env.createVirtualNode(t, alive).Name
	vFlapping := env.createVirtualNode(t, flapping).Name
	vMissing := env.createVirtualNode(t, missing).Name // no physical node: never renewed

	env.waitFor(t, "leases of the nodes with a Ready physical node", 10*time.Second, func(ctx context.Context) (bool, error) {
		a, errA := env.lease(ctx, vAlive)
		_, errF := env.lease(ctx, vFlapping)
		return errA == nil && errF == nil && *a.Spec.HolderIdentity == vAlive && *a.Spec.LeaseDurationSeconds == 40 &&
			len(a.OwnerReferences) == 1 && a.OwnerReferences[0].Kind == "Node" && a.OwnerReferences[0].Name == vAlive, nil
	})
	firstRenewal := env.renewTime(t, vFlapping)
	env.waitFor(t, "a renewal of the flapping node's lease", 15*time.Second, func(context.Context) (bool, error) {
		return env.renewTime(t, vFlapping).After(firstRenewal), nil
	})
	deleteIgnoringNotFound(t, env.physical.CoreV1().Nodes().Delete, flapping)
	time.Sleep(time.Second) // the deletion reaches the controller
	lastRenewal := env.renewTime(t, vFlapping)

	// Poll until well past the grace period: the renewed node must never
	// leave Ready; the two others must go Unknown.
	unknown := map[string]bool{}
	for time.Since(start) < nodeMonitorGracePeriod+40*time.Second {
		if got := env.virtualReady(t, vAlive); got != corev1.ConditionTrue {
			t.Fatalf("virtual node %s with a renewed lease became %s after %v", vAlive, got, time.Since(start).Round(time.Second))
		}
		for _, name := range []string{vFlapping, vMissing} {
			if !unknown[name] && env.virtualReady(t, name) == corev1.ConditionUnknown {
				unknown[name] = true
				t.Logf("virtual node %s went Unknown after %v", name, time.Since(start).Round(time.Second))
			}
		}
		time.Sleep(2 * time.Second)
	}
	if !unknown[vMissing] || !unknown[vFlapping] {
		t.Fatalf("virtual nodes without renewals did not go Unknown within %v: %v", time.Since(start).Round(time.Second), unknown)
	}
	if got := env.renewTime(t, vFlapping); !got.Equal(lastRenewal) {
		t.Errorf("lease of %s renewed at %v after its physical node was deleted", vFlapping, got)
	}
	if age := time.Since(env.renewTime(t, vAlive)); age > 15*time.Second {
		t.Errorf("lease of %s is %v old, want renewals every 10s", vAlive, age)
	}
	if l, err := env.lease(t.Context(), vMissing); !apierrors.IsNotFound(err) {
		t.Errorf("virtual node without a physical node got a lease: %v, %v", l, err)
	}

	// The physical node is back: the lease is renewed at once, not at the
	// next tick of a timer that was stopped.
	env.createPhysicalNode(t, flapping)
	env.waitFor(t, "the lease renewed once the physical node is Ready again", 5*time.Second, func(context.Context) (bool, error) {
		return env.renewTime(t, vFlapping).After(lastRenewal), nil
	})

	// The virtual node goes: so does its lease.
	deleteIgnoringNotFound(t, env.virtual.CoreV1().Nodes().Delete, vAlive)
	env.waitFor(t, "the lease of a deleted virtual node gone", 15*time.Second, func(ctx context.Context) (bool, error) {
		_, err := env.lease(ctx, vAlive)
		return apierrors.IsNotFound(err), nil
	})
}

// TestCSINodeMirrorsPhysicalCSINode shows the virtual CSINode following the
// physical one: created with its drivers, updated in place and through the
// two-step replacement of an immutable driver, restored when someone
// deletes it, and removed with the physical CSINode or the virtual node.
func TestCSINodeMirrorsPhysicalCSINode(t *testing.T) {
	t.Parallel()
	suffix := utilrand.String(5)
	env := startLeaseCSINodeControllers(t, "csi"+suffix)
	physicalName := "csi-" + suffix
	env.createPhysicalNode(t, physicalName)
	vnode := env.createVirtualNode(t, physicalName)

	drivers := []storagev1.CSINodeDriver{
		{Name: "ebs.csi.aws.com", NodeID: "i-0123", TopologyKeys: []string{"topology.ebs.csi.aws.com/zone"},
			Allocatable: &storagev1.VolumeNodeResources{Count: ptr.To[int32](25)}},
		{Name: "nfs.csi.k8s.io", NodeID: physicalName},
	}
	csiNodes := env.physical.StorageV1().CSINodes()
	physicalCSINode, err := csiNodes.Create(t.Context(), &storagev1.CSINode{
		ObjectMeta: metav1.ObjectMeta{Name: physicalName},
		Spec:       storagev1.CSINodeSpec{Drivers: drivers},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { deleteIgnoringNotFound(t, csiNodes.Delete, physicalName) })

	mirror := env.waitForMirror(t, vnode.Name, "the virtual CSINode created", drivers)
	if mirror.Labels[kubeoceanv1alpha1.LabelManagedBy] != kubeoceanv1alpha1.ManagedByKubeocean ||
		mirror.Labels[kubeoceanv1alpha1.LabelClusterID] != env.clusterID ||
		len(mirror.OwnerReferences) != 1 || mirror.OwnerReferences[0].UID != vnode.UID {
		t.Errorf("virtual CSINode metadata: labels %v, owners %+v", mirror.Labels, mirror.OwnerReferences)
	}

	// A new allocatable count changes in place; a new node ID needs the
	// driver removed first, here as on the virtual side. Done back to back,
	// the controller may see only the end result and must then take the
	// two steps itself.
	physicalCSINode.Spec.Drivers = physicalCSINode.Spec.Drivers[:1]
	physicalCSINode.Spec.Drivers[0].Allocatable.Count = ptr.To[int32](30)
	if physicalCSINode, err = csiNodes.Update(t.Context(), physicalCSINode, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	physicalCSINode.Spec.Drivers = append(physicalCSINode.Spec.Drivers, storagev1.CSINodeDriver{Name: "nfs.csi.k8s.io", NodeID: "moved"})
	if physicalCSINode, err = csiNodes.Update(t.Context(), physicalCSINode, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	env.waitForMirror(t, vnode.Name, "the virtual CSINode updated", physicalCSINode.Spec.Drivers)

	if err := env.virtual.StorageV1().CSINodes().Delete(t.Context(), vnode.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	env.waitForMirror(t, vnode.Name, "the deleted virtual CSINode restored", physicalCSINode.Spec.Drivers)

	deleteIgnoringNotFound(t, csiNodes.Delete, physicalName)
	env.waitForMirror(t, vnode.Name, "the virtual CSINode gone with the physical one", nil)

	if _, err := csiNodes.Create(t.Context(), &storagev1.CSINode{
		ObjectMeta: metav1.ObjectMeta{Name: physicalName},
		Spec:       storagev1.CSINodeSpec{Drivers: drivers},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	env.waitForMirror(t, vnode.Name, "the virtual CSINode back", drivers)
	deleteIgnoringNotFound(t, env.virtual.CoreV1().Nodes().Delete, vnode.Name)
	env.waitForMirror(t, vnode.Name, "the virtual CSINode gone with the virtual node", nil)
}

// waitForMirror waits until the virtual CSINode name has exactly drivers,
// or, for nil drivers, is gone.
func (env *leaseCSINodeEnv) waitForMirror(t *testing.T, name, what string, drivers []storagev1.CSINodeDriver) *storagev1.CSINode {
	t.Helper()
	var mirror *storagev1.CSINode
	env.waitFor(t, what, 15*time.Second, func(ctx context.Context) (bool, error) {
		got, err := env.virtual.StorageV1().CSINodes().Get(ctx, name, metav1.GetOptions{})
		if drivers == nil {
			return apierrors.IsNotFound(err), nil
		}
		mirror = got
		return err == nil && equality.Semantic.DeepEqual(got.Spec.Drivers, drivers), nil
	})
	return mirror
}
