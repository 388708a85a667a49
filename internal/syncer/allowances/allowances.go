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

// Package allowances reads what a lender lets a binding's pods use in its
// physical cluster (ResourceLeasingPolicy.spec.allowances) and answers the
// top-down controllers' questions about it. Everything not allowed keeps
// its safe default: see kubeoceanv1alpha1.WorkloadAllowances.
package allowances

import (
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/labels"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
	kubeoceanlisters "github.com/kubeocean/kubeocean/generated/listers/kubeocean/v1alpha1"
	"github.com/kubeocean/kubeocean/internal/ownership"
)

// Set is what a binding's pods may use beyond the defaults. The zero Set
// allows nothing.
type Set struct {
	labelKeys, annotationKeys keys
	runtimeClasses            map[string]bool
	volumeSources             map[string]bool
	csiDrivers                map[string]bool
}

// LabelKey tells whether a virtual pod's label key reaches its physical
// pod as it is. Keys of Kubeocean's own domain never do.
func (s Set) LabelKey(key string) bool { return !kubeoceanKey(key) && s.labelKeys.has(key) }

// AnnotationKey is LabelKey for annotations.
func (s Set) AnnotationKey(key string) bool { return !kubeoceanKey(key) && s.annotationKeys.has(key) }

// RuntimeClass tells whether a virtual pod may name the runtime class.
func (s Set) RuntimeClass(name string) bool { return s.runtimeClasses[name] }

// VolumeSource tells whether a PersistentVolume with the in-tree source
// kind (hostPath, local, nfs, iscsi, fc: its field name in
// PersistentVolumeSource) may be copied.
func (s Set) VolumeSource(kind string) bool { return s.volumeSources[kind] }

// CSIDriver tells whether a PersistentVolume of the CSI driver may be
// copied with its volume handle.
func (s Set) CSIDriver(driver string) bool { return s.csiDrivers[driver] }

// Of is what every policy that lends to the binding (named binding, with
// mountNamespace: ownership.PolicyLendsTo) allows: a policy cannot widen
// what another of the same binding forbids, and a binding without
// policies is allowed nothing beyond the defaults. A policy pinned to
// another virtual cluster's binding of the same name neither widens nor
// narrows it.
func Of(policies []*kubeoceanv1alpha1.ResourceLeasingPolicy, binding, mountNamespace string) Set {
	var mine []*kubeoceanv1alpha1.WorkloadAllowances
	for _, p := range policies {
		if !ownership.PolicyLendsTo(p, binding, mountNamespace) {
			continue
		}
		if p.Spec.Allowances == nil {
			return Set{}
		}
		mine = append(mine, p.Spec.Allowances)
	}
	if len(mine) == 0 {
		return Set{}
	}
	lists := func(of func(*kubeoceanv1alpha1.WorkloadAllowances) []string) map[string]bool {
		return intersection(mine, of)
	}
	return Set{
		labelKeys:      newKeys(lists(func(a *kubeoceanv1alpha1.WorkloadAllowances) []string { return a.LabelKeys })),
		annotationKeys: newKeys(lists(func(a *kubeoceanv1alpha1.WorkloadAllowances) []string { return a.AnnotationKeys })),
		runtimeClasses: lists(func(a *kubeoceanv1alpha1.WorkloadAllowances) []string { return a.RuntimeClassNames }),
		volumeSources:  lists(func(a *kubeoceanv1alpha1.WorkloadAllowances) []string { return a.VolumeSources }),
		csiDrivers:     lists(func(a *kubeoceanv1alpha1.WorkloadAllowances) []string { return a.CSIDrivers }),
	}
}

// intersection is the entries that every allowance lists.
func intersection(all []*kubeoceanv1alpha1.WorkloadAllowances, of func(*kubeoceanv1alpha1.WorkloadAllowances) []string) map[string]bool {
	counts := map[string]int{}
	for _, a := range all {
		seen := map[string]bool{}
		for _, entry := range of(a) {
			if !seen[entry] {
				seen[entry] = true
				counts[entry]++
			}
		}
	}
	out := map[string]bool{}
	for entry, n := range counts {
		if n == len(all) {
			out[entry] = true
		}
	}
	return out
}

// Source reads a binding's allowances from the physical cluster's
// policies, as they are in the cache when asked.
type Source struct {
	policies                kubeoceanlisters.ResourceLeasingPolicyLister
	binding, mountNamespace string
}

// NewSource reads the allowances of the binding named binding, whose mount
// namespace is mountNamespace, from policies.
func NewSource(policies kubeoceanlisters.ResourceLeasingPolicyLister, binding, mountNamespace string) *Source {
	return &Source{policies: policies, binding: binding, mountNamespace: mountNamespace}
}

// Current is what the binding's policies allow now; a nil Source allows
// nothing beyond the defaults.
func (s *Source) Current() Set {
	if s == nil || s.policies == nil {
		return Set{}
	}
	policies, err := s.policies.List(labels.Everything())
	if err != nil {
		return Set{}
	}
	return Of(policies, s.binding, s.mountNamespace)
}

// keys matches label or annotation keys exactly or, for an entry
// "prefix/*", every key under that prefix.
type keys struct {
	exact    map[string]bool
	prefixes []string
}

func newKeys(entries map[string]bool) keys {
	k := keys{exact: map[string]bool{}}
	for entry := range entries {
		if prefix, ok := strings.CutSuffix(entry, "/*"); ok {
			k.prefixes = append(k.prefixes, prefix+"/")
			continue
		}
		k.exact[entry] = true
	}
	sort.Strings(k.prefixes)
	return k
}

func (k keys) has(key string) bool {
	if k.exact[key] {
		return true
	}
	for _, prefix := range k.prefixes {
		if strings.HasPrefix(key, prefix) {
			return true
		}
	}
	return false
}

// kubeoceanKey tells a key of Kubeocean's own domain (kubeocean.io and
// its subdomains), which only Kubeocean sets on physical objects.
func kubeoceanKey(key string) bool {
	prefix, _, ok := strings.Cut(key, "/")
	return ok && (prefix == kubeoceanv1alpha1.GroupName || strings.HasSuffix(prefix, "."+kubeoceanv1alpha1.GroupName))
}
