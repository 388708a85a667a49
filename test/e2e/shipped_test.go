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
	"os"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
	"github.com/kubeocean/kubeocean/internal/manager/csrapproval"
	"github.com/kubeocean/kubeocean/internal/manager/syncertemplate"
	"github.com/kubeocean/kubeocean/test/controlplane"
	"github.com/kubeocean/kubeocean/test/kwokkubelet"
	"github.com/kubeocean/kubeocean/test/stack"
	"github.com/kubeocean/kubeocean/test/testenv"
)

const (
	waitTimeout = 2 * time.Minute
	// storageNamespace holds the CSI node-publish Secret of the test volume.
	storageNamespace = "storage"
	csiSecretBinding = "kubeocean-syncer-csi-secrets"
)

// TestShippedManifests applies the shipped CRDs, RBAC, admission policy,
// manager Deployment and samples with kubectl, runs the manager with the
// arguments of the shipped Deployment and the syncer with those of the
// Deployment the manager renders, each as its ServiceAccount, and takes a
// workload through creation, changes and deletion, then unbinds. Afterwards the
// audit logs must show no refused request and no unused grant.
func TestShippedManifests(t *testing.T) {
	s := startWorld(t)
	runFlow(t, "virtual", func(t *testing.T) []*stack.Binary {
		// The manager Deployment cannot run (no kubelet): the test runs its
		// arguments instead. Applying it proves the kustomization.
		_, err := s.Virtual.Kubectl(t.Context(), "apply", "-k", testenv.RepoPath("manifests/deploy"))
		step(t, "apply manifests/deploy", err)
		manager := startManager(t, managerDeploymentArgs(t, "deployment")...)
		syncer := startSyncerOfDeployment(t)
		return []*stack.Binary{manager, syncer}
	})
	checkAudit(t, s.Virtual, "manifests/rbac/virtual", "", map[string][]string{
		system(stack.ManagerAccount): managerUnusedOK, system(stack.SyncerAccount): virtualSyncerUnusedOK,
	})
}

// TestInProcessManifests is TestShippedManifests for a manager that runs
// its syncers in its own process, with manifests/rbac/in-process: the
// shipped manager Deployment with --syncer-mode=in-process.
func TestInProcessManifests(t *testing.T) {
	s := startWorld(t)
	runFlow(t, "in-process", func(t *testing.T) []*stack.Binary {
		return []*stack.Binary{startManager(t, append(managerDeploymentArgs(t, "in-process"), kubeletPortRange(t))...)}
	})
	checkAudit(t, s.Virtual, "manifests/rbac/in-process", "", map[string][]string{
		system(stack.ManagerAccount): virtualSyncerUnusedOK,
	})
}

// startWorld starts the stack of one test, which the flow helpers act on
// (the tests do not run in parallel), with audit logs.
func startWorld(t *testing.T) *stack.Stack {
	// kwok serves the physical nodes' kubelet API, which the kubelet API
	// of virtual nodes (on by default) reaches through the physical
	// apiserver.
	kwok, err := kwokkubelet.New(t.TempDir(), metricsNode)
	step(t, "configure kwok's kubelet API", err)
	t.Cleanup(kwok.Close)
	s, err := stack.Start(t.Context(), stack.Options{AuditPolicy: auditPolicy, KwokArgs: kwok.Args})
	step(t, "start the clusters", err)
	t.Cleanup(s.Stop)
	world = s
	// A flow that fails on a missing permission fails by timing out; say
	// which requests were refused.
	t.Cleanup(func() {
		if t.Failed() {
			logRefused(t, s.Virtual)
			logRefused(t, s.Physical)
		}
	})
	return s
}

// runFlow installs the CRDs, the RBAC of manifests/rbac/<virtualRBAC> and
// manifests/rbac/physical, starts Kubeocean with start once the nodes
// exist, binds the physical cluster, runs and changes a workload, unbinds,
// stops what start started, and checks the physical audit log.
func runFlow(t *testing.T, virtualRBAC string, start func(*testing.T) []*stack.Binary) {
	ctx, s := t.Context(), world
	step(t, "install CRDs", s.InstallCRDs(ctx))
	step(t, "install RBAC", s.InstallRBAC(ctx, virtualRBAC))
	// Kubeocean records its pod mappings under the shipped admission
	// policy, which refuses them to anyone else.
	step(t, "install the admission policy", s.InstallAdmission(waitCtx(t)))
	// The samples the flow does not apply pass the schema.
	_, err := s.Physical.Kubectl(ctx, "apply", "--dry-run=server", "-f", testenv.RepoPath("manifests/samples/resourceleasingpolicy-office-hours.yaml"))
	step(t, "office-hours sample", err)
	csiBindingYAML := bindCSISecrets(t)
	// Node stats are the physical administrator's opt-in; the flow reads
	// them (kubectl top), so it grants them.
	nodeStatsYAML, err := s.Physical.Kubectl(ctx, "kustomize", testenv.RepoPath("manifests/rbac/physical-node-stats"))
	step(t, "render the node stats grant", err)
	_, err = s.Physical.Kubectl(ctx, "apply", "-k", testenv.RepoPath("manifests/rbac/physical-node-stats"))
	step(t, "grant node stats", err)
	step(t, "create physical nodes", s.CreateNodes(ctx, []string{"node-a", "node-b"}, map[string]string{stack.LendableLabel: "true"}))
	createPhysicalCSINode(t, "node-a")

	physicalKubeconfig, err := s.PhysicalSyncerKubeconfig(ctx)
	step(t, "physical kubeconfig", err)
	step(t, "bind", s.Bind(ctx, physicalKubeconfig))
	// The shipped API Priority and Fairness objects classify Kubeocean's
	// requests in both clusters.
	checkClassified(t, s.Physical, physicalKubeconfig)
	virtualKubeconfig, err := s.VirtualKubeconfig(ctx, stack.SystemNamespace, stack.ManagerAccount)
	step(t, "virtual kubeconfig of the manager", err)
	checkClassified(t, s.Virtual, virtualKubeconfig)
	binaries := start(t)
	// The manager checks with access reviews that the Secret's credentials
	// (the shipped physical RBAC) allow everything the syncer needs.
	step(t, "binding Connected", s.WaitBindingCondition(waitCtx(t), "Connected", metav1.ConditionTrue))
	step(t, "virtual nodes Ready", s.WaitVirtualNodesReady(waitCtx(t), 2))
	waitVirtualCSINode(t, "node-a")
	rotateKubeconfig(t, virtualRBAC == "virtual")
	waitLeaseRenewed(t, "node-b")

	createWorkload(t)
	holdForeignHostPort(t)
	useKubeletAPI(t)
	scrapeKubeoceanMetrics(t, binaries)
	changeWorkload(t)
	deleteVolumeWorkload(t)
	// Unbinding with the application still running: the syncer drains the
	// virtual nodes, deletes the physical pods and copies, and unmarks the
	// virtual ConfigMap and Secret.
	_, err = s.Virtual.Kubectl(ctx, "delete", "clusterbinding", stack.BindingName, "--wait=true", "--timeout=2m")
	step(t, "unbind", err)
	checkUnbound(t)
	checkPlaceholdersGone(t)
	for _, b := range binaries {
		b.Stop()
	}
	checkDispatched(t, s.Virtual, 100)
	checkDispatched(t, s.Physical, 100)
	checkAudit(t, s.Physical, "manifests/rbac/physical", csiBindingYAML+"\n---\n"+nodeStatsYAML, map[string][]string{
		stack.MountNamespace + "/" + stack.SyncerAccount: physicalSyncerUnusedOK,
	})
}

// system names a ServiceAccount of Kubeocean's namespace in the virtual
// cluster, as checkAudit takes it.
func system(account string) string { return stack.SystemNamespace + "/" + account }

// Grants the flow does not exercise, each with the reason it is shipped.
var (
	// The event recorder patches an event that repeats (to count it).
	eventsRepeat          = "patch core/events cluster-wide"
	managerUnusedOK       = []string{eventsRepeat}
	virtualSyncerUnusedOK = []string{
		eventsRepeat,
		// A physical event's virtual event is read back only when its
		// create finds it made by an earlier run of the syncer
		// (docs/events.md); the flow does not restart the syncer while
		// physical events are recorded. test/bottomup
		// (TestEventsOfPodsAndNodes) does.
		"get core/events cluster-wide",
		// A live read before deleting a physical pod whose virtual pod
		// seems gone; the flow deletes pods the regular way.
		"get core/pods cluster-wide",
		// Unbinding unmarks the claims and volumes still in use; the flow
		// deletes its volume first, to cover that path.
		"patch core/persistentvolumeclaims cluster-wide",
		"patch core/persistentvolumes cluster-wide",
		// Read back when a create finds the object already there (left by
		// an earlier syncer).
		"get storage.k8s.io/csinodes cluster-wide",
		// A create that finds the name taken: our own node the cache has
		// not shown yet, or a foreign Node; only a race produces it.
		"get core/nodes cluster-wide",
		"get coordination.k8s.io/leases in namespace kube-node-lease",
		// Provisioning from the physical cluster (a claim of a class the
		// syncer offers, its reclaim, a physical class changed or gone):
		// the flow offers the class but claims only a pre-bound volume;
		// test/topdown provisions (TestStatefulSetGetsStorageFromThePhysicalCluster).
		"create core/persistentvolumes cluster-wide",
		"delete core/persistentvolumes cluster-wide",
		"update storage.k8s.io/storageclasses cluster-wide",
		"delete storage.k8s.io/storageclasses cluster-wide",
		// Resizing a provisioned claim (test/topdown resizes one in
		// TestStatefulSetGetsStorageFromThePhysicalCluster).
		"update core/persistentvolumeclaims/status cluster-wide",
	}
	physicalSyncerUnusedOK = []string{
		eventsRepeat,
		// Read back after a create or update conflict, which only a race
		// between reconciles of objects sharing a copy produces.
		"get core/configmaps in namespace " + stack.MountNamespace,
		"get core/secrets in namespace " + stack.MountNamespace,
		"get core/persistentvolumeclaims in namespace " + stack.MountNamespace,
		"get core/persistentvolumes cluster-wide",
		"get core/secrets in namespace " + storageNamespace,
		// A live read of a physical pod the cache may not have shown: one
		// lost, one made by an older version, one whose deletion the cache
		// did not deliver. The flow's pods are all deleted through the
		// cache's events; internal/syncer/topdown/pod's tests cover those reads.
		"get core/pods in namespace " + stack.MountNamespace,
		// kubectl debug, which the flow does not run: test/topdown
		// (TestKubectlDebugReachesPhysicalPod) does.
		"patch core/pods/ephemeralcontainers in namespace " + stack.MountNamespace,
		// Service mirrors and the DNS server (docs/networking.md): the flow
		// mirrors the sample's one Service, which has a selector, and
		// changes neither it nor a DNS object, so nothing is updated, no
		// EndpointSlice is written, and the cached kinds are read live
		// only when a create finds the name taken; test/topdown
		// (TestServiceMirrors), TestDNS (slices of a selectorless Service)
		// and the service package's tests cover those paths.
		"get core/services in namespace " + stack.MountNamespace,
		"update core/services in namespace " + stack.MountNamespace,
		"get discovery.k8s.io/endpointslices in namespace " + stack.MountNamespace,
		"create discovery.k8s.io/endpointslices in namespace " + stack.MountNamespace,
		"update discovery.k8s.io/endpointslices in namespace " + stack.MountNamespace,
		"delete discovery.k8s.io/endpointslices in namespace " + stack.MountNamespace,
		"get apps/deployments in namespace " + stack.MountNamespace,
		"update apps/deployments in namespace " + stack.MountNamespace,
		"update policy/poddisruptionbudgets in namespace " + stack.MountNamespace,
		"update core/serviceaccounts in namespace " + stack.MountNamespace,
		"update rbac.authorization.k8s.io/roles in namespace " + stack.MountNamespace,
		"update rbac.authorization.k8s.io/rolebindings in namespace " + stack.MountNamespace,
	}
)

func step(t *testing.T, what string, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

func waitCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), waitTimeout)
	t.Cleanup(cancel)
	return ctx
}

// bindCSISecrets grants the syncer the CSI Secrets of storageNamespace in
// the physical cluster, as docs/operations.md tells operators to, and
// returns the RoleBinding's YAML for the audit check.
func bindCSISecrets(t *testing.T) string {
	ctx := t.Context()
	_, err := world.Physical.Kubectl(ctx, "create", "namespace", storageNamespace)
	step(t, "physical storage namespace", err)
	args := []string{"-n", storageNamespace, "create", "rolebinding", csiSecretBinding,
		"--clusterrole=kubeocean-syncer-csi-secrets", "--serviceaccount=" + stack.MountNamespace + ":" + stack.SyncerAccount}
	rendered, err := world.Physical.Kubectl(ctx, append(args, "--dry-run=client", "-o", "yaml")...)
	step(t, "render the CSI Secrets RoleBinding", err)
	_, err = world.Physical.Kubectl(ctx, args...)
	step(t, "create the CSI Secrets RoleBinding", err)
	return rendered
}

func createPhysicalCSINode(t *testing.T, node string) {
	csiNode := &storagev1.CSINode{
		ObjectMeta: metav1.ObjectMeta{Name: node},
		Spec:       storagev1.CSINodeSpec{Drivers: []storagev1.CSINodeDriver{{Name: "disk.csi.example.com", NodeID: node}}},
	}
	_, err := world.PhysicalKube.StorageV1().CSINodes().Create(t.Context(), csiNode, metav1.CreateOptions{})
	step(t, "create physical CSINode", err)
}

func waitVirtualCSINode(t *testing.T, physical string) {
	name := "vnode-" + stack.ClusterID + "-" + physical
	step(t, "virtual CSINode", stack.Poll(waitCtx(t), "CSINode "+name+" exists", func(ctx context.Context) (string, error) {
		_, err := world.VirtualKube.StorageV1().CSINodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err.Error(), nil
		}
		return "", nil
	}))
}

// managerDeploymentArgs are the arguments of the shipped manager
// Deployment in syncer mode mode, with the template folder it mounts
// replaced by the shipped one, the listen addresses left to StartBinary,
// and the pod IP the host's address.
func managerDeploymentArgs(t *testing.T, mode string) []string {
	data, err := os.ReadFile(testenv.RepoPath("manifests/deploy/manager.yaml"))
	step(t, "read manager.yaml", err)
	var deployment appsv1.Deployment
	step(t, "parse manager.yaml", yaml.UnmarshalStrict(data, &deployment))
	var args []string
	for _, arg := range podEnvArgs(t, deployment.Spec.Template.Spec.Containers[0], kwokkubelet.Address()) {
		switch {
		case strings.HasPrefix(arg, "--metrics-bind-address="), strings.HasPrefix(arg, "--health-probe-bind-address="):
		case strings.HasPrefix(arg, "--syncer-mode="):
			args = append(args, "--syncer-mode="+mode)
		case strings.HasPrefix(arg, "--syncer-template-dir="):
			args = append(args, "--syncer-template-dir="+testenv.RepoPath("manifests/deploy/syncer-template"))
		default:
			args = append(args, arg)
		}
	}
	return args
}

// startManager runs kubeocean-manager with args as ServiceAccount
// kubeocean-manager.
func startManager(t *testing.T, args ...string) *stack.Binary {
	kubeconfig, err := world.VirtualKubeconfig(t.Context(), stack.SystemNamespace, stack.ManagerAccount)
	step(t, "manager kubeconfig", err)
	manager, err := world.StartBinary("kubeocean-manager", managerBin, kubeconfig, args...)
	step(t, "start manager", err)
	t.Cleanup(func() { logTailOnFailure(t, manager.Process) })
	return manager
}

// startSyncerOfDeployment runs kubeocean-syncer with the arguments of the
// Deployment the manager rendered for the binding, as ServiceAccount
// kubeocean-syncer: what the Deployment's pods would run, had the virtual
// cluster a kubelet.
func startSyncerOfDeployment(t *testing.T) *stack.Binary {
	ctx := t.Context()
	name := syncertemplate.ObjectName(stack.BindingName)
	var deployment *appsv1.Deployment
	step(t, "syncer Deployment", stack.Poll(waitCtx(t), "the manager renders Deployment "+name, func(ctx context.Context) (string, error) {
		var err error
		deployment, err = world.VirtualKube.AppsV1().Deployments(stack.SystemNamespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err.Error(), nil
		}
		return "", nil
	}))
	if got := deployment.Spec.Template.Spec.ServiceAccountName; got != stack.SyncerAccount {
		t.Fatalf("syncer Deployment runs as %q, want %q", got, stack.SyncerAccount)
	}
	giveSyncerPodIP(t, kwokkubelet.Address())
	kubeconfig, err := world.VirtualKubeconfig(ctx, stack.SystemNamespace, stack.SyncerAccount)
	step(t, "syncer kubeconfig", err)
	args := append(podEnvArgs(t, deployment.Spec.Template.Spec.Containers[0], kwokkubelet.Address()), kubeletPortRange(t))
	syncer, err := world.StartBinary("kubeocean-syncer", syncerBin, kubeconfig, args...)
	step(t, "start syncer", err)
	t.Cleanup(func() { logTailOnFailure(t, syncer.Process) })
	return syncer
}

// giveSyncerPodIP sets ip as the address of a pod of the binding's syncer
// Deployment, as the kubelet that would run it would: the manager approves
// a syncer's serving certificate for its pods' addresses only.
func giveSyncerPodIP(t *testing.T, ip string) {
	selector := csrapproval.InstanceLabel + "=" + stack.BindingName
	step(t, "syncer pod IP", stack.Poll(waitCtx(t), "a syncer pod gets IP "+ip, func(ctx context.Context) (string, error) {
		pods, err := world.VirtualKube.CoreV1().Pods(stack.SystemNamespace).List(ctx, metav1.ListOptions{LabelSelector: selector})
		if err != nil {
			return err.Error(), nil
		}
		if len(pods.Items) == 0 {
			return "no pod " + selector, nil
		}
		pod := pods.Items[0].DeepCopy()
		pod.Status.PodIP, pod.Status.PodIPs = ip, []corev1.PodIP{{IP: ip}}
		if _, err := world.VirtualKube.CoreV1().Pods(stack.SystemNamespace).UpdateStatus(ctx, pod, metav1.UpdateOptions{}); err != nil {
			return err.Error(), nil
		}
		return "", nil
	}))
}

func logTailOnFailure(t *testing.T, p *controlplane.Process) {
	if t.Failed() {
		t.Logf("last lines of %s:\n%s", p.LogPath(), p.Tail(40))
	}
}

func waitPhysicalPodRunning(t *testing.T, virtualName string) {
	step(t, "pod "+virtualName+" running", stack.Poll(waitCtx(t), "the physical twin of "+virtualName+" runs", func(ctx context.Context) (string, error) {
		pod, err := world.VirtualKube.CoreV1().Pods(stack.AppNamespace).Get(ctx, virtualName, metav1.GetOptions{})
		if err != nil {
			return err.Error(), nil
		}
		if pod.Status.Phase != corev1.PodRunning {
			return "virtual pod " + string(pod.Status.Phase), nil
		}
		name := pod.Annotations[kubeoceanv1alpha1.AnnotationPhysicalPodName]
		physical, err := world.PhysicalKube.CoreV1().Pods(stack.MountNamespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err.Error(), nil
		}
		if physical.Status.Phase != corev1.PodRunning {
			return "physical pod " + string(physical.Status.Phase), nil
		}
		return "", nil
	}))
}
