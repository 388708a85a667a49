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

package cli

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/util/wait"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
	"github.com/kubeocean/kubeocean/internal/validation"
)

// Names the shipped manifests use.
const (
	systemNamespace       = "kubeocean-system"
	syncerServiceAccount  = "kubeocean-syncer"
	shippedMountNamespace = "kubeocean-worker"
)

type bindOptions struct {
	name           string
	physical       ClusterFlags
	physicalServer string
	clusterID      string
	mountNamespace string
	nodeSelector   string
	tokenDuration  time.Duration
	rotateToken    bool
	policy         bool
	dryRun         bool
	wait           time.Duration
}

func newBindCommand(virtual *ClusterFlags) *cobra.Command {
	var o bindOptions
	cmd := &cobra.Command{
		Use:   "bind NAME --physical-context=CONTEXT",
		Short: "Bind a physical cluster: its CRD, syncer identity and RBAC, a credential, the kubeconfig Secret and the ClusterBinding.",
		Long: `Bind a physical cluster to the virtual cluster, doing every step of a manual binding:

  physical cluster: the ResourceLeasingPolicy CRD, and the shipped physical RBAC for the
                    binding's mount namespace: the namespace, the binding's own identity (the
                    ServiceAccount kubeocean-syncer there), its roles, FlowSchema and the shared
                    admission policies; then a credential: a token of that ServiceAccount bound
                    to a Secret kubeocean-syncer-credential-* of the mount namespace;
  virtual cluster:  the kubeconfig Secret kubeocean-system/NAME-kubeconfig and the ClusterBinding NAME;
  optionally (--policy) a ResourceLeasingPolicy that lends the selected nodes at all times.

Objects that are missing are created; objects that exist are left as they are, so
bind never undoes what an administrator changed (a stricter pod security level on
the mount namespace, a rule removed from a role, subjects added). It prints, per
object, "created", "unchanged", or "differs from the shipped version, left as is"
with what differs. Running it again changes nothing: the kubeconfig Secret and its
credential are kept unless --rotate-token, and an existing ClusterBinding is kept
(bind says if its spec differs). --dry-run changes nothing and prints, per object,
a unified diff of what exists against what bind would create (secret values redacted).

The credential ends after --token-duration (default 90 days; the API server may cap
it), and the binding then fails with Unauthorized. Rotate it before: --rotate-token
issues a new one, rewrites the kubeconfig Secret, waits until the binding is Ready,
then deletes the previous credential Secrets, which revokes their tokens at once.

A mount namespace belongs to one binding: bind refuses one that the ConfigMap
kubeocean-binding there records for a binding of another name or another virtual
cluster. Kubeocean must be installed in the virtual cluster (namespace
kubeocean-system, the CRDs and the manager).`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.name = args[0]
			return o.run(cmd.Context(), *virtual, cmd.OutOrStdout())
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&o.physical.Kubeconfig, "physical-kubeconfig", "", "Kubeconfig of the physical cluster (default: $KUBECONFIG, else ~/.kube/config).")
	fs.StringVar(&o.physical.Context, "physical-context", "", "Context of the physical cluster in that kubeconfig (default: its current context).")
	fs.StringVar(&o.physicalServer, "physical-server", "", "Address of the physical API server as the virtual cluster reaches it (default: the context's server).")
	fs.StringVar(&o.clusterID, "cluster-id", "", "The binding's clusterID: a DNS label of at most 24 characters (default: NAME).")
	fs.StringVar(&o.mountNamespace, "mount-namespace", "", "Namespace of the physical cluster where the pods run (default: kubeocean-<clusterID>).")
	fs.StringVar(&o.nodeSelector, "node-selector", "", "Label selector of the physical nodes to lend, e.g. 'pool=spare' or 'zone in (a,b)' (default: all nodes).")
	fs.DurationVar(&o.tokenDuration, "token-duration", 90*24*time.Hour, "Lifetime of the binding's credential (a bound token); the API server may shorten it. The binding stops working when it ends: rotate before with --rotate-token.")
	fs.BoolVar(&o.rotateToken, "rotate-token", false, "Issue a new credential, write it to the kubeconfig Secret, wait until the binding is Ready, then revoke the binding's previous credentials.")
	fs.BoolVar(&o.policy, "policy", false, "Also create a ResourceLeasingPolicy NAME that lends the selected nodes in full at all times.")
	fs.BoolVar(&o.dryRun, "dry-run", false, "Change nothing: print, per object, a diff of what exists against what bind would create (secret values redacted).")
	fs.DurationVar(&o.wait, "wait", 2*time.Minute, "How long to wait for the binding to become Ready; 0 does not wait.")
	return cmd
}

func (o *bindOptions) complete() (*kubeoceanv1alpha1.ClusterBinding, error) {
	if o.clusterID == "" {
		o.clusterID = o.name
	}
	if o.mountNamespace == "" {
		o.mountNamespace = "kubeocean-" + o.clusterID
	}
	binding := &kubeoceanv1alpha1.ClusterBinding{
		TypeMeta:   metav1.TypeMeta{APIVersion: kubeoceanv1alpha1.SchemeGroupVersion.String(), Kind: "ClusterBinding"},
		ObjectMeta: metav1.ObjectMeta{Name: o.name},
		Spec: kubeoceanv1alpha1.ClusterBindingSpec{
			ClusterID:      o.clusterID,
			MountNamespace: o.mountNamespace,
			SecretRef:      kubeoceanv1alpha1.SecretReference{Namespace: systemNamespace, Name: o.name + "-kubeconfig"},
		},
	}
	if o.nodeSelector != "" {
		selector, err := nodeSelector(o.nodeSelector)
		if err != nil {
			return nil, fmt.Errorf("--node-selector: %w", err)
		}
		binding.Spec.NodeSelector = selector
	}
	if errs := validation.ClusterBindingSpec(&binding.Spec); len(errs) > 0 {
		return nil, fmt.Errorf("the ClusterBinding would be refused: %w", errs.ToAggregate())
	}
	return binding, nil
}

func (o *bindOptions) run(ctx context.Context, virtualFlags ClusterFlags, out io.Writer) error {
	binding, err := o.complete()
	if err != nil {
		return err
	}
	physicalConfig, err := o.physical.Loader().ClientConfig()
	if err != nil {
		return fmt.Errorf("the physical cluster's kubeconfig: %w", err)
	}
	physical, err := newClients(physicalConfig)
	if err != nil {
		return err
	}
	virtual, err := virtualFlags.clients("virtual")
	if err != nil {
		return err
	}
	if _, err := virtual.kube.CoreV1().Namespaces().Get(ctx, systemNamespace, metav1.GetOptions{}); err != nil && !(o.dryRun && apierrors.IsNotFound(err)) {
		return fmt.Errorf("virtual cluster: namespace %s: %w (install Kubeocean there first)", systemNamespace, err)
	}
	b := &binder{bindOptions: o, physical: physical, virtual: virtual, out: out,
		physicalApply: newApplier("physical", physical, o.dryRun, out),
		virtualApply:  newApplier("virtual", virtual, o.dryRun, out),
		verifyToken: func(ctx context.Context, token string) error {
			return verifyToken(ctx, physical.config, token, o.mountNamespace)
		},
	}
	return b.bind(ctx, binding)
}

func (o *bindOptions) leasingPolicy(binding *kubeoceanv1alpha1.ClusterBinding) *kubeoceanv1alpha1.ResourceLeasingPolicy {
	return &kubeoceanv1alpha1.ResourceLeasingPolicy{
		TypeMeta:   metav1.TypeMeta{APIVersion: kubeoceanv1alpha1.SchemeGroupVersion.String(), Kind: "ResourceLeasingPolicy"},
		ObjectMeta: metav1.ObjectMeta{Name: o.name},
		// Pinned to the binding's mount namespace: a binding of the same
		// name in another virtual cluster does not use it.
		Spec: kubeoceanv1alpha1.ResourceLeasingPolicySpec{Cluster: o.name, MountNamespace: binding.Spec.MountNamespace, NodeSelector: binding.Spec.NodeSelector},
	}
}

// nodeSelector turns a label selector into a node selector of one term.
func nodeSelector(s string) (*corev1.NodeSelector, error) {
	selector, err := labels.Parse(s)
	if err != nil {
		return nil, err
	}
	requirements, _ := selector.Requirements()
	var term corev1.NodeSelectorTerm
	for _, r := range requirements {
		req := corev1.NodeSelectorRequirement{Key: r.Key(), Values: r.Values().List()}
		switch r.Operator() {
		case selection.Equals, selection.DoubleEquals, selection.In:
			req.Operator = corev1.NodeSelectorOpIn
		case selection.NotEquals, selection.NotIn:
			req.Operator = corev1.NodeSelectorOpNotIn
		case selection.Exists:
			req.Operator = corev1.NodeSelectorOpExists
		case selection.DoesNotExist:
			req.Operator = corev1.NodeSelectorOpDoesNotExist
		case selection.GreaterThan:
			req.Operator = corev1.NodeSelectorOpGt
		case selection.LessThan:
			req.Operator = corev1.NodeSelectorOpLt
		default:
			return nil, fmt.Errorf("operator %q is not supported", r.Operator())
		}
		term.MatchExpressions = append(term.MatchExpressions, req)
	}
	return &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{term}}, nil
}

// waitReady waits until the binding is Ready, and fails at once with the
// reason when it is Failed.
func waitReady(ctx context.Context, virtual *clients, name string, timeout time.Duration, out io.Writer) error {
	var last *kubeoceanv1alpha1.ClusterBinding
	err := wait.PollUntilContextTimeout(ctx, time.Second, timeout, true, func(ctx context.Context) (bool, error) {
		b, err := virtual.ocean.KubeoceanV1alpha1().ClusterBindings().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		last = b
		return b.Status.Phase == kubeoceanv1alpha1.ClusterBindingReady || b.Status.Phase == kubeoceanv1alpha1.ClusterBindingFailed, nil
	})
	ready := func() string {
		if last == nil {
			return "no status yet"
		}
		c := meta.FindStatusCondition(last.Status.Conditions, kubeoceanv1alpha1.ClusterBindingConditionReady)
		if c == nil {
			return string(last.Status.Phase)
		}
		return fmt.Sprintf("%s (%s): %s", last.Status.Phase, c.Reason, c.Message)
	}
	switch {
	case wait.Interrupted(err):
		return fmt.Errorf("ClusterBinding %s is not Ready after %v: %s", name, timeout, ready())
	case err != nil:
		return err
	case last.Status.Phase == kubeoceanv1alpha1.ClusterBindingFailed:
		return fmt.Errorf("ClusterBinding %s failed: %s", name, ready())
	}
	fmt.Fprintf(out, "ClusterBinding %s is Ready\n", name)
	return nil
}
