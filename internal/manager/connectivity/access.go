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

package connectivity

import (
	"context"
	"fmt"
	"strings"
	"sync"

	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	authorizationv1client "k8s.io/client-go/kubernetes/typed/authorization/v1"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
)

// Scope says where an Access is needed.
type Scope int

const (
	// ClusterScoped resources (nodes, PVs, policies).
	ClusterScoped Scope = iota
	// AllNamespaces: a namespaced resource in every namespace.
	AllNamespaces
	// MountNamespace: a namespaced resource in the binding's mount namespace.
	MountNamespace
	// TheMountNamespace: the mount namespace itself (resource namespaces,
	// by name).
	TheMountNamespace
)

// Access is a set of verbs on one resource.
type Access struct {
	Group       string
	Resource    string
	Subresource string
	Scope       Scope
	// Namespace is the mount namespace, filled in by MissingAccess; Name
	// too, for TheMountNamespace.
	Namespace string
	Name      string
	Verbs     []string
}

var (
	// cachedVerbs: read only through informers.
	cachedVerbs  = []string{"list", "watch"}
	managedVerbs = []string{"get", "list", "watch", "create", "update", "delete"}
	// keptVerbs: objects read live and written, found by the unbinding
	// sweep by their labels.
	keptVerbs = []string{"get", "list", "create", "update", "delete"}
)

// SyncerAccess is what the syncer does in the physical cluster. The
// bottom-up half reads nodes, CSINodes and every pod (their usage shrinks
// what a node lends) and keeps the policies' finalizer and status; the
// top-down half creates, patches and deletes pods in the mount namespace and
// manages the copies of their ConfigMaps, Secrets and PVCs there, and of
// the PVs they bind. Keep it in step with the syncer's controllers and with
// the physical-cluster RBAC in manifests/rbac.
var SyncerAccess = []Access{
	{Resource: "nodes", Verbs: cachedVerbs},
	{Resource: "pods", Scope: AllNamespaces, Verbs: cachedVerbs},
	{Group: "storage.k8s.io", Resource: "csinodes", Verbs: cachedVerbs},
	{Group: kubeoceanv1alpha1.GroupName, Resource: "resourceleasingpolicies", Verbs: []string{"list", "watch", "patch"}},
	{Group: kubeoceanv1alpha1.GroupName, Resource: "resourceleasingpolicies", Subresource: "status", Verbs: []string{"update"}},
	{Resource: "persistentvolumes", Verbs: managedVerbs},
	{Resource: "pods", Scope: MountNamespace, Verbs: []string{"get", "create", "patch", "delete"}},
	{Resource: "configmaps", Scope: MountNamespace, Verbs: managedVerbs},
	{Resource: "secrets", Scope: MountNamespace, Verbs: managedVerbs},
	{Resource: "persistentvolumeclaims", Scope: MountNamespace, Verbs: managedVerbs},
	// Events about policies (in the default namespace) and physical pods.
	{Resource: "events", Scope: AllNamespaces, Verbs: []string{"create", "patch"}},
	// The Pod Security level the mount namespace's labels enforce, and its
	// quotas, whose changes retry the pods they refused.
	{Resource: "namespaces", Scope: TheMountNamespace, Verbs: cachedVerbs},
	{Resource: "resourcequotas", Scope: MountNamespace, Verbs: cachedVerbs},
	// Events of the binding's pods and lent nodes, recorded on their
	// virtual twins (docs/events.md); nodes' events live in default.
	{Resource: "events", Scope: MountNamespace, Verbs: cachedVerbs},
	{Resource: "events", Namespace: "default", Verbs: cachedVerbs},
	// The physical StorageClasses, each offered in the virtual cluster as
	// a class whose claims the syncer provisions here.
	{Group: "storage.k8s.io", Resource: "storageclasses", Verbs: cachedVerbs},
	// Service mirrors and the binding's DNS server (docs/networking.md).
	{Resource: "services", Scope: MountNamespace, Verbs: managedVerbs},
	{Group: "discovery.k8s.io", Resource: "endpointslices", Scope: MountNamespace, Verbs: managedVerbs},
	{Group: "apps", Resource: "deployments", Scope: MountNamespace, Verbs: managedVerbs},
	{Group: "policy", Resource: "poddisruptionbudgets", Scope: MountNamespace, Verbs: keptVerbs},
	{Resource: "serviceaccounts", Scope: MountNamespace, Verbs: keptVerbs},
	{Group: "rbac.authorization.k8s.io", Resource: "roles", Scope: MountNamespace, Verbs: keptVerbs},
	{Group: "rbac.authorization.k8s.io", Resource: "rolebindings", Scope: MountNamespace, Verbs: keptVerbs},
	// The identity of the physical cluster: the UID of its kube-system
	// namespace, which the binding pins (status.physicalClusterUID).
	{Resource: "namespaces", Name: "kube-system", Verbs: []string{"get"}},
}

// reviewConcurrency bounds the access reviews in flight per check.
const reviewConcurrency = 8

// MissingAccess asks the physical cluster, one SelfSubjectAccessReview per
// verb, which of SyncerAccess the client's credentials lack. It returns the
// missing verbs grouped like SyncerAccess, in its order.
func MissingAccess(ctx context.Context, client authorizationv1client.SelfSubjectAccessReviewsGetter, mountNamespace string) ([]Access, error) {
	type review struct {
		access  Access
		verb    string
		allowed bool
		err     error
	}
	var reviews []*review
	for _, a := range SyncerAccess {
		switch a.Scope {
		case MountNamespace:
			a.Namespace = mountNamespace
		case TheMountNamespace:
			a.Name = mountNamespace
		}
		for _, verb := range a.Verbs {
			reviews = append(reviews, &review{access: a, verb: verb})
		}
	}
	slots := make(chan struct{}, reviewConcurrency)
	var wg sync.WaitGroup
	for _, r := range reviews {
		slots <- struct{}{}
		wg.Go(func() {
			defer func() { <-slots }()
			r.allowed, r.err = allowed(ctx, client, r.access, r.verb)
		})
	}
	wg.Wait()

	var missing []Access
	for _, r := range reviews {
		if r.err != nil {
			return nil, r.err
		}
		if r.allowed {
			continue
		}
		if n := len(missing); n == 0 || !sameResource(missing[n-1], r.access) {
			a := r.access
			a.Verbs = nil
			missing = append(missing, a)
		}
		last := &missing[len(missing)-1]
		last.Verbs = append(last.Verbs, r.verb)
	}
	return missing, nil
}

func sameResource(a, b Access) bool {
	return a.Group == b.Group && a.Resource == b.Resource && a.Subresource == b.Subresource && a.Scope == b.Scope
}

func allowed(ctx context.Context, client authorizationv1client.SelfSubjectAccessReviewsGetter, a Access, verb string) (bool, error) {
	review := &authorizationv1.SelfSubjectAccessReview{
		Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &authorizationv1.ResourceAttributes{
			Group: a.Group, Resource: a.Resource, Subresource: a.Subresource, Namespace: a.Namespace, Name: a.Name, Verb: verb,
		}},
	}
	result, err := client.SelfSubjectAccessReviews().Create(ctx, review, metav1.CreateOptions{})
	if err != nil {
		return false, fmt.Errorf("reviewing %s %s: %w", verb, a.describe(), err)
	}
	return result.Status.Allowed, nil
}

// DescribeMissing renders missing access for a condition message, e.g.
// "list, watch nodes; create, delete pods in namespace mount-a".
func DescribeMissing(missing []Access) string {
	parts := make([]string, 0, len(missing))
	for _, a := range missing {
		parts = append(parts, strings.Join(a.Verbs, ", ")+" "+a.describe())
	}
	return strings.Join(parts, "; ")
}

// describe names the resource the way kubectl does (resource.group, then
// /subresource), with where it is needed.
func (a Access) describe() string {
	name := a.Resource
	if a.Group != "" {
		name += "." + a.Group
	}
	if a.Subresource != "" {
		name += "/" + a.Subresource
	}
	switch a.Scope {
	case AllNamespaces:
		name += " in all namespaces"
	case MountNamespace:
		name += " in namespace " + a.Namespace
	case TheMountNamespace:
		name += " named " + a.Name
	default:
		if a.Name != "" {
			name += " named " + a.Name
		}
		if a.Namespace != "" {
			name += " in namespace " + a.Namespace
		}
	}
	return name
}
