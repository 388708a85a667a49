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

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	utilrand "k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2/ktesting"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
	kubeoceanclient "github.com/kubeocean/kubeocean/generated/clientset/versioned"
	"github.com/kubeocean/kubeocean/internal/events"
	"github.com/kubeocean/kubeocean/internal/ownership"
	"github.com/kubeocean/kubeocean/internal/syncer/bottomup/podstatus"
	"github.com/kubeocean/kubeocean/pkg/informers"
	"github.com/kubeocean/kubeocean/test/testenv"
)

// TestPodStatus runs the physical pod controller between the shared
// clusters: a physical pod kwok runs makes its virtual pod Running with the
// physical pod's IP, container statuses and UID; physical pods whose
// virtual pod never existed, or that name none, are deleted while a foreign
// pod next to them is left alone; deleting the virtual pod deletes its
// physical pod. The virtual pod never runs anywhere: it is bound to a node
// object no kubelet serves (which keeps the pod garbage collector away).
func TestPodStatus(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()

	e := podStatusEnv{t: t, ctx: ctx}
	suffix := utilrand.String(6)
	virtualKube, physicalKube := virtualCluster.Clientset(), physicalCluster.Clientset()
	virtualNS, mountNS := "ps-virtual-"+suffix, "ps-mount-"+suffix
	virtualNode, physicalNode := "ps-vnode-"+suffix, "ps-node-"+suffix
	managed := podStatusOwner("ps-" + suffix).Stamp(nil)

	// Virtual side: a namespace, a node object and the pod bound to it.
	e.createNamespace(virtualKube, virtualNS)
	e.createNode(virtualKube, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: virtualNode}})
	physicalName := kubeoceanv1alpha1.PhysicalName(virtualNS, "app")
	virtualPod := testenv.KwokPod(virtualNS, "app", virtualNode, "100m", "64Mi", nil)
	virtualPod.Annotations = map[string]string{
		kubeoceanv1alpha1.AnnotationPhysicalPodNamespace: mountNS,
		kubeoceanv1alpha1.AnnotationPhysicalPodName:      physicalName,
	}
	e.waitForDefaultServiceAccount(virtualKube, virtualNS)
	virtualPod = e.createPod(virtualKube, virtualPod)

	// Physical side: a kwok node, the physical pod, two orphans and a
	// pod Kubeocean does not manage.
	e.createNamespace(physicalKube, mountNS)
	e.createNode(physicalKube, testenv.KwokNode(physicalNode, "8", "16Gi", nil))
	t.Cleanup(func() { e.cleanup(virtualKube, physicalKube, virtualNS, mountNS, virtualNode, physicalNode) })

	physicalPod := e.mappedPod(mountNS, physicalName, physicalNode, managed, virtualNS, "app", virtualPod.UID)
	physicalPod = e.createPod(physicalKube, physicalPod)
	ghost := e.createPod(physicalKube, e.mappedPod(mountNS, "ghost", physicalNode, managed, virtualNS, "never-existed", "0f2c6a1e-0000-4000-8000-000000000000"))
	unmapped := e.createPod(physicalKube, testenv.KwokPod(mountNS, "unmapped", physicalNode, "10m", "8Mi", managed))
	foreign := e.createPod(physicalKube, testenv.KwokPod(mountNS, "foreign", physicalNode, "10m", "8Mi", nil))

	e.runController("ps-"+suffix, mountNS)

	// The virtual pod shows what kwok made of the physical one.
	var synced *corev1.Pod
	e.poll("virtual pod Running with the physical pod's status and UID", func(ctx context.Context) (bool, error) {
		pod, err := virtualKube.CoreV1().Pods(virtualNS).Get(ctx, "app", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		synced = pod
		return pod.Status.Phase == corev1.PodRunning && pod.Status.PodIP != "" &&
			len(pod.Status.ContainerStatuses) == 1 && pod.Status.ContainerStatuses[0].Ready &&
			pod.Annotations[kubeoceanv1alpha1.AnnotationPhysicalPodUID] == string(physicalPod.UID), nil
	})
	if _, err := time.Parse(time.RFC3339, synced.Annotations[kubeoceanv1alpha1.AnnotationLastSyncTime]); err != nil {
		t.Errorf("last-sync-time annotation: %v", err)
	}
	if synced.Spec.NodeName != virtualNode {
		t.Errorf("virtual pod moved to node %q", synced.Spec.NodeName)
	}

	// The orphans go, with an event saying why; the foreign pod stays.
	for _, orphan := range []*corev1.Pod{ghost, unmapped} {
		e.waitPodDeleted(physicalKube, orphan)
	}
	e.waitForEvent(physicalKube, ghost, kubeoceanv1alpha1.ReasonVirtualPodGone)
	e.waitForEvent(physicalKube, unmapped, kubeoceanv1alpha1.ReasonMissingVirtualPodMapping)
	if _, err := physicalKube.CoreV1().Pods(mountNS).Get(ctx, foreign.Name, metav1.GetOptions{}); err != nil {
		t.Errorf("foreign pod: %v", err)
	}

	// Nothing changes, so nothing is written: the virtual pod keeps its
	// resourceVersion.
	time.Sleep(3 * time.Second)
	again, err := virtualKube.CoreV1().Pods(virtualNS).Get(ctx, "app", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if again.ResourceVersion != synced.ResourceVersion {
		t.Errorf("virtual pod written again without a change: resourceVersion %s → %s", synced.ResourceVersion, again.ResourceVersion)
	}

	// The virtual pod goes (no kubelet would confirm a graceful delete);
	// its physical pod follows.
	if err := virtualKube.CoreV1().Pods(virtualNS).Delete(ctx, "app", *metav1.NewDeleteOptions(0)); err != nil {
		t.Fatal(err)
	}
	e.waitPodDeleted(physicalKube, physicalPod)
}

// mappedPod is a physical pod kwok runs, annotated as made for the virtual
// pod namespace/name with uid.
func (podStatusEnv) mappedPod(mountNS, name, node string, labels map[string]string, virtualNS, virtualName string, uid types.UID) *corev1.Pod {
	pod := testenv.KwokPod(mountNS, name, node, "100m", "64Mi", labels)
	pod.Annotations = map[string]string{
		kubeoceanv1alpha1.AnnotationVirtualPodNamespace: virtualNS,
		kubeoceanv1alpha1.AnnotationVirtualPodName:      virtualName,
		kubeoceanv1alpha1.AnnotationVirtualPodUID:       string(uid),
	}
	return pod
}

// runPodStatusController wires the controller the way the syncer does:
// physical pods scoped to the mount namespace and the managed-by label,
// every virtual pod, events into the physical cluster.
// podStatusOwner is the identity of the test binding clusterID's pods.
func podStatusOwner(clusterID string) ownership.Owner {
	return ownership.Owner{ClusterID: clusterID, BindingUID: types.UID("uid-" + clusterID)}
}

func (e podStatusEnv) runController(clusterID, mountNS string) {
	t, ctx := e.t, e.ctx
	t.Helper()
	virtualKube, physicalKube := virtualCluster.Clientset(), physicalCluster.Clientset()
	virtual := informers.NewCluster("virtual", virtualKube, kubeoceanclient.NewForConfigOrDie(virtualCluster.Config()), 0)
	physical := informers.NewCluster("physical", physicalKube, kubeoceanclient.NewForConfigOrDie(physicalCluster.Config()), 0)
	recorder, stopRecorder := events.NewRecorder(ctx, physicalKube, "kubeocean-syncer")

	c, err := podstatus.New(podstatus.Options{
		ClusterID:      clusterID,
		BindingUID:     podStatusOwner(clusterID).BindingUID,
		MountNamespace: mountNS,
		PhysicalClient: physicalKube.CoreV1(),
		VirtualClient:  virtualKube.CoreV1(),
		PhysicalPods: physical.Kube(informers.Scope{
			Namespace:     mountNS,
			LabelSelector: podStatusOwner(clusterID).Selector(),
		}).Core().V1().Pods(),
		VirtualPods: virtual.Kube(informers.Scope{}).Core().V1().Pods(),
		Recorder:    recorder,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stopRecorder)
	runController(t, ctx, "controller", virtual, physical, func(ctx context.Context) error { return c.Run(ctx, 2) })
}

// runController starts both clusters' informers and run, a controller's
// Run, until the test ends; then it stops run, waits for it and shuts the
// informers down.
func runController(t *testing.T, ctx context.Context, what string, virtual, physical *informers.Cluster, run func(context.Context) error) {
	runCtx, stop := context.WithCancel(ctx)
	virtual.Start(runCtx)
	physical.Start(runCtx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := run(runCtx); err != nil {
			t.Errorf("%s: %v", what, err)
		}
	}()
	t.Cleanup(func() {
		stop()
		<-done
		virtual.Shutdown()
		physical.Shutdown()
	})
}

// podStatusEnv holds the helpers of this file; as methods they cannot
// clash with those of other tests in the package.
type podStatusEnv struct {
	t   *testing.T
	ctx context.Context
}

func (e podStatusEnv) createNamespace(kube kubernetes.Interface, name string) {
	e.t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if _, err := kube.CoreV1().Namespaces().Create(e.ctx, ns, metav1.CreateOptions{}); err != nil {
		e.t.Fatalf("creating namespace %s: %v", name, err)
	}
}

func (e podStatusEnv) createNode(kube kubernetes.Interface, node *corev1.Node) {
	e.t.Helper()
	if _, err := kube.CoreV1().Nodes().Create(e.ctx, node, metav1.CreateOptions{}); err != nil {
		e.t.Fatalf("creating node %s: %v", node.Name, err)
	}
}

func (e podStatusEnv) createPod(kube kubernetes.Interface, pod *corev1.Pod) *corev1.Pod {
	e.t.Helper()
	created, err := kube.CoreV1().Pods(pod.Namespace).Create(e.ctx, pod, metav1.CreateOptions{})
	if err != nil {
		e.t.Fatalf("creating pod %s/%s: %v", pod.Namespace, pod.Name, err)
	}
	return created
}

func (e podStatusEnv) poll(what string, condition wait.ConditionWithContextFunc) {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(e.ctx, time.Minute)
	defer cancel()
	if err := wait.PollUntilContextCancel(ctx, 200*time.Millisecond, true, condition); err != nil {
		e.t.Fatalf("waiting for %s: %v", what, err)
	}
}

// waitForDefaultServiceAccount waits for the ServiceAccount the admission
// plugin requires before a pod can be created in a new namespace.
func (e podStatusEnv) waitForDefaultServiceAccount(kube kubernetes.Interface, namespace string) {
	e.t.Helper()
	e.poll("default ServiceAccount in "+namespace, func(ctx context.Context) (bool, error) {
		_, err := kube.CoreV1().ServiceAccounts(namespace).Get(ctx, "default", metav1.GetOptions{})
		return err == nil, nil
	})
}

// waitPodDeleted waits until the pod is gone or, since kwok finalizes
// deletions on its own schedule, at least being deleted.
func (e podStatusEnv) waitPodDeleted(kube kubernetes.Interface, pod *corev1.Pod) {
	e.t.Helper()
	e.poll("deletion of pod "+pod.Name, func(ctx context.Context) (bool, error) {
		current, err := kube.CoreV1().Pods(pod.Namespace).Get(ctx, pod.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		if err != nil {
			return false, err
		}
		return current.UID != pod.UID || current.DeletionTimestamp != nil, nil
	})
}

func (e podStatusEnv) waitForEvent(kube kubernetes.Interface, pod *corev1.Pod, reason string) {
	e.t.Helper()
	selector := fields.Set{"involvedObject.uid": string(pod.UID), "reason": reason}.String()
	e.poll(reason+" event on pod "+pod.Name, func(ctx context.Context) (bool, error) {
		list, err := kube.CoreV1().Events(pod.Namespace).List(ctx, metav1.ListOptions{FieldSelector: selector})
		if err != nil {
			return false, err
		}
		return len(list.Items) > 0, nil
	})
}

// cleanupPodStatus removes what the test created. The physical cluster runs
// no namespace controller, so its namespace is emptied first and then left
// terminating.
func (e podStatusEnv) cleanup(virtualKube, physicalKube kubernetes.Interface, virtualNS, mountNS, virtualNode, physicalNode string) {
	t := e.t
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	now := *metav1.NewDeleteOptions(0)
	report := func(what string, err error) {
		if err != nil && !apierrors.IsNotFound(err) {
			t.Logf("cleanup: %s: %v", what, err)
		}
	}
	report("virtual namespace", virtualKube.CoreV1().Namespaces().Delete(ctx, virtualNS, metav1.DeleteOptions{}))
	report("virtual node", virtualKube.CoreV1().Nodes().Delete(ctx, virtualNode, metav1.DeleteOptions{}))
	report("physical pods", physicalKube.CoreV1().Pods(mountNS).DeleteCollection(ctx, now, metav1.ListOptions{}))
	report("physical events", physicalKube.CoreV1().Events(mountNS).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{}))
	report("physical node", physicalKube.CoreV1().Nodes().Delete(ctx, physicalNode, metav1.DeleteOptions{}))
	report("physical namespace", physicalKube.CoreV1().Namespaces().Delete(ctx, mountNS, metav1.DeleteOptions{}))
}
