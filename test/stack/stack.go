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

// Package stack deploys Kubeocean on two local control planes the way a
// user does: kubectl applies the shipped CRDs, RBAC and samples, the
// binaries run with ServiceAccount credentials bound only to the shipped
// roles, and a sample application runs on virtual nodes. The demo
// (test/demo) and the end-to-end tests (test/e2e) are built on it.
package stack

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	kubeoceanclient "github.com/kubeocean/kubeocean/generated/clientset/versioned"
	"github.com/kubeocean/kubeocean/test/controlplane"
	"github.com/kubeocean/kubeocean/test/testenv"
)

// Names fixed by the shipped manifests and samples.
const (
	SystemNamespace = "kubeocean-system"
	ManagerAccount  = "kubeocean-manager"
	// SyncerAccount is the syncers' ServiceAccount in the virtual
	// cluster, in SystemNamespace, and the binding's own identity in the
	// physical cluster, in its mount namespace.
	SyncerAccount = "kubeocean-syncer"
	// SyncerTokenSecret is the shipped long-lived token of the binding's
	// ServiceAccount in the physical cluster, in MountNamespace.
	SyncerTokenSecret = "kubeocean-syncer-token"
	// BindingName, ClusterID, KubeconfigSecret and MountNamespace are those
	// of manifests/samples/clusterbinding.yaml.
	BindingName      = "worker-1"
	ClusterID        = "worker-1"
	KubeconfigSecret = "worker-1-kubeconfig"
	MountNamespace   = "kubeocean-worker"
	// LendableLabel selects the physical nodes the sample binding and
	// policy lend.
	LendableLabel = "example.com/lendable"
	// AppNamespace, AppName and AppReplicas are those of
	// manifests/samples/app.yaml.
	AppNamespace = "demo"
	AppName      = "web"
	AppReplicas  = 3
)

// pollInterval paces every wait of this package.
const pollInterval = 250 * time.Millisecond

// Options choose what the stack's clusters record.
type Options struct {
	// AuditPolicy, when set, makes both apiservers write an audit log
	// (see controlplane.Options.AuditPolicy).
	AuditPolicy []byte
	// KwokArgs are added to the physical cluster's kwok, e.g. to serve a
	// kubelet API for its nodes (test/kwokkubelet).
	KwokArgs []string
	// VerifyKubeletServing makes the virtual apiserver verify kubelet
	// serving certificates against its cluster CA.
	VerifyKubeletServing bool
	// VirtualControllerManagerFlags are added to the virtual cluster's
	// controller-manager, e.g. a short --cluster-signing-duration.
	VirtualControllerManagerFlags []string
}

// Stack is a virtual cluster (apiserver, controller-manager, scheduler)
// and a physical cluster (apiserver, controller-manager, kwok) on loopback.
type Stack struct {
	Virtual, Physical *controlplane.Cluster
	// VirtualKube, PhysicalKube, VirtualOcean and PhysicalOcean are admin
	// clients, for checks; Kubeocean itself never runs as admin.
	VirtualKube, PhysicalKube   kubernetes.Interface
	VirtualOcean, PhysicalOcean kubeoceanclient.Interface
}

// Start starts both clusters at once.
func Start(ctx context.Context, opts Options) (*Stack, error) {
	clusters, err := controlplane.StartParallel(ctx,
		controlplane.Options{Name: "virtual", ControllerManager: true, Scheduler: true, AuditPolicy: opts.AuditPolicy,
			VerifyKubeletServing: opts.VerifyKubeletServing, ExtraControllerManagerFlags: opts.VirtualControllerManagerFlags},
		controlplane.Options{Name: "physical", ControllerManager: true, Kwok: true, KwokArgs: opts.KwokArgs, AuditPolicy: opts.AuditPolicy},
	)
	if err != nil {
		return nil, err
	}
	s := &Stack{Virtual: clusters[0], Physical: clusters[1]}
	s.VirtualKube, s.PhysicalKube = s.Virtual.Clientset(), s.Physical.Clientset()
	if s.VirtualOcean, err = kubeoceanclient.NewForConfig(s.Virtual.Config()); err != nil {
		s.Stop()
		return nil, err
	}
	if s.PhysicalOcean, err = kubeoceanclient.NewForConfig(s.Physical.Config()); err != nil {
		s.Stop()
		return nil, err
	}
	return s, nil
}

// Stop stops every process of both clusters, Kubeocean's first, and
// removes their folders.
func (s *Stack) Stop() {
	s.Virtual.Stop()
	s.Physical.Stop()
}

// InstallCRDs applies manifests/crds to both clusters with kubectl and
// waits until they are served.
func (s *Stack) InstallCRDs(ctx context.Context) error {
	for _, c := range []*controlplane.Cluster{s.Virtual, s.Physical} {
		if _, err := c.Kubectl(ctx, "apply", "--server-side", "-f", testenv.RepoPath("manifests/crds")); err != nil {
			return err
		}
		if _, err := c.Kubectl(ctx, "wait", "--for=condition=Established", "--timeout=60s",
			"crd/clusterbindings.kubeocean.io", "crd/resourceleasingpolicies.kubeocean.io"); err != nil {
			return err
		}
	}
	return nil
}

// InstallRBAC applies manifests/rbac/<virtual> to the virtual cluster
// ("virtual", or "in-process" for a manager that runs its syncers) and
// manifests/rbac/physical to the physical one.
func (s *Stack) InstallRBAC(ctx context.Context, virtual string) error {
	if _, err := s.Virtual.Kubectl(ctx, "apply", "-k", testenv.RepoPath("manifests/rbac/"+virtual)); err != nil {
		return err
	}
	_, err := s.Physical.Kubectl(ctx, "apply", "-k", testenv.RepoPath("manifests/rbac/physical"))
	return err
}

// InstallAdmission applies manifests/admission to the virtual cluster: the
// policy under which only Kubeocean sets kubeocean.io/ metadata on pods.
// It returns once the apiserver enforces it (policies take effect a moment
// after they are stored): a dry run of a pod with such an annotation, as
// admin, is refused.
func (s *Stack) InstallAdmission(ctx context.Context) error {
	if _, err := s.Virtual.Kubectl(ctx, "apply", "-k", testenv.RepoPath("manifests/admission")); err != nil {
		return err
	}
	probe := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "admission-probe", Annotations: map[string]string{"kubeocean.io/probe": "x"}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "registry.k8s.io/pause:3.10"}}},
	}
	return Poll(ctx, "the virtual apiserver enforces manifests/admission", func(ctx context.Context) (string, error) {
		_, err := s.VirtualKube.CoreV1().Pods(metav1.NamespaceDefault).Create(ctx, probe, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if err != nil && strings.Contains(err.Error(), PodMetadataRefusal) {
			return "", nil
		}
		return fmt.Sprintf("a pod with a kubeocean.io/ annotation: %v", err), nil
	})
}

// PodMetadataRefusal is what the virtual apiserver answers, under
// manifests/admission, to whoever but Kubeocean sets, changes or removes a
// kubeocean.io/ label or annotation of a pod.
const PodMetadataRefusal = "only Kubeocean may set kubeocean.io/ labels and annotations on pods"

// CreateNodes creates physical nodes that kwok makes Ready, each with 4
// CPUs and 16 GiB, with labels.
func (s *Stack) CreateNodes(ctx context.Context, names []string, labels map[string]string) error {
	for _, name := range names {
		node := testenv.KwokNode(name, "4", "16Gi", labels)
		if _, err := s.PhysicalKube.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating physical node %s: %w", name, err)
		}
	}
	return nil
}

// VirtualKubeconfig writes a kubeconfig of a ServiceAccount of the virtual
// cluster (a bound token from the TokenRequest API) next to the cluster's
// files and returns its path.
func (s *Stack) VirtualKubeconfig(ctx context.Context, namespace, account string) (string, error) {
	data, err := s.Virtual.KubeconfigForServiceAccount(ctx, namespace, account)
	if err != nil {
		return "", err
	}
	path := filepath.Join(s.Virtual.Dir, account+".kubeconfig")
	return path, os.WriteFile(path, data, 0o600)
}

// PhysicalSyncerKubeconfig is a kubeconfig of the syncer's ServiceAccount
// in the physical cluster, from the shipped token Secret once the
// controller-manager has filled it in: what an operator puts into the
// binding's Secret.
func (s *Stack) PhysicalSyncerKubeconfig(ctx context.Context) (string, error) {
	var token []byte
	err := Poll(ctx, "the token controller fills in Secret "+MountNamespace+"/"+SyncerTokenSecret, func(ctx context.Context) (string, error) {
		secret, err := s.PhysicalKube.CoreV1().Secrets(MountNamespace).Get(ctx, SyncerTokenSecret, metav1.GetOptions{})
		if err != nil {
			return err.Error(), nil
		}
		if token = secret.Data[corev1.ServiceAccountTokenKey]; len(token) == 0 {
			return "no token yet", nil
		}
		return "", nil
	})
	if err != nil {
		return "", err
	}
	path := filepath.Join(s.Physical.Dir, SyncerAccount+".kubeconfig")
	return path, os.WriteFile(path, s.Physical.KubeconfigForToken(string(token)), 0o600)
}

// Bind stores the physical kubeconfig in the Secret the sample binding
// names and applies the sample binding (virtual cluster) and policy
// (physical cluster) with kubectl.
func (s *Stack) Bind(ctx context.Context, physicalKubeconfig string) error {
	if _, err := s.Virtual.Kubectl(ctx, "-n", SystemNamespace, "create", "secret", "generic", KubeconfigSecret,
		"--from-file=kubeconfig="+physicalKubeconfig); err != nil {
		return err
	}
	if _, err := s.Physical.Kubectl(ctx, "apply", "-f", testenv.RepoPath("manifests/samples/resourceleasingpolicy.yaml")); err != nil {
		return err
	}
	_, err := s.Virtual.Kubectl(ctx, "apply", "-f", testenv.RepoPath("manifests/samples/clusterbinding.yaml"))
	return err
}

// DeployApp applies the sample application to the virtual cluster.
func (s *Stack) DeployApp(ctx context.Context) error {
	_, err := s.Virtual.Kubectl(ctx, "apply", "-f", testenv.RepoPath("manifests/samples/app.yaml"))
	return err
}

// Binary is a Kubeocean binary with its process, once started.
type Binary struct {
	*controlplane.Process
	// MetricsAddress and HealthAddress are host:port of its servers.
	MetricsAddress, HealthAddress string
}

// StartBinary runs a Kubeocean binary beside the virtual cluster with the
// given kubeconfig, on free loopback ports for metrics and health, plus
// args.
func (s *Stack) StartBinary(name, bin, kubeconfig string, args ...string) (*Binary, error) {
	addrs, err := controlplane.FreeLoopbackAddresses(2)
	if err != nil {
		return nil, err
	}
	metrics, health := addrs[0], addrs[1]
	all := append([]string{"--kubeconfig=" + kubeconfig, "--metrics-bind-address=" + metrics, "--health-probe-bind-address=" + health}, args...)
	p, err := s.Virtual.StartProcess(name, bin, all...)
	if err != nil {
		return nil, err
	}
	return &Binary{Process: p, MetricsAddress: metrics, HealthAddress: health}, nil
}

// Poll calls check until it reports nothing left to wait for (an empty
// string) or ctx ends; the error then says what was awaited and the last
// state check described. An error from check ends the wait at once.
func Poll(ctx context.Context, what string, check func(context.Context) (string, error)) error {
	ticker := time.NewTicker(pollInterval)
	defer ticker.Stop()
	last := "nothing yet"
	for {
		state, err := check(ctx)
		if ctx.Err() == nil {
			if err != nil {
				return fmt.Errorf("waiting until %s: %w", what, err)
			}
			if state == "" {
				return nil
			}
			// A check cut short by the deadline says nothing new.
			last = state
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting until %s: %w; last seen: %s", what, ctx.Err(), strings.TrimSpace(last))
		case <-ticker.C:
		}
	}
}
