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
	"maps"
	"slices"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
)

// errNameTaken: an object of the DNS server's name is not the binding's.
var errNameTaken = errors.New("taken by an object that is not the binding's")

// kept is how one kind of the DNS server's objects is read and written.
type kept[T metav1.Object] struct {
	kind string
	get  func(ctx context.Context, name string) (T, error)
	// live, for a kind get reads from the cache, reads the apiserver.
	live   func(ctx context.Context, name string) (T, error)
	create func(ctx context.Context, obj T) (T, error)
	update func(ctx context.Context, obj T) (T, error)
	// apply writes desired's fields that the syncer owns onto a copy of
	// current and tells whether anything changed.
	apply func(current, desired T) (T, bool)
}

// ensure creates desired, or brings the binding's object of its name in
// line with it; an object of that name that is not the binding's is left
// alone (errNameTaken).
func ensure[T metav1.Object](ctx context.Context, c *DNSController, k kept[T], desired T) (T, error) {
	logger := klog.FromContext(ctx)
	current, err := k.get(ctx, desired.GetName())
	if apierrors.IsNotFound(err) {
		created, err := k.create(ctx, desired)
		if apierrors.IsAlreadyExists(err) && k.live != nil {
			// The cache may lag behind the binding's own create.
			if live, err := k.live(ctx, desired.GetName()); err == nil && c.owner.Owns(live) {
				return live, nil
			}
		}
		if apierrors.IsAlreadyExists(err) {
			return created, fmt.Errorf("%s %s/%s: %w", k.kind, desired.GetNamespace(), desired.GetName(), errNameTaken)
		}
		if err == nil {
			logger.V(2).Info("Created DNS object", "kind", k.kind, "object", klog.KObj(desired))
		}
		return created, err
	}
	if err != nil {
		return current, err
	}
	if !c.owner.Owns(current) {
		return current, fmt.Errorf("%s %s/%s: %w", k.kind, desired.GetNamespace(), desired.GetName(), errNameTaken)
	}
	updated, changed := k.apply(current, desired)
	if !changed {
		return current, nil
	}
	logger.V(2).Info("Updating DNS object", "kind", k.kind, "object", klog.KObj(desired))
	return k.update(ctx, updated)
}

func withLabels[T metav1.Object](obj, desired T) bool {
	labels := maps.Clone(obj.GetLabels())
	if labels == nil {
		labels = map[string]string{}
	}
	maps.Copy(labels, desired.GetLabels())
	changed := !maps.Equal(labels, obj.GetLabels())
	obj.SetLabels(labels)
	return changed
}

func (c *DNSController) serviceAccounts() kept[*corev1.ServiceAccount] {
	client := c.client.CoreV1().ServiceAccounts(c.mountNamespace)
	return kept[*corev1.ServiceAccount]{kind: "ServiceAccount",
		get: func(ctx context.Context, name string) (*corev1.ServiceAccount, error) {
			return client.Get(ctx, name, metav1.GetOptions{})
		},
		create: func(ctx context.Context, o *corev1.ServiceAccount) (*corev1.ServiceAccount, error) {
			return client.Create(ctx, o, metav1.CreateOptions{})
		},
		update: func(ctx context.Context, o *corev1.ServiceAccount) (*corev1.ServiceAccount, error) {
			return client.Update(ctx, o, metav1.UpdateOptions{})
		},
		apply: func(current, desired *corev1.ServiceAccount) (*corev1.ServiceAccount, bool) {
			updated := current.DeepCopy()
			return updated, withLabels(updated, desired)
		}}
}

func (c *DNSController) roles() kept[*rbacv1.Role] {
	client := c.client.RbacV1().Roles(c.mountNamespace)
	return kept[*rbacv1.Role]{kind: "Role",
		get: func(ctx context.Context, name string) (*rbacv1.Role, error) {
			return client.Get(ctx, name, metav1.GetOptions{})
		},
		create: func(ctx context.Context, o *rbacv1.Role) (*rbacv1.Role, error) {
			return client.Create(ctx, o, metav1.CreateOptions{})
		},
		update: func(ctx context.Context, o *rbacv1.Role) (*rbacv1.Role, error) {
			return client.Update(ctx, o, metav1.UpdateOptions{})
		},
		apply: func(current, desired *rbacv1.Role) (*rbacv1.Role, bool) {
			updated := current.DeepCopy()
			changed := withLabels(updated, desired) || !equality.Semantic.DeepEqual(current.Rules, desired.Rules)
			updated.Rules = desired.Rules
			return updated, changed
		}}
}

func (c *DNSController) roleBindings() kept[*rbacv1.RoleBinding] {
	client := c.client.RbacV1().RoleBindings(c.mountNamespace)
	return kept[*rbacv1.RoleBinding]{kind: "RoleBinding",
		get: func(ctx context.Context, name string) (*rbacv1.RoleBinding, error) {
			return client.Get(ctx, name, metav1.GetOptions{})
		},
		create: func(ctx context.Context, o *rbacv1.RoleBinding) (*rbacv1.RoleBinding, error) {
			return client.Create(ctx, o, metav1.CreateOptions{})
		},
		update: func(ctx context.Context, o *rbacv1.RoleBinding) (*rbacv1.RoleBinding, error) {
			return client.Update(ctx, o, metav1.UpdateOptions{})
		},
		// The role reference cannot change; the syncer never changes it.
		apply: func(current, desired *rbacv1.RoleBinding) (*rbacv1.RoleBinding, bool) {
			updated := current.DeepCopy()
			changed := withLabels(updated, desired) || !equality.Semantic.DeepEqual(current.Subjects, desired.Subjects)
			updated.Subjects = desired.Subjects
			return updated, changed
		}}
}

func (c *DNSController) disruptionBudgets() kept[*policyv1.PodDisruptionBudget] {
	client := c.client.PolicyV1().PodDisruptionBudgets(c.mountNamespace)
	return kept[*policyv1.PodDisruptionBudget]{kind: "PodDisruptionBudget",
		get: func(ctx context.Context, name string) (*policyv1.PodDisruptionBudget, error) {
			return client.Get(ctx, name, metav1.GetOptions{})
		},
		create: func(ctx context.Context, o *policyv1.PodDisruptionBudget) (*policyv1.PodDisruptionBudget, error) {
			return client.Create(ctx, o, metav1.CreateOptions{})
		},
		update: func(ctx context.Context, o *policyv1.PodDisruptionBudget) (*policyv1.PodDisruptionBudget, error) {
			return client.Update(ctx, o, metav1.UpdateOptions{})
		},
		apply: func(current, desired *policyv1.PodDisruptionBudget) (*policyv1.PodDisruptionBudget, bool) {
			updated := current.DeepCopy()
			changed := withLabels(updated, desired) ||
				!equality.Semantic.DeepEqual(current.Spec.MinAvailable, desired.Spec.MinAvailable) ||
				!equality.Semantic.DeepEqual(current.Spec.Selector, desired.Spec.Selector)
			updated.Spec.MinAvailable, updated.Spec.Selector = desired.Spec.MinAvailable, desired.Spec.Selector
			return updated, changed
		}}
}

func (c *DNSController) services() kept[*corev1.Service] {
	client := c.client.CoreV1().Services(c.mountNamespace)
	return kept[*corev1.Service]{kind: "Service",
		get: func(_ context.Context, name string) (*corev1.Service, error) {
			return c.physicalServices.Services(c.mountNamespace).Get(name)
		},
		live: func(ctx context.Context, name string) (*corev1.Service, error) {
			return client.Get(ctx, name, metav1.GetOptions{})
		},
		create: func(ctx context.Context, o *corev1.Service) (*corev1.Service, error) {
			return client.Create(ctx, o, metav1.CreateOptions{})
		},
		update: func(ctx context.Context, o *corev1.Service) (*corev1.Service, error) {
			return client.Update(ctx, o, metav1.UpdateOptions{})
		},
		apply: func(current, desired *corev1.Service) (*corev1.Service, bool) {
			updated := current.DeepCopy()
			changed := withLabels(updated, desired) ||
				!equality.Semantic.DeepEqual(current.Spec.Selector, desired.Spec.Selector) ||
				!equality.Semantic.DeepEqual(current.Spec.Ports, desired.Spec.Ports)
			updated.Spec.Selector, updated.Spec.Ports = desired.Spec.Selector, desired.Spec.Ports
			return updated, changed
		}}
}

func (c *DNSController) deployments() kept[*appsv1.Deployment] {
	client := c.client.AppsV1().Deployments(c.mountNamespace)
	return kept[*appsv1.Deployment]{kind: "Deployment",
		get: func(_ context.Context, name string) (*appsv1.Deployment, error) {
			return c.deploymentLister.Deployments(c.mountNamespace).Get(name)
		},
		live: func(ctx context.Context, name string) (*appsv1.Deployment, error) {
			return client.Get(ctx, name, metav1.GetOptions{})
		},
		create: func(ctx context.Context, o *appsv1.Deployment) (*appsv1.Deployment, error) {
			return client.Create(ctx, o, metav1.CreateOptions{})
		},
		update: func(ctx context.Context, o *appsv1.Deployment) (*appsv1.Deployment, error) {
			return client.Update(ctx, o, metav1.UpdateOptions{})
		},
		apply: applyDeployment}
}

// applyDeployment compares what the syncer decides of the DNS server (its
// replicas, image, command and arguments, account, probes' paths): the
// apiserver defaults the rest of the template, which a whole comparison
// would take for a change every time.
func applyDeployment(current, desired *appsv1.Deployment) (*appsv1.Deployment, bool) {
	updated := current.DeepCopy()
	changed := withLabels(updated, desired)
	spec, want := &updated.Spec, &desired.Spec
	if spec.Replicas == nil || *spec.Replicas != *want.Replicas {
		spec.Replicas, changed = want.Replicas, true
	}
	if spec.Template.Spec.ServiceAccountName != want.Template.Spec.ServiceAccountName {
		spec.Template.Spec.ServiceAccountName, changed = want.Template.Spec.ServiceAccountName, true
	}
	wantC := want.Template.Spec.Containers[0]
	if len(spec.Template.Spec.Containers) != 1 {
		spec.Template.Spec.Containers = []corev1.Container{wantC}
		return updated, true
	}
	c := &spec.Template.Spec.Containers[0]
	if c.Name != wantC.Name || c.Image != wantC.Image || !slices.Equal(c.Command, wantC.Command) || !slices.Equal(c.Args, wantC.Args) {
		*c, changed = wantC, true
	}
	return updated, changed
}
