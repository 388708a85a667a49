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

package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

// request is what the audit log says about one API request.
type request struct {
	User      string
	Verb      string
	Group     string
	Resource  string // with "/subresource" when there is one
	Namespace string
	Code      int
	URI       string
}

// auditEvent is the part of an audit.k8s.io/v1 Event the checks read.
type auditEvent struct {
	Stage      string `json:"stage"`
	RequestURI string `json:"requestURI"`
	Verb       string `json:"verb"`
	User       struct {
		Username string `json:"username"`
	} `json:"user"`
	ObjectRef *struct {
		Resource    string `json:"resource"`
		Subresource string `json:"subresource"`
		Namespace   string `json:"namespace"`
		APIGroup    string `json:"apiGroup"`
	} `json:"objectRef"`
	ResponseStatus *struct {
		Code int `json:"code"`
	} `json:"responseStatus"`
}

// readAudit returns the resource requests of an audit log that got an
// answer (a watch is logged once it has started).
func readAudit(path string) ([]request, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var requests []request
	scanner := bufio.NewScanner(f)
	scanner.Buffer(make([]byte, 1<<20), 16<<20)
	for scanner.Scan() {
		var e auditEvent
		if err := json.Unmarshal(scanner.Bytes(), &e); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		if e.ObjectRef == nil || e.ResponseStatus == nil || (e.Stage != "ResponseComplete" && e.Stage != "ResponseStarted") {
			continue
		}
		resource := e.ObjectRef.Resource
		if e.ObjectRef.Subresource != "" {
			resource += "/" + e.ObjectRef.Subresource
		}
		requests = append(requests, request{
			User: e.User.Username, Verb: e.Verb, Group: e.ObjectRef.APIGroup, Resource: resource,
			Namespace: e.ObjectRef.Namespace, Code: e.ResponseStatus.Code, URI: e.RequestURI,
		})
	}
	return requests, scanner.Err()
}

// grant is one verb on one resource that RBAC gives an account, in one
// namespace or (Namespace "*") everywhere.
type grant struct {
	Group, Resource, Verb, Namespace string
}

func (g grant) String() string {
	group := g.Group
	if group == "" {
		group = "core"
	}
	where := "cluster-wide"
	if g.Namespace != "*" {
		where = "in namespace " + g.Namespace
	}
	return fmt.Sprintf("%s %s/%s %s", g.Verb, group, g.Resource, where)
}

func (g grant) allows(r request) bool {
	return g.Group == r.Group && g.Resource == r.Resource && g.Verb == r.Verb && (g.Namespace == "*" || g.Namespace == r.Namespace)
}

// rbacObjects are the roles and bindings of a rendered set of manifests.
type rbacObjects struct {
	roles               map[string]rbacv1.Role // by namespace/name
	clusterRoles        map[string]rbacv1.ClusterRole
	roleBindings        []rbacv1.RoleBinding
	clusterRoleBindings []rbacv1.ClusterRoleBinding
}

// parseRBAC reads the RBAC objects out of multi-document YAML, such as the
// output of kubectl kustomize; other kinds are skipped.
func parseRBAC(manifests string) (*rbacObjects, error) {
	scheme := runtime.NewScheme()
	if err := rbacv1.AddToScheme(scheme); err != nil {
		return nil, err
	}
	decoder := serializer.NewCodecFactory(scheme).UniversalDeserializer()
	objs := &rbacObjects{roles: map[string]rbacv1.Role{}, clusterRoles: map[string]rbacv1.ClusterRole{}}
	reader := utilyaml.NewYAMLReader(bufio.NewReader(strings.NewReader(manifests)))
	for {
		doc, err := reader.Read()
		if err != nil {
			if err.Error() == "EOF" {
				return objs, nil
			}
			return nil, err
		}
		if !strings.Contains(string(doc), "rbac.authorization.k8s.io/") {
			continue
		}
		obj, _, err := decoder.Decode(doc, nil, nil)
		if err != nil {
			return nil, err
		}
		switch o := obj.(type) {
		case *rbacv1.Role:
			objs.roles[o.Namespace+"/"+o.Name] = *o
		case *rbacv1.ClusterRole:
			objs.clusterRoles[o.Name] = *o
		case *rbacv1.RoleBinding:
			objs.roleBindings = append(objs.roleBindings, *o)
		case *rbacv1.ClusterRoleBinding:
			objs.clusterRoleBindings = append(objs.clusterRoleBindings, *o)
		}
	}
}

// grantsOf expands what the objects give the ServiceAccount namespace/name
// into single grants. A wildcard is an error: the shipped roles name every
// verb and resource.
func (o *rbacObjects) grantsOf(namespace, name string) ([]grant, error) {
	subject := func(subjects []rbacv1.Subject) bool {
		return slices.ContainsFunc(subjects, func(s rbacv1.Subject) bool {
			return s.Kind == rbacv1.ServiceAccountKind && s.Namespace == namespace && s.Name == name
		})
	}
	var grants []grant
	add := func(rules []rbacv1.PolicyRule, where string) error {
		for _, rule := range rules {
			for _, list := range [][]string{rule.APIGroups, rule.Resources, rule.Verbs} {
				if slices.Contains(list, "*") {
					return fmt.Errorf("a shipped rule uses a wildcard: %+v", rule)
				}
			}
			for _, group := range rule.APIGroups {
				for _, resource := range rule.Resources {
					for _, verb := range rule.Verbs {
						grants = append(grants, grant{Group: group, Resource: resource, Verb: verb, Namespace: where})
					}
				}
			}
		}
		return nil
	}
	for _, b := range o.clusterRoleBindings {
		if subject(b.Subjects) {
			role, ok := o.clusterRoles[b.RoleRef.Name]
			if !ok {
				return nil, fmt.Errorf("ClusterRoleBinding %s names ClusterRole %s, which is not shipped", b.Name, b.RoleRef.Name)
			}
			if err := add(role.Rules, "*"); err != nil {
				return nil, err
			}
		}
	}
	for _, b := range o.roleBindings {
		if !subject(b.Subjects) {
			continue
		}
		var rules []rbacv1.PolicyRule
		switch b.RoleRef.Kind {
		case "ClusterRole":
			role, ok := o.clusterRoles[b.RoleRef.Name]
			if !ok {
				return nil, fmt.Errorf("RoleBinding %s/%s names ClusterRole %s, which is not shipped", b.Namespace, b.Name, b.RoleRef.Name)
			}
			rules = role.Rules
		default:
			role, ok := o.roles[b.Namespace+"/"+b.RoleRef.Name]
			if !ok {
				return nil, fmt.Errorf("RoleBinding %s/%s names Role %s, which is not shipped", b.Namespace, b.Name, b.RoleRef.Name)
			}
			rules = role.Rules
		}
		if err := add(rules, b.Namespace); err != nil {
			return nil, err
		}
	}
	return grants, nil
}

// unusedGrants are the grants no request used. Informers list through a
// watch (a streaming list) where the apiserver supports it and fall back
// to a plain list where it does not, so a watch also counts as a use of
// the list grant of the same scope. approve on signers is no request of
// its own: the CertificateApproval admission plugin checks it on every
// approval update, so a successful one uses it.
func unusedGrants(grants []grant, requests []request) []grant {
	var unused []grant
	for _, g := range grants {
		used := slices.ContainsFunc(requests, g.allows)
		if !used && g.Verb == "list" {
			watch := g
			watch.Verb = "watch"
			used = slices.ContainsFunc(requests, watch.allows)
		}
		if !used && g.Group == "certificates.k8s.io" && g.Resource == "signers" && g.Verb == "approve" {
			used = slices.ContainsFunc(requests, func(r request) bool {
				return r.Group == g.Group && r.Resource == "certificatesigningrequests/approval" && r.Verb == "update" && r.Code == 200
			})
		}
		if !used {
			unused = append(unused, g)
		}
	}
	return unused
}
