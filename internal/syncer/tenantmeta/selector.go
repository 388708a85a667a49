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

package tenantmeta

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
	"github.com/kubeocean/kubeocean/internal/ownership"
)

// SelectorMap is a virtual equality selector (a Service's spec.selector)
// in physical keys. It reads the translated keys only, which every physical
// pod carries whatever the lender allows, so it selects the same pods
// before and after an allowance changes.
func SelectorMap(virtual map[string]string) map[string]string {
	if virtual == nil {
		return nil
	}
	out := make(map[string]string, len(virtual))
	for k, v := range virtual {
		out[LabelKey(k)] = v
	}
	return out
}

// PodSelector selects the physical pods of one binding whose virtual pods
// are in namespace and match the virtual selector: what a Service mirror
// of that namespace selects. Its own keys come from Kubeocean's labels,
// which a tenant's labels, translated, can never set. A nil or empty
// virtual selector selects the binding's pods of the namespace.
func PodSelector(owner ownership.Owner, namespace string, virtual map[string]string) map[string]string {
	out := SelectorMap(virtual)
	if out == nil {
		out = make(map[string]string, 3)
	}
	out[kubeoceanv1alpha1.LabelManagedBy] = kubeoceanv1alpha1.ManagedByKubeocean
	out[kubeoceanv1alpha1.LabelBindingUID] = string(owner.BindingUID)
	out[kubeoceanv1alpha1.LabelVirtualNamespace] = namespace
	return out
}

// LabelSelector is a virtual LabelSelector in physical keys: matchLabels
// and the keys of matchExpressions translated, operators and values as
// they are. nil stays nil (it selects nothing, as it did).
func LabelSelector(virtual *metav1.LabelSelector) *metav1.LabelSelector {
	if virtual == nil {
		return nil
	}
	out := &metav1.LabelSelector{MatchLabels: SelectorMap(virtual.MatchLabels)}
	for _, r := range virtual.MatchExpressions {
		r := *r.DeepCopy()
		r.Key = LabelKey(r.Key)
		out.MatchExpressions = append(out.MatchExpressions, r)
	}
	return out
}

// Selector is a parsed virtual selector in physical keys.
func Selector(virtual labels.Selector) (labels.Selector, error) {
	requirements, selectable := virtual.Requirements()
	if !selectable {
		return labels.Nothing(), nil
	}
	out := labels.NewSelector()
	for _, r := range requirements {
		var values []string
		if r.Operator() != selection.Exists && r.Operator() != selection.DoesNotExist {
			values = r.Values().UnsortedList()
		}
		physical, err := labels.NewRequirement(LabelKey(r.Key()), r.Operator(), values)
		if err != nil {
			return nil, fmt.Errorf("translating requirement %q: %w", r.String(), err)
		}
		out = out.Add(*physical)
	}
	return out, nil
}
