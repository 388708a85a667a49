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

package unbind

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// networkKinds: the binding's Service mirrors and their EndpointSlices, and
// its DNS server (Deployment, PodDisruptionBudget, Service, ServiceAccount,
// Role, RoleBinding), all in the mount namespace with its identity. The
// Deployment goes before the account and rights its pods use.
func (c *Controller) networkKinds(inMount func(metav1.Object) bool) []kindOps {
	kube, ns := c.opts.PhysicalKube, c.opts.MountNamespace
	precondition := uidPrecondition
	return []kindOps{
		{kind: "Deployment", belongs: inMount,
			list: func(ctx context.Context, s string) ([]metav1.Object, error) {
				l, err := kube.AppsV1().Deployments(ns).List(ctx, byLabel(s))
				if err != nil {
					return nil, err
				}
				return objects(l.Items), nil
			},
			delete: func(ctx context.Context, o metav1.Object) error {
				return kube.AppsV1().Deployments(ns).Delete(ctx, o.GetName(), precondition(o))
			}},
		{kind: "PodDisruptionBudget", belongs: inMount,
			list: func(ctx context.Context, s string) ([]metav1.Object, error) {
				l, err := kube.PolicyV1().PodDisruptionBudgets(ns).List(ctx, byLabel(s))
				if err != nil {
					return nil, err
				}
				return objects(l.Items), nil
			},
			delete: func(ctx context.Context, o metav1.Object) error {
				return kube.PolicyV1().PodDisruptionBudgets(ns).Delete(ctx, o.GetName(), precondition(o))
			}},
		{kind: "EndpointSlice", belongs: inMount,
			list: func(ctx context.Context, s string) ([]metav1.Object, error) {
				l, err := kube.DiscoveryV1().EndpointSlices(ns).List(ctx, byLabel(s))
				if err != nil {
					return nil, err
				}
				return objects(l.Items), nil
			},
			delete: func(ctx context.Context, o metav1.Object) error {
				return kube.DiscoveryV1().EndpointSlices(ns).Delete(ctx, o.GetName(), precondition(o))
			}},
		{kind: "Service", belongs: inMount,
			list: func(ctx context.Context, s string) ([]metav1.Object, error) {
				l, err := kube.CoreV1().Services(ns).List(ctx, byLabel(s))
				if err != nil {
					return nil, err
				}
				return objects(l.Items), nil
			},
			delete: func(ctx context.Context, o metav1.Object) error {
				return kube.CoreV1().Services(ns).Delete(ctx, o.GetName(), precondition(o))
			}},
		{kind: "RoleBinding", belongs: inMount,
			list: func(ctx context.Context, s string) ([]metav1.Object, error) {
				l, err := kube.RbacV1().RoleBindings(ns).List(ctx, byLabel(s))
				if err != nil {
					return nil, err
				}
				return objects(l.Items), nil
			},
			delete: func(ctx context.Context, o metav1.Object) error {
				return kube.RbacV1().RoleBindings(ns).Delete(ctx, o.GetName(), precondition(o))
			}},
		{kind: "Role", belongs: inMount,
			list: func(ctx context.Context, s string) ([]metav1.Object, error) {
				l, err := kube.RbacV1().Roles(ns).List(ctx, byLabel(s))
				if err != nil {
					return nil, err
				}
				return objects(l.Items), nil
			},
			delete: func(ctx context.Context, o metav1.Object) error {
				return kube.RbacV1().Roles(ns).Delete(ctx, o.GetName(), precondition(o))
			}},
		{kind: "ServiceAccount", belongs: inMount,
			list: func(ctx context.Context, s string) ([]metav1.Object, error) {
				l, err := kube.CoreV1().ServiceAccounts(ns).List(ctx, byLabel(s))
				if err != nil {
					return nil, err
				}
				return objects(l.Items), nil
			},
			delete: func(ctx context.Context, o metav1.Object) error {
				return kube.CoreV1().ServiceAccounts(ns).Delete(ctx, o.GetName(), precondition(o))
			}},
	}
}
