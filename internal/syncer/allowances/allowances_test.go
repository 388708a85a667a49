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

package allowances

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
	kubeoceanlisters "github.com/kubeocean/kubeocean/generated/listers/kubeocean/v1alpha1"
)

func policy(name, binding string, a *kubeoceanv1alpha1.WorkloadAllowances) *kubeoceanv1alpha1.ResourceLeasingPolicy {
	return &kubeoceanv1alpha1.ResourceLeasingPolicy{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: kubeoceanv1alpha1.ResourceLeasingPolicySpec{Cluster: binding, Allowances: a}}
}

func pinned(p *kubeoceanv1alpha1.ResourceLeasingPolicy, mountNamespace string) *kubeoceanv1alpha1.ResourceLeasingPolicy {
	p.Spec.MountNamespace = mountNamespace
	return p
}

func TestOf(t *testing.T) {
	wide := &kubeoceanv1alpha1.WorkloadAllowances{
		LabelKeys:      []string{"app", "example.com/*", "kubeocean.io/cluster-id", "x.kubeocean.io/*"},
		AnnotationKeys: []string{"prometheus.io/scrape"}, RuntimeClassNames: []string{"gvisor", "kata"},
		VolumeSources: []string{"nfs"}, CSIDrivers: []string{"csi.example.com", "ebs.csi.aws.com"},
	}
	narrow := &kubeoceanv1alpha1.WorkloadAllowances{
		LabelKeys: []string{"app", "example.com/*"}, RuntimeClassNames: []string{"gvisor"}, CSIDrivers: []string{"csi.example.com"},
	}
	for _, tc := range []struct {
		name     string
		policies []*kubeoceanv1alpha1.ResourceLeasingPolicy
		check    func(Set) bool
		want     bool
	}{
		{"no policy allows nothing", nil, func(s Set) bool { return s.LabelKey("app") }, false},
		{"a policy without allowances allows nothing", []*kubeoceanv1alpha1.ResourceLeasingPolicy{policy("p", "b", nil)},
			func(s Set) bool { return s.RuntimeClass("gvisor") }, false},
		{"exact label key", []*kubeoceanv1alpha1.ResourceLeasingPolicy{policy("p", "b", wide)}, func(s Set) bool { return s.LabelKey("app") }, true},
		{"label prefix", []*kubeoceanv1alpha1.ResourceLeasingPolicy{policy("p", "b", wide)}, func(s Set) bool { return s.LabelKey("example.com/team") }, true},
		{"prefix is not a key", []*kubeoceanv1alpha1.ResourceLeasingPolicy{policy("p", "b", wide)}, func(s Set) bool { return s.LabelKey("example.com") }, false},
		{"other label", []*kubeoceanv1alpha1.ResourceLeasingPolicy{policy("p", "b", wide)}, func(s Set) bool { return s.LabelKey("tier") }, false},
		{"kubeocean.io never", []*kubeoceanv1alpha1.ResourceLeasingPolicy{policy("p", "b", wide)}, func(s Set) bool { return s.LabelKey("kubeocean.io/cluster-id") }, false},
		{"kubeocean.io subdomain never", []*kubeoceanv1alpha1.ResourceLeasingPolicy{policy("p", "b", wide)}, func(s Set) bool { return s.LabelKey("x.kubeocean.io/a") }, false},
		{"annotation", []*kubeoceanv1alpha1.ResourceLeasingPolicy{policy("p", "b", wide)}, func(s Set) bool { return s.AnnotationKey("prometheus.io/scrape") }, true},
		{"label list is not the annotation list", []*kubeoceanv1alpha1.ResourceLeasingPolicy{policy("p", "b", wide)}, func(s Set) bool { return s.AnnotationKey("app") }, false},
		{"volume source", []*kubeoceanv1alpha1.ResourceLeasingPolicy{policy("p", "b", wide)}, func(s Set) bool { return s.VolumeSource("nfs") }, true},
		{"volume source not listed", []*kubeoceanv1alpha1.ResourceLeasingPolicy{policy("p", "b", wide)}, func(s Set) bool { return s.VolumeSource("hostPath") }, false},
		{"another binding's policy counts not", []*kubeoceanv1alpha1.ResourceLeasingPolicy{policy("p", "other", wide)}, func(s Set) bool { return s.CSIDriver("csi.example.com") }, false},
		// Another virtual cluster's binding b, mounted elsewhere: its
		// policy neither allows nor, by allowing less, forbids.
		{"a policy pinned to another mount namespace allows not", []*kubeoceanv1alpha1.ResourceLeasingPolicy{pinned(policy("p", "b", wide), "mount-x")},
			func(s Set) bool { return s.CSIDriver("csi.example.com") }, false},
		{"a policy pinned to another mount namespace forbids not", []*kubeoceanv1alpha1.ResourceLeasingPolicy{policy("p", "b", wide), pinned(policy("q", "b", nil), "mount-x")},
			func(s Set) bool { return s.CSIDriver("csi.example.com") }, true},
		{"a policy pinned to the binding's mount namespace allows", []*kubeoceanv1alpha1.ResourceLeasingPolicy{pinned(policy("p", "b", wide), "mount-b")},
			func(s Set) bool { return s.CSIDriver("csi.example.com") }, true},
		{"both policies allow", []*kubeoceanv1alpha1.ResourceLeasingPolicy{policy("p", "b", wide), policy("q", "b", narrow)},
			func(s Set) bool {
				return s.CSIDriver("csi.example.com") && s.RuntimeClass("gvisor") && s.LabelKey("example.com/x")
			}, true},
		{"one policy forbids", []*kubeoceanv1alpha1.ResourceLeasingPolicy{policy("p", "b", wide), policy("q", "b", narrow)},
			func(s Set) bool {
				return s.CSIDriver("ebs.csi.aws.com") || s.RuntimeClass("kata") || s.VolumeSource("nfs")
			}, false},
		{"one policy without allowances forbids all", []*kubeoceanv1alpha1.ResourceLeasingPolicy{policy("p", "b", wide), policy("q", "b", nil)},
			func(s Set) bool { return s.LabelKey("app") }, false},
	} {
		if got := tc.check(Of(tc.policies, "b", "mount-b")); got != tc.want {
			t.Errorf("%s: got %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestSourceReadsTheCache(t *testing.T) {
	indexer := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	source := NewSource(kubeoceanlisters.NewResourceLeasingPolicyLister(indexer), "b", "mount-b")
	if source.Current().CSIDriver("csi.example.com") {
		t.Fatal("allowed before any policy")
	}
	if err := indexer.Add(policy("p", "b", &kubeoceanv1alpha1.WorkloadAllowances{CSIDrivers: []string{"csi.example.com"}})); err != nil {
		t.Fatal(err)
	}
	if !source.Current().CSIDriver("csi.example.com") {
		t.Fatal("not allowed once the policy allows it")
	}
	var none *Source
	if none.Current().CSIDriver("csi.example.com") {
		t.Fatal("a nil source allows")
	}
}
