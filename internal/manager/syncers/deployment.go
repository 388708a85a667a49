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

package syncers

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	appsv1informers "k8s.io/client-go/informers/apps/v1"
	corev1informers "k8s.io/client-go/informers/core/v1"
	appsv1client "k8s.io/client-go/kubernetes/typed/apps/v1"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	appsv1listers "k8s.io/client-go/listers/apps/v1"
	corev1listers "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
	"github.com/kubeocean/kubeocean/internal/manager/syncertemplate"
	"github.com/kubeocean/kubeocean/pkg/controller"
)

// ManagedSelector selects the syncer objects the manager keeps (label
// kubeoceanv1alpha1.LabelAppManagedBy); the wiring scopes its informers to
// it.
const ManagedSelector = kubeoceanv1alpha1.LabelAppManagedBy + "=" + kubeoceanv1alpha1.AppManagedByManager

// conflictRetry is when a name taken by another owner is looked at again.
const conflictRetry = 30 * time.Second

// TemplateSource gives the templates in force.
type TemplateSource interface {
	Current() *syncertemplate.Templates
}

// DeploymentsOptions configure Deployments.
type DeploymentsOptions struct {
	// Namespace holds the syncer objects (--syncer-namespace).
	Namespace string
	// Image is the syncer image (--syncer-image).
	Image string
	// ServiceAccountName is the account syncer pods run as.
	ServiceAccountName string
	// Args are passed to every syncer after the ones the manager requires.
	Args []string
	// Templates render the objects of each binding's syncer.
	Templates TemplateSource
	// Clients write the syncer objects in the virtual cluster.
	DeploymentsClient     appsv1client.DeploymentsGetter
	ServiceAccountsClient corev1client.ServiceAccountsGetter
	ConfigMapsClient      corev1client.ConfigMapsGetter
	// Informers on the syncer objects, scoped to Namespace and
	// ManagedSelector.
	Deployments     appsv1informers.DeploymentInformer
	ServiceAccounts corev1informers.ServiceAccountInformer
	ConfigMaps      corev1informers.ConfigMapInformer
	// Recorder records events on bindings.
	Recorder record.EventRecorder
	// OnChange is called with a binding's name when one of its syncer
	// objects changes or is deleted.
	OnChange func(bindingName string)
}

// Deployments runs each binding's syncer as objects rendered from templates.
type Deployments struct {
	opts            DeploymentsOptions
	deployments     appsv1listers.DeploymentLister
	serviceAccounts corev1listers.ServiceAccountLister
	configMaps      corev1listers.ConfigMapLister
	synced          []cache.InformerSynced
}

var _ Runner = &Deployments{}

// NewDeployments registers the informers' handlers; it starts nothing.
func NewDeployments(opts DeploymentsOptions) (*Deployments, error) {
	if opts.Namespace == "" || opts.Image == "" || opts.Templates == nil || opts.DeploymentsClient == nil ||
		opts.ServiceAccountsClient == nil || opts.ConfigMapsClient == nil || opts.Deployments == nil ||
		opts.ServiceAccounts == nil || opts.ConfigMaps == nil || opts.Recorder == nil || opts.OnChange == nil {
		return nil, errors.New("deployment syncers: every option but ServiceAccountName and Args is required")
	}
	d := &Deployments{
		opts:            opts,
		deployments:     opts.Deployments.Lister(),
		serviceAccounts: opts.ServiceAccounts.Lister(),
		configMaps:      opts.ConfigMaps.Lister(),
	}
	informers := []cache.SharedIndexInformer{opts.Deployments.Informer(), opts.ServiceAccounts.Informer(), opts.ConfigMaps.Informer()}
	for _, informer := range informers {
		registration, err := informer.AddEventHandler(d.handler())
		if err != nil {
			return nil, fmt.Errorf("registering a syncer object handler: %w", err)
		}
		d.synced = append(d.synced, registration.HasSynced)
	}
	return d, nil
}

// handler tells the controller about any change to a syncer object; Ensure
// decides whether it matters.
func (d *Deployments) handler() controller.Handler[metav1.Object, string] {
	return controller.Handler[metav1.Object, string]{Enqueue: d.opts.OnChange, Keys: bindingOf}
}

// bindingOf maps a syncer object to its binding.
func bindingOf(obj metav1.Object) []string {
	if name := obj.GetLabels()[kubeoceanv1alpha1.LabelClusterBinding]; name != "" {
		return []string{name}
	}
	return nil
}

// HasSynced implements Runner.
func (d *Deployments) HasSynced() bool {
	for _, synced := range d.synced {
		if !synced() {
			return false
		}
	}
	return true
}

// Running implements Runner: syncer Deployments with an available replica.
func (d *Deployments) Running() int {
	deployments, err := d.deployments.Deployments(d.opts.Namespace).List(labels.Everything())
	if err != nil {
		return 0
	}
	n := 0
	for _, dep := range deployments {
		if dep.Status.AvailableReplicas > 0 {
			n++
		}
	}
	return n
}

// Ensure implements Runner.
func (d *Deployments) Ensure(ctx context.Context, binding *kubeoceanv1alpha1.ClusterBinding, kubeconfigHash string) (State, error) {
	if binding.DeletionTimestamp != nil && slices.Contains(binding.Finalizers, metav1.FinalizerDeleteDependents) {
		// The garbage collector deletes what the binding owns before the
		// binding; a recreated syncer would only be deleted again.
		return State{Phase: PhaseFailed, Reason: kubeoceanv1alpha1.ReasonSyncerDeploymentDeleting, Message: "The binding is being deleted in the foreground, " +
			"so the garbage collector deletes its syncer Deployment before the syncer can clean up; delete bindings in the background (the default)."}, nil
	}
	objects, err := d.render(binding, kubeconfigHash)
	if err != nil {
		return State{Phase: PhaseFailed, Reason: kubeoceanv1alpha1.ReasonSyncerTemplateError, Message: err.Error()}, nil
	}
	var deployment *appsv1.Deployment
	for _, desired := range objects {
		current, action, err := d.apply(ctx, binding, desired)
		var conflict *conflictError
		if errors.As(err, &conflict) {
			return State{Phase: PhaseFailed, Reason: kubeoceanv1alpha1.ReasonSyncerDeploymentFailed, Message: conflict.Error(), RetryAfter: conflictRetry}, nil
		}
		if err != nil {
			return State{}, err
		}
		d.recordAction(ctx, binding, desired, action)
		if dep, ok := current.(*appsv1.Deployment); ok {
			deployment = dep
		}
	}
	if err := d.pruneDeployments(ctx, binding, deployment.Name); err != nil {
		return State{}, err
	}
	return deploymentState(deployment), nil
}

// pruneDeployments deletes the binding's syncer Deployments other than
// keep, left behind when a template renamed the Deployment: two would run
// two syncers for one binding.
func (d *Deployments) pruneDeployments(ctx context.Context, binding *kubeoceanv1alpha1.ClusterBinding, keep string) error {
	deployments, err := d.bindingDeployments(binding.Name)
	if err != nil {
		return err
	}
	for _, dep := range deployments {
		if dep.Name == keep || dep.DeletionTimestamp != nil || !controlledBy(dep, binding) {
			continue
		}
		if err := d.delete(ctx, binding, dep); err != nil {
			return err
		}
	}
	return nil
}

func (d *Deployments) delete(ctx context.Context, binding *kubeoceanv1alpha1.ClusterBinding, dep *appsv1.Deployment) error {
	err := d.opts.DeploymentsClient.Deployments(dep.Namespace).Delete(ctx, dep.Name, metav1.DeleteOptions{
		Preconditions:     &metav1.Preconditions{UID: &dep.UID},
		PropagationPolicy: ptr.To(metav1.DeletePropagationForeground),
	})
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return nil // gone, or replaced: the informer tells which
	}
	if err != nil {
		return fmt.Errorf("deleting syncer Deployment %s/%s: %w", dep.Namespace, dep.Name, err)
	}
	klog.FromContext(ctx).Info("Deleted syncer Deployment", "deployment", klog.KObj(dep))
	d.opts.Recorder.Eventf(binding, corev1.EventTypeNormal, kubeoceanv1alpha1.EventSyncerDeleted, "Deleted syncer Deployment %s/%s.", dep.Namespace, dep.Name)
	return nil
}

// Observe implements Runner.
func (d *Deployments) Observe(binding *kubeoceanv1alpha1.ClusterBinding) (State, bool) {
	deployments, err := d.bindingDeployments(binding.Name)
	if err != nil || len(deployments) == 0 {
		return State{}, false
	}
	return deploymentState(deployments[0]), true
}

// Remove implements Runner: it deletes the binding's syncer Deployments in
// the foreground, so they are gone only once their pods are, and reports
// gone when none is left. The other rendered objects are owned by the
// binding and go with it.
func (d *Deployments) Remove(ctx context.Context, binding *kubeoceanv1alpha1.ClusterBinding) (bool, error) {
	deployments, err := d.bindingDeployments(binding.Name)
	if err != nil {
		return false, err
	}
	for _, dep := range deployments {
		if dep.DeletionTimestamp != nil {
			continue
		}
		if err := d.delete(ctx, binding, dep); err != nil {
			return false, err
		}
	}
	return len(deployments) == 0, nil
}

func (d *Deployments) bindingDeployments(name string) ([]*appsv1.Deployment, error) {
	selector := labels.SelectorFromSet(labels.Set{kubeoceanv1alpha1.LabelClusterBinding: name})
	return d.deployments.Deployments(d.opts.Namespace).List(selector)
}

// render renders the binding's objects and decorates them: the manager's
// labels, the binding as controlling owner, and the hash of the result.
func (d *Deployments) render(binding *kubeoceanv1alpha1.ClusterBinding, kubeconfigHash string) ([]syncertemplate.Object, error) {
	templates := d.opts.Templates.Current()
	objects, err := templates.Render(d.templateData(binding, kubeconfigHash))
	if err != nil {
		return nil, fmt.Errorf("templates in %s: %w", templates.Dir(), err)
	}
	for _, obj := range objects {
		if err := decorate(obj, binding); err != nil {
			return nil, err
		}
	}
	return objects, nil
}

// templateData is what the templates get for binding.
func (d *Deployments) templateData(binding *kubeoceanv1alpha1.ClusterBinding, kubeconfigHash string) syncertemplate.Data {
	return syncertemplate.Data{
		BindingName: binding.Name, ClusterID: binding.Spec.ClusterID, MountNamespace: binding.Spec.MountNamespace,
		Name: syncertemplate.ObjectName(binding.Name), Namespace: d.opts.Namespace,
		Image: d.opts.Image, ServiceAccountName: d.opts.ServiceAccountName,
		Args: append([]string{
			"--cluster-binding=" + binding.Name,
			"--leader-elect",
			"--leader-elect-resource-namespace=" + d.opts.Namespace,
		}, d.opts.Args...),
		KubeconfigHash: kubeconfigHash,
	}
}

// deploymentState reads a syncer's readiness from its Deployment.
func deploymentState(dep *appsv1.Deployment) State {
	if dep == nil {
		return State{Phase: PhaseStarting, Reason: kubeoceanv1alpha1.ReasonSyncerStarting, Message: "The syncer Deployment is being created."}
	}
	name := dep.Namespace + "/" + dep.Name
	if dep.DeletionTimestamp != nil {
		return State{Phase: PhaseStarting, Reason: kubeoceanv1alpha1.ReasonSyncerDeploymentDeleting, Message: fmt.Sprintf("The syncer Deployment %s is being deleted.", name)}
	}
	replicas := ptr.Deref(dep.Spec.Replicas, 1)
	// Conditions of an older generation say nothing about this one.
	if dep.Status.ObservedGeneration >= dep.Generation {
		for _, c := range dep.Status.Conditions {
			failedProgress := c.Type == appsv1.DeploymentProgressing && c.Status == corev1.ConditionFalse
			failedReplicas := c.Type == appsv1.DeploymentReplicaFailure && c.Status == corev1.ConditionTrue
			if failedProgress || failedReplicas {
				return State{Phase: PhaseFailed, Reason: kubeoceanv1alpha1.ReasonSyncerDeploymentFailed, Message: fmt.Sprintf("The syncer Deployment %s failed: %s: %s", name, c.Reason, c.Message)}
			}
		}
	}
	if dep.Status.ObservedGeneration < dep.Generation || dep.Status.UpdatedReplicas < replicas {
		return State{Phase: PhaseStarting, Reason: kubeoceanv1alpha1.ReasonSyncerRollingOut,
			Message: fmt.Sprintf("The syncer Deployment %s is rolling out (%d of %d replicas updated).", name, dep.Status.UpdatedReplicas, replicas)}
	}
	if dep.Status.AvailableReplicas < 1 {
		return State{Phase: PhaseStarting, Reason: kubeoceanv1alpha1.ReasonSyncerUnavailable,
			Message: fmt.Sprintf("Waiting for the syncer Deployment %s to become available (0 of %d replicas available).", name, replicas)}
	}
	return State{Phase: PhaseReady, Reason: kubeoceanv1alpha1.ReasonSyncerRunning,
		Message: fmt.Sprintf("The syncer Deployment %s has %d of %d replicas available.", name, dep.Status.AvailableReplicas, replicas)}
}
