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

package service

import (
	"context"
	"errors"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	appslisters "k8s.io/client-go/listers/apps/v1"
	corev1listers "k8s.io/client-go/listers/core/v1"
	"k8s.io/klog/v2"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
	kubeoceanclient "github.com/kubeocean/kubeocean/generated/clientset/versioned/typed/kubeocean/v1alpha1"
	kubeoceanlisters "github.com/kubeocean/kubeocean/generated/listers/kubeocean/v1alpha1"
	"github.com/kubeocean/kubeocean/internal/ownership"
	"github.com/kubeocean/kubeocean/pkg/controller"
)

// DNSControllerName names the DNS server controller, its queue and its
// metrics.
const DNSControllerName = "topdown-dns"

// dnsRecheck is how often the DNS server's objects are checked even
// without an event (the uncached ones: ServiceAccount, Role, RoleBinding,
// PodDisruptionBudget).
const dnsRecheck = 5 * time.Minute

// dnsKey is the controller's one key.
const dnsKey = "dns"

// DNSController runs the binding's DNS server in the mount namespace and
// writes the binding's DNSReady condition.
type DNSController struct {
	*controller.Controller[string]

	owner          ownership.Owner
	bindingName    string
	mountNamespace string
	dns            DNSOptions
	client         kubernetes.Interface
	bindingStatus  kubeoceanclient.ClusterBindingsGetter

	bindings         kubeoceanlisters.ClusterBindingLister
	physicalServices corev1listers.ServiceLister
	deploymentLister appslisters.DeploymentLister
}

// NewDNS builds the DNS server controller; it starts nothing.
func NewDNS(opts Options) (*DNSController, error) {
	if err := opts.validate(); err != nil {
		return nil, err
	}
	c := &DNSController{
		owner:       ownership.Owner{ClusterID: opts.ClusterID, BindingUID: opts.BindingUID},
		bindingName: opts.BindingName, mountNamespace: opts.MountNamespace, dns: opts.DNS,
		client: opts.PhysicalClient, bindingStatus: opts.BindingStatus,
		bindings: opts.Bindings.Lister(), physicalServices: opts.PhysicalServices.Lister(),
		deploymentLister: opts.PhysicalDeployments.Lister(),
	}
	c.Controller = controller.New(controller.Options[string]{Name: DNSControllerName, Reconcile: c.sync, Metrics: opts.Metrics})
	dnsObject := func(obj metav1.Object) bool { return obj.GetName() == kubeoceanv1alpha1.DNSName }
	keys := func(metav1.Object) []string { return []string{dnsKey} }
	return c, errors.Join(
		c.Watch(opts.PhysicalServices.Informer(), controller.Handler[metav1.Object, string]{Enqueue: c.Enqueue, Keys: keys, Filter: dnsObject}),
		c.Watch(opts.PhysicalDeployments.Informer(), controller.Handler[metav1.Object, string]{Enqueue: c.Enqueue, Keys: keys, Filter: dnsObject}),
		c.Watch(opts.Bindings.Informer(), controller.Handler[metav1.Object, string]{Enqueue: c.Enqueue, Keys: keys}),
	)
}

func (c *DNSController) sync(ctx context.Context, _ string) (controller.Result, error) {
	binding, err := c.bindings.Get(c.bindingName)
	if apierrors.IsNotFound(err) {
		return controller.Result{}, nil
	}
	if err != nil {
		return controller.Result{}, err
	}
	if binding.DeletionTimestamp != nil {
		// Unbinding sweeps the DNS server's objects; nothing is made again.
		return controller.Result{}, nil
	}
	service, deployment, err := c.ensureObjects(ctx)
	condition := dnsCondition(c.mountNamespace, service, deployment, err)
	if errors.Is(err, errNameTaken) {
		klog.FromContext(ctx).Error(err, "The DNS server's name is taken: left alone")
		err = nil
	}
	if writeErr := c.writeCondition(ctx, binding, condition); writeErr != nil {
		return controller.Result{}, errors.Join(err, writeErr)
	}
	return controller.RequeueAfter(dnsRecheck), err
}

// ensureObjects makes the DNS server's objects, the account and its rights
// before the pods that use them.
func (c *DNSController) ensureObjects(ctx context.Context) (*corev1.Service, *appsv1.Deployment, error) {
	owner, ns := c.owner, c.mountNamespace
	var errs []error
	if _, err := ensure(ctx, c, c.serviceAccounts(), dnsServiceAccount(owner, ns)); err != nil {
		errs = append(errs, err)
	}
	if _, err := ensure(ctx, c, c.roles(), dnsRole(owner, ns)); err != nil {
		errs = append(errs, err)
	}
	if _, err := ensure(ctx, c, c.roleBindings(), dnsRoleBinding(owner, ns)); err != nil {
		errs = append(errs, err)
	}
	if _, err := ensure(ctx, c, c.disruptionBudgets(), dnsPDB(owner, ns)); err != nil {
		errs = append(errs, err)
	}
	service, err := ensure(ctx, c, c.services(), dnsService(owner, ns))
	if err != nil {
		service = nil
		errs = append(errs, err)
	}
	deployment, err := ensure(ctx, c, c.deployments(), dnsDeployment(owner, ns, c.dns))
	if err != nil {
		deployment = nil
		errs = append(errs, err)
	}
	return service, deployment, errors.Join(errs...)
}

// dnsCondition says whether the DNS server answers and, when it does not,
// what pods get meanwhile.
func dnsCondition(mountNamespace string, service *corev1.Service, deployment *appsv1.Deployment, err error) metav1.Condition {
	c := metav1.Condition{Type: kubeoceanv1alpha1.ClusterBindingConditionDNSReady, Status: metav1.ConditionFalse}
	name := mountNamespace + "/" + kubeoceanv1alpha1.DNSName
	switch {
	case errors.Is(err, errNameTaken):
		c.Reason = kubeoceanv1alpha1.ReasonDNSNameTaken
		c.Message = fmt.Sprintf("%v; the binding's DNS server does not run and pods keep the physical cluster's DNS", err)
	case service == nil || service.Spec.ClusterIP == "" || service.Spec.ClusterIP == corev1.ClusterIPNone:
		c.Reason = kubeoceanv1alpha1.ReasonDNSServiceMissing
		c.Message = fmt.Sprintf("The DNS Service %s has no ClusterIP yet: pods created meanwhile keep the physical cluster's DNS until they are recreated", name)
		if err != nil {
			c.Message += ": " + err.Error()
		}
	case deployment == nil || deployment.Status.AvailableReplicas < 1:
		c.Reason = kubeoceanv1alpha1.ReasonDNSUnavailable
		c.Message = fmt.Sprintf("The DNS Service %s (%s) has no available replica: pods are pointed at it and their lookups fail until one answers", name, service.Spec.ClusterIP)
	default:
		c.Status, c.Reason = metav1.ConditionTrue, kubeoceanv1alpha1.ReasonDNSAvailable
		c.Message = fmt.Sprintf("The DNS server %s answers at %s", name, service.Spec.ClusterIP)
	}
	return c
}

// writeCondition writes the condition when it differs from the cached
// binding's, on a fresh read (other controllers write the same status).
func (c *DNSController) writeCondition(ctx context.Context, cached *kubeoceanv1alpha1.ClusterBinding, condition metav1.Condition) error {
	if sameCondition(meta.FindStatusCondition(cached.Status.Conditions, condition.Type), condition) {
		return nil
	}
	bindings := c.bindingStatus.ClusterBindings()
	var err error
	for range 2 {
		var binding *kubeoceanv1alpha1.ClusterBinding
		binding, err = bindings.Get(ctx, c.bindingName, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return err
		}
		if sameCondition(meta.FindStatusCondition(binding.Status.Conditions, condition.Type), condition) {
			return nil
		}
		condition.ObservedGeneration = binding.Generation
		meta.SetStatusCondition(&binding.Status.Conditions, condition)
		if _, err = bindings.UpdateStatus(ctx, binding, metav1.UpdateOptions{}); !apierrors.IsConflict(err) {
			break
		}
	}
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("writing the binding's %s condition: %w", condition.Type, err)
	}
	return nil
}

func sameCondition(current *metav1.Condition, want metav1.Condition) bool {
	return current != nil && current.Status == want.Status && current.Reason == want.Reason && current.Message == want.Message
}
