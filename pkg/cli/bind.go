package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"time"

	"github.com/spf13/cobra"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
	"github.com/kubeocean/kubeocean/manifests"
	"github.com/kubeocean/kubeocean/pkg/validation"
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

  physical cluster: the ResourceLeasingPolicy CRD, the syncer's ServiceAccount and RBAC,
                    the mount namespace, and a bound token for the syncer (TokenRequest);
  virtual cluster:  the kubeconfig Secret kubeocean-system/NAME-kubeconfig and the ClusterBinding NAME;
  optionally (--policy) a ResourceLeasingPolicy that lends the selected nodes at all times.

Everything is applied with server-side apply, so running it again changes nothing;
an existing credential is kept unless --rotate-token. --dry-run prints the objects
(secret values redacted) and changes nothing. Kubeocean must be installed in the
virtual cluster (namespace kubeocean-system, the CRDs and the manager).`,
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
	fs.DurationVar(&o.tokenDuration, "token-duration", 365*24*time.Hour, "Lifetime of the syncer's bound token; the API server may shorten it. Rotate before it ends with --rotate-token.")
	fs.BoolVar(&o.rotateToken, "rotate-token", false, "Issue a new token even if the kubeconfig Secret exists.")
	fs.BoolVar(&o.policy, "policy", false, "Also create a ResourceLeasingPolicy NAME that lends the selected nodes in full at all times.")
	fs.BoolVar(&o.dryRun, "dry-run", false, "Print the objects instead of applying them.")
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
	physicalLoader := o.physical.Loader()
	physicalConfig, err := physicalLoader.ClientConfig()
	if err != nil {
		return fmt.Errorf("the physical cluster's kubeconfig: %w", err)
	}
	physical, err := newClients(physicalConfig)
	if err != nil {
		return err
	}
	var virtual *clients
	if !o.dryRun {
		if virtual, err = virtualFlags.clients("virtual"); err != nil {
			return err
		}
		if _, err := virtual.kube.CoreV1().Namespaces().Get(ctx, systemNamespace, metav1.GetOptions{}); err != nil {
			return fmt.Errorf("virtual cluster: namespace %s: %w (install Kubeocean there first)", systemNamespace, err)
		}
	}

	physicalObjects, err := o.physicalObjects()
	if err != nil {
		return err
	}
	if err := keepOtherMountNamespaces(ctx, physical, physicalObjects, o.mountNamespace); err != nil {
		return err
	}
	if err := newApplier("physical", physical, o.dryRun, out).apply(ctx, physicalObjects...); err != nil {
		return err
	}

	secret, err := o.kubeconfigSecret(ctx, physical, virtual)
	if err != nil {
		return err
	}
	var virtualObjects []*unstructured.Unstructured
	if secret != nil {
		virtualObjects = append(virtualObjects, secret)
	}
	b, err := toUnstructured(binding)
	if err != nil {
		return err
	}
	virtualObjects = append(virtualObjects, b)
	if err := newApplier("virtual", virtual, o.dryRun, out).apply(ctx, virtualObjects...); err != nil {
		return err
	}
	if o.policy {
		policy, err := toUnstructured(o.leasingPolicy(binding))
		if err != nil {
			return err
		}
		if err := newApplier("physical", physical, o.dryRun, out).apply(ctx, policy); err != nil {
			return err
		}
	}
	if o.dryRun || o.wait == 0 {
		return nil
	}
	return waitReady(ctx, virtual, o.name, o.wait, out)
}

// physicalObjects: the ResourceLeasingPolicy CRD, then the shipped physical
// RBAC with its mount namespace renamed to the binding's.
func (o *bindOptions) physicalObjects() ([]*unstructured.Unstructured, error) {
	crd, err := manifests.Read(manifests.ResourceLeasingPolicyCRD)
	if err != nil {
		return nil, err
	}
	objects, err := decodeYAML(crd)
	if err != nil {
		return nil, err
	}
	files, err := manifests.Kustomization("rbac/physical")
	if err != nil {
		return nil, err
	}
	for _, f := range files {
		decoded, err := decodeYAML(f)
		if err != nil {
			return nil, err
		}
		for _, obj := range decoded {
			if obj.GetKind() == "Namespace" && obj.GetName() == shippedMountNamespace {
				obj.SetName(o.mountNamespace)
			}
			if obj.GetNamespace() == shippedMountNamespace {
				obj.SetNamespace(o.mountNamespace)
			}
			renameResourceNames(obj, shippedMountNamespace, o.mountNamespace)
			// The long-lived token Secret is left out: bind issues a bound
			// token, which expires and can be rotated.
			if obj.GetKind() == "Secret" && obj.GetNamespace() == systemNamespace {
				continue
			}
			objects = append(objects, obj)
		}
	}
	return objects, nil
}

// kubeconfigSecret returns the Secret to apply, or nil to keep the one
// that exists (a new token only with --rotate-token).
func (o *bindOptions) kubeconfigSecret(ctx context.Context, physical, virtual *clients) (*unstructured.Unstructured, error) {
	name := o.name + "-kubeconfig"
	if !o.dryRun && !o.rotateToken {
		_, err := virtual.kube.CoreV1().Secrets(systemNamespace).Get(ctx, name, metav1.GetOptions{})
		if err == nil {
			return nil, nil
		}
		if !apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("virtual cluster: secret %s/%s: %w", systemNamespace, name, err)
		}
	}
	token := "<issued at apply time>"
	if !o.dryRun {
		seconds := int64(o.tokenDuration.Seconds())
		tr, err := physical.kube.CoreV1().ServiceAccounts(systemNamespace).CreateToken(ctx, syncerServiceAccount,
			&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &seconds}}, metav1.CreateOptions{})
		if err != nil {
			return nil, fmt.Errorf("physical cluster: a token for %s/%s: %w", systemNamespace, syncerServiceAccount, err)
		}
		token = tr.Status.Token
	}
	kubeconfig, err := o.kubeconfig(physical, token)
	if err != nil {
		return nil, err
	}
	return toUnstructured(&corev1.Secret{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: metav1.ObjectMeta{Namespace: systemNamespace, Name: name},
		Type:       corev1.SecretTypeOpaque,
		Data:       map[string][]byte{"kubeconfig": kubeconfig},
	})
}

// kubeconfig is self-contained, as the manager requires: the server, its
// CA inline and the token.
func (o *bindOptions) kubeconfig(physical *clients, token string) ([]byte, error) {
	server := o.physicalServer
	if server == "" {
		server = physical.config.Host
	}
	ca := physical.config.CAData
	if len(ca) == 0 && physical.config.CAFile != "" {
		var err error
		if ca, err = os.ReadFile(physical.config.CAFile); err != nil {
			return nil, fmt.Errorf("the physical cluster's CA: %w", err)
		}
	}
	config := clientcmdapi.NewConfig()
	config.Clusters[o.clusterID] = &clientcmdapi.Cluster{Server: server, CertificateAuthorityData: ca,
		InsecureSkipTLSVerify: physical.config.Insecure, TLSServerName: physical.config.ServerName}
	config.AuthInfos[syncerServiceAccount] = &clientcmdapi.AuthInfo{Token: token}
	config.Contexts[o.clusterID] = &clientcmdapi.Context{Cluster: o.clusterID, AuthInfo: syncerServiceAccount}
	config.CurrentContext = o.clusterID
	return clientcmd.Write(*config)
}

func (o *bindOptions) leasingPolicy(binding *kubeoceanv1alpha1.ClusterBinding) *kubeoceanv1alpha1.ResourceLeasingPolicy {
	return &kubeoceanv1alpha1.ResourceLeasingPolicy{
		TypeMeta:   metav1.TypeMeta{APIVersion: kubeoceanv1alpha1.SchemeGroupVersion.String(), Kind: "ResourceLeasingPolicy"},
		ObjectMeta: metav1.ObjectMeta{Name: o.name},
		Spec:       kubeoceanv1alpha1.ResourceLeasingPolicySpec{Cluster: o.name, NodeSelector: binding.Spec.NodeSelector},
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

// keepOtherMountNamespaces: a cluster-wide rule that names the mount
// namespace in resourceNames (the syncer watches its namespace by name) is
// shared by every binding to the cluster, so the names other bindings
// added stay, and the binding's own is added.
func keepOtherMountNamespaces(ctx context.Context, physical *clients, objects []*unstructured.Unstructured, mount string) error {
	for _, obj := range objects {
		if obj.GetKind() != "ClusterRole" || !namesInRules(obj, mount) {
			continue
		}
		existing, err := physical.kube.RbacV1().ClusterRoles().Get(ctx, obj.GetName(), metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return fmt.Errorf("physical cluster: reading ClusterRole %s: %w", obj.GetName(), err)
		}
		rules, _, _ := unstructured.NestedSlice(obj.Object, "rules")
		for i, r := range rules {
			rule, ok := r.(map[string]any)
			names, _, _ := unstructured.NestedStringSlice(rule, "resourceNames")
			if !ok || !slices.Contains(names, mount) {
				continue
			}
			resources, _, _ := unstructured.NestedStringSlice(rule, "resources")
			for _, have := range existing.Rules {
				if slices.Equal(have.Resources, resources) {
					names = append(names, have.ResourceNames...)
				}
			}
			slices.Sort(names)
			_ = unstructured.SetNestedStringSlice(rule, slices.Compact(names), "resourceNames")
			rules[i] = rule
		}
		if err := unstructured.SetNestedSlice(obj.Object, rules, "rules"); err != nil {
			return err
		}
	}
	return nil
}

// namesInRules says whether a rule of obj names name in resourceNames.
func namesInRules(obj *unstructured.Unstructured, name string) bool {
	rules, _, _ := unstructured.NestedSlice(obj.Object, "rules")
	for _, r := range rules {
		if rule, ok := r.(map[string]any); ok {
			names, _, _ := unstructured.NestedStringSlice(rule, "resourceNames")
			if slices.Contains(names, name) {
				return true
			}
		}
	}
	return false
}

// renameResourceNames replaces from by to in the resourceNames of obj's
// rules.
func renameResourceNames(obj *unstructured.Unstructured, from, to string) {
	rules, found, _ := unstructured.NestedSlice(obj.Object, "rules")
	if !found {
		return
	}
	for i, r := range rules {
		rule, ok := r.(map[string]any)
		if !ok {
			continue
		}
		names, _, _ := unstructured.NestedStringSlice(rule, "resourceNames")
		for j, n := range names {
			if n == from {
				names[j] = to
			}
		}
		if len(names) > 0 {
			_ = unstructured.SetNestedStringSlice(rule, names, "resourceNames")
			rules[i] = rule
		}
	}
	_ = unstructured.SetNestedSlice(obj.Object, rules, "rules")
}
