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
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
	"github.com/kubeocean/kubeocean/internal/manager/syncertemplate"
)

// action is what apply did.
type action string

const (
	actionNone    action = ""
	actionCreated action = "created"
	actionUpdated action = "updated"
)

// conflictError: the name of a syncer object is taken by an object the
// manager does not keep for this binding.
type conflictError struct{ msg string }

func (e *conflictError) Error() string { return e.msg }

// decorate marks obj as the manager's, owned by binding, and stamps the hash
// of everything it renders to.
func decorate(obj syncertemplate.Object, binding *kubeoceanv1alpha1.ClusterBinding) error {
	labels := obj.GetLabels()
	if labels == nil {
		labels = map[string]string{}
	}
	labels[kubeoceanv1alpha1.LabelAppManagedBy] = kubeoceanv1alpha1.AppManagedByManager
	labels[kubeoceanv1alpha1.LabelClusterBinding] = binding.Name
	obj.SetLabels(labels)
	// A cluster-scoped owner is valid for namespaced dependents. It is not
	// blocking: the binding's finalizers already order the unbinding, and
	// blocking would need update rights on clusterbindings/finalizers.
	obj.SetOwnerReferences([]metav1.OwnerReference{{
		APIVersion: kubeoceanv1alpha1.SchemeGroupVersion.String(),
		Kind:       "ClusterBinding",
		Name:       binding.Name,
		UID:        binding.UID,
		Controller: ptr.To(true),
	}})
	annotations := obj.GetAnnotations()
	delete(annotations, kubeoceanv1alpha1.AnnotationSyncerRenderHash)
	data, err := json.Marshal(obj)
	if err != nil {
		return fmt.Errorf("hashing rendered %s %s: %w", obj.GetObjectKind().GroupVersionKind().Kind, obj.GetName(), err)
	}
	sum := sha256.Sum256(data)
	if annotations == nil {
		annotations = map[string]string{}
	}
	annotations[kubeoceanv1alpha1.AnnotationSyncerRenderHash] = hex.EncodeToString(sum[:16])
	obj.SetAnnotations(annotations)
	return nil
}

// writer is the part of a typed client apply needs.
type writer[T any] interface {
	Create(ctx context.Context, obj T, opts metav1.CreateOptions) (T, error)
	Update(ctx context.Context, obj T, opts metav1.UpdateOptions) (T, error)
}

// apply creates or updates one decorated object.
func (d *Deployments) apply(ctx context.Context, binding *kubeoceanv1alpha1.ClusterBinding, obj syncertemplate.Object) (syncertemplate.Object, action, error) {
	ns := obj.GetNamespace()
	switch o := obj.(type) {
	case *appsv1.Deployment:
		return applyObject(ctx, binding, o, d.deployments.Deployments(ns).Get, d.opts.DeploymentsClient.Deployments(ns))
	case *corev1.ServiceAccount:
		return applyObject(ctx, binding, o, d.serviceAccounts.ServiceAccounts(ns).Get, d.opts.ServiceAccountsClient.ServiceAccounts(ns))
	case *corev1.ConfigMap:
		return applyObject(ctx, binding, o, d.configMaps.ConfigMaps(ns).Get, d.opts.ConfigMapsClient.ConfigMaps(ns))
	default:
		return nil, actionNone, fmt.Errorf("unsupported syncer object %T", obj)
	}
}

// applyObject creates desired when it is missing and replaces it when its
// hash changed; anything else is left alone, so a reconcile run twice makes
// no second write.
func applyObject[T syncertemplate.Object](ctx context.Context, binding *kubeoceanv1alpha1.ClusterBinding, desired T,
	get func(name string) (T, error), client writer[T]) (syncertemplate.Object, action, error) {
	kind := desired.GetObjectKind().GroupVersionKind().Kind
	existing, err := get(desired.GetName())
	if apierrors.IsNotFound(err) {
		created, err := client.Create(ctx, desired, metav1.CreateOptions{})
		if err != nil {
			return nil, actionNone, fmt.Errorf("creating syncer %s %s/%s: %w", kind, desired.GetNamespace(), desired.GetName(), err)
		}
		return created, actionCreated, nil
	}
	if err != nil {
		return nil, actionNone, err
	}
	if !controlledBy(existing, binding) {
		return nil, actionNone, &conflictError{msg: fmt.Sprintf(
			"%s %s/%s exists but is not the syncer of ClusterBinding %s (not labelled and owned by it); remove it or rename the template's objects",
			kind, existing.GetNamespace(), existing.GetName(), binding.Name)}
	}
	if existing.GetDeletionTimestamp() != nil ||
		existing.GetAnnotations()[kubeoceanv1alpha1.AnnotationSyncerRenderHash] == desired.GetAnnotations()[kubeoceanv1alpha1.AnnotationSyncerRenderHash] {
		// Unchanged, or going away: its deletion brings the binding back
		// here to create it anew.
		return existing, actionNone, nil
	}
	desired.SetResourceVersion(existing.GetResourceVersion())
	updated, err := client.Update(ctx, desired, metav1.UpdateOptions{})
	if err != nil {
		return nil, actionNone, fmt.Errorf("updating syncer %s %s/%s: %w", kind, desired.GetNamespace(), desired.GetName(), err)
	}
	return updated, actionUpdated, nil
}

func controlledBy(obj metav1.Object, binding *kubeoceanv1alpha1.ClusterBinding) bool {
	if obj.GetLabels()[kubeoceanv1alpha1.LabelAppManagedBy] != kubeoceanv1alpha1.AppManagedByManager || obj.GetLabels()[kubeoceanv1alpha1.LabelClusterBinding] != binding.Name {
		return false
	}
	owner := metav1.GetControllerOfNoCopy(obj)
	return owner != nil && owner.UID == binding.UID
}

func (d *Deployments) recordAction(ctx context.Context, binding *kubeoceanv1alpha1.ClusterBinding, obj syncertemplate.Object, done action) {
	if done == actionNone {
		return
	}
	kind := obj.GetObjectKind().GroupVersionKind().Kind
	klog.FromContext(ctx).Info("Applied syncer object", "kind", kind, "object", klog.KObj(obj), "action", done)
	reason := kubeoceanv1alpha1.EventSyncerCreated
	if done == actionUpdated {
		reason = kubeoceanv1alpha1.EventSyncerUpdated
	}
	d.opts.Recorder.Eventf(binding, corev1.EventTypeNormal, reason, "Syncer %s %s/%s %s from the templates.", kind, obj.GetNamespace(), obj.GetName(), done)
}
