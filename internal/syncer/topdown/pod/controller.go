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

package pod

import (
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/types"
	corev1informers "k8s.io/client-go/informers/core/v1"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	corev1listers "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"

	"github.com/kubeocean/kubeocean/internal/ownership"
	"github.com/kubeocean/kubeocean/internal/syncer/allowances"
	"github.com/kubeocean/kubeocean/internal/syncer/topdown/nametaken"
	"github.com/kubeocean/kubeocean/internal/syncer/topdown/podidentity"
	"github.com/kubeocean/kubeocean/internal/syncer/topdown/podspec"
	"github.com/kubeocean/kubeocean/internal/syncer/topdown/preflight"
	"github.com/kubeocean/kubeocean/pkg/controller"
)

// Name names the controller, its queue and its metrics.
const Name = "topdown-pod"

// PodsByNodeIndex is the virtual pod informer index by spec.nodeName; a
// virtual node showing up late brings the pods already bound to it. The
// bottom-up node controller registers the same index under the same name.
const PodsByNodeIndex = "spec.nodeName"

// VirtualClient is what the controller does in the virtual cluster: read,
// annotate, fail and finish pods; request service-account tokens; read the
// cluster CA published as kube-root-ca.crt.
type VirtualClient interface {
	corev1client.PodsGetter
	corev1client.ServiceAccountsGetter
	corev1client.ConfigMapsGetter
}

// PhysicalClient is what the controller does in the physical cluster:
// create, patch and delete pods and their token Secrets.
//
// Of the pods and Secrets that Create, Update and UpdateStatus return, on
// either client, the controller reads the metadata only: the syncer's
// clients ask the API servers for nothing more (compact.LeanWrites).
type PhysicalClient interface {
	corev1client.PodsGetter
	corev1client.SecretsGetter
}

// Options are the dependencies of the controller. All but VirtualAPIServer,
// Metrics and Clock are required.
type Options struct {
	// ClusterID is the binding's cluster ID: virtual nodes labelled with it
	// are this controller's.
	ClusterID string
	// BindingUID is the binding's UID: every physical object the controller
	// makes carries it (see package ownership), and only such objects are
	// updated or deleted.
	BindingUID types.UID
	// MountNamespace is the physical namespace the binding's pods go to.
	MountNamespace string
	// VirtualAPIServer, "host:port", is where pods in the physical cluster
	// reach the virtual API server. When set, every container gets
	// KUBERNETES_SERVICE_HOST, KUBERNETES_SERVICE_PORT and
	// KUBERNETES_SERVICE_PORT_HTTPS (unless it sets them itself) and, when
	// host is an IP, host aliases for the kubernetes.default names, so
	// in-cluster clients talk to the virtual cluster with the token this
	// controller issues. When empty they reach the physical API server,
	// where that token means nothing.
	VirtualAPIServer string

	VirtualClient  VirtualClient
	PhysicalClient PhysicalClient

	// VirtualPods: all namespaces; at least every pod bound to one of the
	// binding's virtual nodes (the syncer caches no others). The
	// controller adds the PodsByNodeIndex index unless it is there.
	VirtualPods corev1informers.PodInformer
	// VirtualNodes: the binding's virtual nodes (kubeocean.io/managed-by=
	// kubeocean,kubeocean.io/cluster-id=<ClusterID>); other nodes are
	// ignored anyway.
	VirtualNodes corev1informers.NodeInformer
	// PhysicalPods and PhysicalSecrets: MountNamespace, scoped to the
	// binding's identity (ownership.Owner.Selector), so that another
	// binding's objects in the same namespace are not even cached.
	// PhysicalSecrets holds the token Secrets it made (label
	// kubeoceanv1alpha1.LabelPodToken), transformed by CompactTokenSecret: the controller
	// reads them through the informer's store, never through its Lister.
	PhysicalPods    corev1informers.PodInformer
	PhysicalSecrets corev1informers.SecretInformer
	// VirtualRootCAs: the virtual cluster's kube-root-ca.crt ConfigMaps,
	// one per namespace (a field selector on that name will do). The CA
	// a token Secret holds is read from them. Optional: without them, or
	// for a namespace they do not show yet, it is read live, once per
	// token Secret written.
	VirtualRootCAs corev1informers.ConfigMapInformer

	// Dependents copies ConfigMaps, Secrets and PVCs to the physical
	// cluster; *dependents.Syncer.
	Dependents Dependents
	// DependencyEvents are informers on the virtual cluster's ConfigMaps,
	// Secrets and PersistentVolumeClaims (metadata only will do), keyed by
	// kind (dependents.KindConfigMap, ...). A pod waiting for one of them
	// is reconciled as soon as it appears or changes, rather than on its
	// retry backoff. Optional: without them waiting pods only retry.
	DependencyEvents map[string]cache.SharedIndexInformer
	// Recorder records events on virtual pods: it writes to the virtual
	// cluster.
	Recorder record.EventRecorder
	// Metrics receives reconcile and queue metrics; nil records none.
	Metrics *controller.Metrics
	// Clock drives token refreshes and the queue's delays; default real.
	Clock clock.WithTicker

	// MountNamespaces: the physical mount namespace (a field selector on
	// its name will do). Its Pod Security labels say which pods may be
	// created there, and a change of them retries the pods refused.
	// Optional: without it no pod is judged before it is sent.
	MountNamespaces corev1informers.NamespaceInformer
	// ResourceQuotas: the quotas of the mount namespace; a change of one
	// retries the pods refused. Optional.
	ResourceQuotas corev1informers.ResourceQuotaInformer
	// SyncDaemonSetPods lets pods of DaemonSets run on virtual nodes. Off,
	// they stay Pending with kubeoceanv1alpha1.PodConditionPhysicalPodCreated False.
	SyncDaemonSetPods bool
	// HostPorts tells the host ports bound on physical nodes by pods
	// Kubeocean does not run: a pod asking for one of them on its node is
	// not created (kubeoceanv1alpha1.PodConditionPhysicalPodCreated False, kubeoceanv1alpha1.ReasonHostPortInUse)
	// until it is freed. Optional.
	HostPorts preflight.HostPorts
	// Allowances say what the lender lets the binding's pods use beyond
	// the defaults (ResourceLeasingPolicy.spec.allowances). Optional:
	// without them nothing is allowed beyond the defaults.
	Allowances *allowances.Source
	// AllowancesSynced, with Allowances, tells that the policies they are
	// read from have synced: no pod is judged before.
	AllowancesSynced cache.InformerSynced
	// Policies: the physical cluster's ResourceLeasingPolicies, which
	// Allowances are read from; a change of what one allows retries the
	// pods refused. Optional.
	Policies cache.SharedIndexInformer
	// Predecessors, optional, proves earlier bindings of this one by the
	// physical pods they made for the virtual pods here (see
	// ownership.Predecessors); such pods and token Secrets are adopted.
	// Without it they block the pod (kubeoceanv1alpha1.ReasonPhysicalPodNameTaken).
	Predecessors *ownership.Predecessors
	// BindingName and BindingStatus, optional, let the controller write the
	// binding's PhysicalNamesTaken condition.
	BindingName   string
	BindingStatus nametaken.BindingStatusWriter
	// Network, optional, gives pods the binding's DNS server and the
	// service variables of their namespace's mirrors (see podspec.Network).
	// Without it they keep the physical cluster's resolver.
	Network podspec.Network
}

// Controller reconciles virtual pods, keyed by namespace/name.
type Controller struct {
	*controller.Controller[cache.ObjectName]

	clusterID    string
	owner        ownership.Owner
	predecessors *ownership.Predecessors
	// blocked writes the binding's PhysicalNamesTaken condition.
	blocked        *nametaken.Condition
	mountNamespace string
	apiServer      *podspec.APIServer
	network        podspec.Network

	virtualClient   VirtualClient
	physicalClient  PhysicalClient
	virtualPods     corev1listers.PodLister
	virtualPodIndex cache.Indexer
	virtualNodes    corev1listers.NodeLister
	physicalPods    corev1listers.PodLister
	dependents      Dependents
	recorder        record.EventRecorder
	clock           clock.WithTicker
	// created expects the physical pods created, by virtual pod, with the
	// virtual pod's UID (see createdPodTimeout).
	created *controller.Expectations[cache.ObjectName, types.UID]
	deleted deletedPods
	// identity makes and renews the pods' token Secrets.
	identity *podidentity.Secrets
	waiters  *waiters

	// preflight judges pods before they are sent, and remembers those
	// refused.
	preflight *preflight.Gate
	// allowances: nil allows nothing beyond the defaults.
	allowances *allowances.Source
}

// New builds the controller and registers its event handlers and index; it
// starts nothing.
func New(opts Options) (*Controller, error) {
	if err := opts.validate(); err != nil {
		return nil, err
	}
	apiServer, err := podspec.ParseAPIServer(opts.VirtualAPIServer)
	if err != nil {
		return nil, fmt.Errorf("topdown pod: VirtualAPIServer: %w", err)
	}
	c := &Controller{
		clusterID:       opts.ClusterID,
		owner:           ownership.Owner{ClusterID: opts.ClusterID, BindingUID: opts.BindingUID},
		predecessors:    opts.Predecessors,
		blocked:         nametaken.New(opts.BindingName, opts.BindingStatus),
		mountNamespace:  opts.MountNamespace,
		apiServer:       apiServer,
		network:         opts.Network,
		virtualClient:   opts.VirtualClient,
		physicalClient:  opts.PhysicalClient,
		virtualPods:     opts.VirtualPods.Lister(),
		virtualPodIndex: opts.VirtualPods.Informer().GetIndexer(),
		virtualNodes:    opts.VirtualNodes.Lister(),
		physicalPods:    opts.PhysicalPods.Lister(),
		dependents:      opts.Dependents,
		recorder:        opts.Recorder,
		clock:           opts.Clock,
		waiters:         newWaiters(),

		allowances: opts.Allowances,
	}
	if c.clock == nil {
		c.clock = clock.RealClock{}
	}
	c.created = controller.NewExpectations[cache.ObjectName, types.UID](createdPodTimeout, c.clock)
	synced := []cache.InformerSynced{
		opts.VirtualPods.Informer().HasSynced, opts.VirtualNodes.Informer().HasSynced,
		opts.PhysicalPods.Informer().HasSynced, opts.PhysicalSecrets.Informer().HasSynced,
	}
	identity := podidentity.Options{
		MountNamespace: opts.MountNamespace, Owner: c.owner, Predecessors: opts.Predecessors,
		Virtual: opts.VirtualClient, Physical: opts.PhysicalClient, Cache: opts.PhysicalSecrets.Informer().GetIndexer(),
		Recorder: opts.Recorder, Clock: c.clock,
	}
	if opts.VirtualRootCAs != nil {
		identity.RootCAs = opts.VirtualRootCAs.Lister()
		synced = append(synced, opts.VirtualRootCAs.Informer().HasSynced)
	}
	c.identity = podidentity.New(identity)
	gate := preflight.Options{
		MountNamespace: opts.MountNamespace, SyncDaemonSetPods: opts.SyncDaemonSetPods,
		Allowances: opts.Allowances, HostPorts: opts.HostPorts,
	}
	gate.Claims, _ = opts.Dependents.(preflight.ClaimVolumes)
	if opts.MountNamespaces != nil {
		gate.Namespaces = opts.MountNamespaces.Lister()
		synced = append(synced, opts.MountNamespaces.Informer().HasSynced)
	}
	if c.preflight, err = preflight.New(gate); err != nil {
		return nil, fmt.Errorf("topdown pod: %w", err)
	}
	if opts.ResourceQuotas != nil {
		synced = append(synced, opts.ResourceQuotas.Informer().HasSynced)
	}
	if opts.HostPorts != nil {
		synced = append(synced, opts.HostPorts.HasSynced)
	}
	if opts.AllowancesSynced != nil {
		synced = append(synced, opts.AllowancesSynced)
	}
	c.Controller = controller.New(controller.Options[cache.ObjectName]{
		Name:      Name,
		Reconcile: c.reconcile,
		// Physical pods are created and deleted from what these caches
		// say: never before all of them have synced.
		HasSynced: synced,
		Metrics:   opts.Metrics,
		Clock:     c.clock,
	})
	c.registerHostPorts(opts)
	return c, c.registerHandlers(opts)
}

func (o Options) validate() error {
	var errs []error
	if o.ClusterID == "" || o.BindingUID == "" || o.MountNamespace == "" {
		errs = append(errs, errors.New("ClusterID, BindingUID and MountNamespace are required"))
	}
	if o.VirtualClient == nil || o.PhysicalClient == nil {
		errs = append(errs, errors.New("VirtualClient and PhysicalClient are required"))
	}
	if o.VirtualPods == nil || o.VirtualNodes == nil || o.PhysicalPods == nil || o.PhysicalSecrets == nil {
		errs = append(errs, errors.New("VirtualPods, VirtualNodes, PhysicalPods and PhysicalSecrets informers are required"))
	}
	if o.Dependents == nil || o.Recorder == nil {
		errs = append(errs, errors.New("Dependents and Recorder are required"))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("topdown pod: %w", err)
	}
	return nil
}
