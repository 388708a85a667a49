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

package policy

import (
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	corev1informers "k8s.io/client-go/informers/core/v1"
	corev1listers "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
	kubeoceanv1alpha1client "github.com/kubeocean/kubeocean/generated/clientset/versioned/typed/kubeocean/v1alpha1"
	kubeoceaninformers "github.com/kubeocean/kubeocean/generated/informers/externalversions/kubeocean/v1alpha1"
	kubeoceanlisters "github.com/kubeocean/kubeocean/generated/listers/kubeocean/v1alpha1"
	"github.com/kubeocean/kubeocean/internal/ownership"
	"github.com/kubeocean/kubeocean/pkg/controller"
)

// ControllerName names the controller, its queue and its metrics.
const ControllerName = "bottomup-policy"

// Options are the dependencies of the policy controller.
type Options struct {
	// BindingName and MountNamespace are the ClusterBinding this syncer
	// serves and its mount namespace; only the policies that lend to it
	// (ownership.PolicyLendsTo) are reconciled.
	BindingName, MountNamespace string
	// Client writes policies (metadata and status) in the physical cluster.
	Client kubeoceanv1alpha1client.ResourceLeasingPoliciesGetter
	// Policies is an informer on the physical cluster's policies.
	Policies kubeoceaninformers.ResourceLeasingPolicyInformer
	// VirtualNodes is an informer on the virtual nodes of this binding
	// (scoped by the wiring to kubeocean.io/cluster-id=<clusterID>).
	VirtualNodes corev1informers.NodeInformer
	// BindingActive, when set, reports whether the binding still lives;
	// while it does not, no finalizer is added: the syncer's unbinding is
	// releasing the binding's policies and must not race with us.
	BindingActive func() bool
	// Recorder emits events on the policies.
	Recorder record.EventRecorder
	// Metrics receives the controller's metrics; nil records none.
	Metrics *controller.Metrics
	// Clock tells the time windows apart and drives requeues; nil is the
	// real clock.
	Clock clock.WithTicker
}

// Controller reconciles the ResourceLeasingPolicies of one binding, keyed by
// policy name.
type Controller struct {
	*controller.Controller[string]

	bindingName    string
	mountNamespace string
	active         func() bool
	client         kubeoceanv1alpha1client.ResourceLeasingPoliciesGetter
	policies       kubeoceanlisters.ResourceLeasingPolicyLister
	nodes          corev1listers.NodeLister
	recorder       record.EventRecorder
	clock          clock.PassiveClock
}

// New builds the controller and registers its event handlers; it starts
// nothing. Run it with Run(ctx, workers) after the informers are started.
func New(opts Options) (*Controller, error) {
	if err := opts.validate(); err != nil {
		return nil, err
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	c := &Controller{
		bindingName:    opts.BindingName,
		mountNamespace: opts.MountNamespace,
		active:         opts.BindingActive,
		client:         opts.Client,
		policies:       opts.Policies.Lister(),
		nodes:          opts.VirtualNodes.Lister(),
		recorder:       opts.Recorder,
		clock:          opts.Clock,
	}

	c.Controller = controller.New(controller.Options[string]{
		Name:      ControllerName,
		Reconcile: c.reconcile,
		Metrics:   opts.Metrics,
		Clock:     opts.Clock,
	})
	if err := c.Watch(opts.Policies.Informer(), policyHandler(opts.BindingName, opts.MountNamespace, c.Enqueue)); err != nil {
		return nil, err
	}
	if err := c.Watch(opts.VirtualNodes.Informer(), virtualNodeHandler(opts.BindingName, c.Enqueue)); err != nil {
		return nil, err
	}
	return c, nil
}

func (opts *Options) validate() error {
	var errs []error
	if opts.BindingName == "" {
		errs = append(errs, errors.New("option BindingName is required"))
	}
	if opts.MountNamespace == "" {
		errs = append(errs, errors.New("option MountNamespace is required"))
	}
	if opts.Client == nil {
		errs = append(errs, errors.New("option Client is required"))
	}
	if opts.Policies == nil {
		errs = append(errs, errors.New("option Policies is required"))
	}
	if opts.VirtualNodes == nil {
		errs = append(errs, errors.New("option VirtualNodes is required"))
	}
	if opts.Recorder == nil {
		errs = append(errs, errors.New("option Recorder is required"))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("policy controller options: %w", err)
	}
	return nil
}

// policyHandler enqueues the policies that lend to the binding; the policies
// of other bindings (another virtual cluster's binding of the same name
// among them) are other syncers' business.
func policyHandler(bindingName, mountNamespace string, enqueue func(string)) controller.Handler[*kubeoceanv1alpha1.ResourceLeasingPolicy, string] {
	return controller.Handler[*kubeoceanv1alpha1.ResourceLeasingPolicy, string]{
		Enqueue: enqueue,
		Keys: func(p *kubeoceanv1alpha1.ResourceLeasingPolicy) []string {
			return []string{p.Name}
		},
		Filter: func(p *kubeoceanv1alpha1.ResourceLeasingPolicy) bool {
			return ownership.PolicyLendsTo(p, bindingName, mountNamespace)
		},
	}
}

// virtualNodeHandler maps a virtual node of bindingName to the policy its
// annotation names, so that a deleted policy waiting for its nodes to be
// reclaimed is woken when a node lets go of it (annotation changed or node
// deleted). Other node updates (status, heartbeats) are dropped.
func virtualNodeHandler(bindingName string, enqueue func(string)) controller.Handler[*corev1.Node, string] {
	return controller.Handler[*corev1.Node, string]{
		Enqueue: enqueue,
		Keys:    policyNamedBy,
		Filter: func(n *corev1.Node) bool {
			return n.Labels[kubeoceanv1alpha1.LabelClusterBinding] == bindingName
		},
		Changed: func(oldNode, newNode *corev1.Node) bool {
			return oldNode.Annotations[kubeoceanv1alpha1.AnnotationResourceLeasingPolicy] !=
				newNode.Annotations[kubeoceanv1alpha1.AnnotationResourceLeasingPolicy] ||
				oldNode.Labels[kubeoceanv1alpha1.LabelClusterBinding] != newNode.Labels[kubeoceanv1alpha1.LabelClusterBinding]
		},
	}
}

// policyNamedBy is the policy a virtual node is lent by, if any.
func policyNamedBy(node *corev1.Node) []string {
	if name := node.Annotations[kubeoceanv1alpha1.AnnotationResourceLeasingPolicy]; name != "" {
		return []string{name}
	}
	return nil
}
