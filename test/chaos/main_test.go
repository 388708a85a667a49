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

// Package chaos injects faults into a running Kubeocean and checks that
// nothing is lost, duplicated or deleted: the built kubeocean-syncer and
// kubeocean-manager binaries are killed with SIGKILL in the middle of
// syncing hundreds of pods, each apiserver is killed and started again, the
// physical apiserver is frozen for longer than a node Lease, and the leader
// of two manager replicas is killed.
//
// The tests share one virtual cluster (with kube-controller-manager, whose
// node lifecycle controller marks virtual nodes Unknown), one physical
// cluster (kwok runs its nodes and pods) and one ClusterBinding. They run
// one after the other; each starts the Kubeocean processes it needs, adds a
// batch of pods in a namespace of its own and stops its processes at the
// end, so the later tests also check that the pods of the earlier ones are
// adopted intact. After every fault the check is exact: every virtual pod
// has exactly one physical twin and both run, no physical pod is left
// without a virtual one, and no pod was deleted on either side.
package chaos

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
	kubeoceanclient "github.com/kubeocean/kubeocean/generated/clientset/versioned"
	"github.com/kubeocean/kubeocean/test/controlplane"
	"github.com/kubeocean/kubeocean/test/testenv"
)

// The one binding every test drives.
const (
	bindingName     = "chaos"
	clusterID       = "chaos"
	mountNamespace  = "chaos-mount"
	systemNamespace = "kubeocean-system"
	// nodeLabel selects the physical nodes the binding borrows.
	nodeLabel = "suite"
	// podLabel marks the virtual pods the tests create.
	podLabel = "chaos.kubeocean.io/pod"
	// nodeMonitorGracePeriod is the virtual controller-manager's: how long
	// a virtual node's Lease may go unrenewed before the node is Unknown.
	// Shorter than the 50 s default so the freeze test stays short.
	nodeMonitorGracePeriod = 20 * time.Second
)

// physicalNodes are the kwok nodes the binding borrows.
var physicalNodes = []string{"chaos-a", "chaos-b"}

var env *world

// world is what the tests share.
type world struct {
	virtual, physical     *controlplane.Cluster
	virtualKube           kubernetes.Interface
	physicalKube          kubernetes.Interface
	managerBin, syncerBin string
	// deletions records every pod deletion on both sides while the
	// package runs.
	deletions *deletionLog
}

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	defer controlplane.StopAll()
	started := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	binDir, err := os.MkdirTemp("", "kubeocean-chaos-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(binDir)
	built := make(chan error, 1)
	go func() { built <- buildBinaries(ctx, binDir) }()
	virtual, physical, err := testenv.StartVirtualAndPhysical(ctx,
		controlplane.Options{ControllerManager: true,
			ExtraControllerManagerFlags: []string{"--node-monitor-grace-period=" + nodeMonitorGracePeriod.String()}},
		controlplane.Options{Kwok: true})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if err := <-built; err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	env = &world{
		virtual: virtual, physical: physical,
		virtualKube: virtual.Clientset(), physicalKube: physical.Clientset(),
		managerBin: filepath.Join(binDir, "kubeocean-manager"), syncerBin: filepath.Join(binDir, "kubeocean-syncer"),
	}
	if err := env.bind(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "binding the physical cluster:", err)
		return 1
	}
	stopWatching := make(chan struct{})
	defer close(stopWatching)
	if env.deletions, err = watchDeletions(ctx, env.virtualKube, env.physicalKube, stopWatching); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Printf("chaos: clusters, binaries and binding ready in %v\n", time.Since(started).Round(100*time.Millisecond))
	code := m.Run()
	fmt.Printf("chaos: package took %v\n", time.Since(started).Round(time.Second))
	return code
}

// buildBinaries builds kubeocean-manager and kubeocean-syncer as a user
// runs them (no race detector: they run as processes of their own).
func buildBinaries(ctx context.Context, dir string) error {
	cmd := exec.CommandContext(ctx, "go", "build", "-o", dir+"/", "./cmd/kubeocean-manager", "./cmd/kubeocean-syncer")
	cmd.Dir = testenv.RepoPath(".")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("building the binaries: %w: %s", err, out)
	}
	return nil
}

// bind creates the physical nodes, the policy lending them, the mount
// namespace, the kubeconfig Secret and the ClusterBinding. Nothing runs
// Kubeocean yet: each test starts its own processes.
func (w *world) bind(ctx context.Context) error {
	for _, name := range physicalNodes {
		node := testenv.KwokNode(name, "64", "256Gi", map[string]string{nodeLabel: bindingName})
		node.Status.Capacity[corev1.ResourcePods] = resource.MustParse("1000")
		node.Status.Allocatable[corev1.ResourcePods] = resource.MustParse("1000")
		if _, err := w.physicalKube.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil {
			return err
		}
	}
	physicalOcean := kubeoceanclient.NewForConfigOrDie(w.physical.Config())
	policy := &kubeoceanv1alpha1.ResourceLeasingPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: bindingName},
		Spec: kubeoceanv1alpha1.ResourceLeasingPolicySpec{Cluster: bindingName,
			NodeSelector: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{
				{Key: nodeLabel, Operator: corev1.NodeSelectorOpIn, Values: []string{bindingName}}}}}}},
	}
	if _, err := physicalOcean.KubeoceanV1alpha1().ResourceLeasingPolicies().Create(ctx, policy, metav1.CreateOptions{}); err != nil {
		return err
	}
	for _, ns := range []struct {
		kube kubernetes.Interface
		name string
	}{{w.virtualKube, systemNamespace}, {w.physicalKube, mountNamespace}} {
		if _, err := ns.kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns.name}}, metav1.CreateOptions{}); err != nil {
			return err
		}
	}
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: systemNamespace, Name: bindingName + "-kubeconfig"},
		Data:       map[string][]byte{"kubeconfig": w.physical.Kubeconfig},
	}
	if _, err := w.virtualKube.CoreV1().Secrets(systemNamespace).Create(ctx, secret, metav1.CreateOptions{}); err != nil {
		return err
	}
	binding := &kubeoceanv1alpha1.ClusterBinding{
		ObjectMeta: metav1.ObjectMeta{Name: bindingName},
		Spec: kubeoceanv1alpha1.ClusterBindingSpec{
			ClusterID:      clusterID,
			SecretRef:      kubeoceanv1alpha1.SecretReference{Name: secret.Name, Namespace: secret.Namespace},
			MountNamespace: mountNamespace,
			NodeSelector: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{
				{Key: nodeLabel, Operator: corev1.NodeSelectorOpIn, Values: []string{bindingName}}}}}},
		},
	}
	virtualOcean := kubeoceanclient.NewForConfigOrDie(w.virtual.Config())
	_, err := virtualOcean.KubeoceanV1alpha1().ClusterBindings().Create(ctx, binding, metav1.CreateOptions{})
	return err
}
