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
	"maps"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
	"github.com/kubeocean/kubeocean/internal/ownership"
)

var (
	longPrefix = strings.Repeat("a", 60) + ".example.com"
	longestKey = strings.Repeat("p", 253) + "/" + strings.Repeat("n", 63)
)

// keys are label keys that must all translate to valid keys, distinct from
// each other: collisions a readable encoding invites ("a_b" against
// "a/b"), and the hashed form of a long key forged as a short one.
func testKeys() []string {
	keys := []string{
		"app", "a", "A_b", "a_b", "a/b", "a__b", "a/b_c", "x.y/z", "x.y_z", "my_label", "my__label",
		"app.kubernetes.io/name", "statefulset.kubernetes.io/pod-name", "k8s.v1.cni.cncf.io/networks",
		"kubeocean.io/managed-by", "kubeocean.io/binding-uid", "x.kubeocean.io/y",
		"label.kubeocean.io/app", "label.kubeocean.io_app", strings.Repeat("n", 63), longPrefix + "/team", longestKey,
	}
	// A tenant who computes the hashed form of a long key and writes it
	// as a key of its own.
	hashed := LabelKey(longestKey)
	keys = append(keys, hashed, strings.TrimPrefix(hashed, kubeoceanv1alpha1.HashedLabelDomain+"/"))
	return keys
}

func TestLabelKey(t *testing.T) {
	for key, want := range map[string]string{
		"app":                               "label.kubeocean.io/app",
		"my_label":                          "label.kubeocean.io/my__label",
		"app.kubernetes.io/name":            "label.kubeocean.io/app.kubernetes.io_name",
		"kubeocean.io/managed-by":           "label.kubeocean.io/kubeocean.io_managed-by",
		strings.Repeat("n", 63):             "label.kubeocean.io/" + strings.Repeat("n", 63),
		strings.Repeat("n", 32) + "_" + "x": kubeoceanv1alpha1.HashedLabelDomain + "/", // 35 → 36 with the doubled "_": fits
	} {
		got := LabelKey(key)
		if strings.HasSuffix(want, "/") {
			if !strings.HasPrefix(got, kubeoceanv1alpha1.LabelDomain+"/") {
				t.Errorf("LabelKey(%q) = %q, want it readable", key, got)
			}
			continue
		}
		if got != want {
			t.Errorf("LabelKey(%q) = %q, want %q", key, got, want)
		}
	}
	for _, key := range []string{longPrefix + "/team", longestKey, strings.Repeat("n", 40) + "_" + strings.Repeat("m", 22)} {
		if got := LabelKey(key); !strings.HasPrefix(got, kubeoceanv1alpha1.HashedLabelDomain+"/") || len(got) != len(kubeoceanv1alpha1.HashedLabelDomain)+1+hashLength {
			t.Errorf("LabelKey(%q) = %q, want it hashed", key, got)
		}
	}
}

func TestLabelKeysAreValidDistinctAndRoundTrip(t *testing.T) {
	// The encoding rests on a prefix having no "_", which the API
	// enforces.
	if errs := validation.IsQualifiedName("a_b/c"); len(errs) == 0 {
		t.Fatal(`"a_b/c" is a valid key`)
	}
	seen := map[string]string{}
	for _, key := range testKeys() {
		if errs := validation.IsQualifiedName(key); len(errs) > 0 {
			t.Fatalf("test key %q is not valid: %v", key, errs)
		}
		physical := LabelKey(key)
		if errs := validation.IsQualifiedName(physical); len(errs) > 0 {
			t.Errorf("LabelKey(%q) = %q is not a valid key: %v", key, physical, errs)
		}
		if other, ok := seen[physical]; ok {
			t.Errorf("LabelKey(%q) = LabelKey(%q) = %q", key, other, physical)
		}
		seen[physical] = key
		if !strings.HasPrefix(physical, kubeoceanv1alpha1.LabelDomain+"/") && !strings.HasPrefix(physical, kubeoceanv1alpha1.HashedLabelDomain+"/") {
			t.Errorf("LabelKey(%q) = %q, not under Kubeocean's domain", key, physical)
		}
		back, readable := VirtualLabelKey(physical)
		switch {
		case readable && back != key:
			t.Errorf("VirtualLabelKey(LabelKey(%q)) = %q", key, back)
		case !readable && strings.HasPrefix(physical, kubeoceanv1alpha1.LabelDomain+"/"):
			t.Errorf("VirtualLabelKey(%q) cannot read a readable key", physical)
		}
	}
	if _, ok := VirtualLabelKey("app"); ok {
		t.Error("VirtualLabelKey reads a key that is not translated")
	}
}

func TestTranslator(t *testing.T) {
	virtualLabels := map[string]string{"app": "monitoring", "tier": "db", longestKey: "x", "kubeocean.io/binding-uid": "forged"}
	virtualAnnotations := map[string]string{
		"k8s.v1.cni.cncf.io/networks": "macvlan", "cni.projectcalico.org/ipAddrs": `["10.0.0.1"]`,
		"prometheus.io/scrape": "true", "kubeocean.io/virtual-pod-uid": "forged",
	}
	allowed := func(keys ...string) func(string) bool {
		return func(k string) bool { return strings.Contains(strings.Join(keys, ","), k) }
	}
	tr := Translator{
		LabelAllowed:      allowed("tier", "kubeocean.io/binding-uid"),
		AnnotationAllowed: allowed("prometheus.io/scrape", "kubeocean.io/virtual-pod-uid"),
	}
	physicalLabels := tr.Labels(virtualLabels)
	want := map[string]string{
		"label.kubeocean.io/app": "monitoring", "label.kubeocean.io/tier": "db", "tier": "db",
		LabelKey(longestKey): "x", "label.kubeocean.io/kubeocean.io_binding-uid": "forged",
	}
	if !maps.Equal(physicalLabels, want) {
		t.Errorf("labels = %v, want %v", physicalLabels, want)
	}
	physicalAnnotations := tr.Annotations(virtualLabels, virtualAnnotations)
	for _, key := range []string{"k8s.v1.cni.cncf.io/networks", "cni.projectcalico.org/ipAddrs", "kubeocean.io/virtual-pod-uid"} {
		if _, ok := physicalAnnotations[key]; ok {
			t.Errorf("annotation %s reaches the physical pod under its own key", key)
		}
	}
	if physicalAnnotations["prometheus.io/scrape"] != "true" {
		t.Errorf("allowed annotation missing: %v", physicalAnnotations)
	}
	labels, annotations, err := Originals(physicalAnnotations)
	if err != nil || !maps.Equal(labels, virtualLabels) || !maps.Equal(annotations, virtualAnnotations) {
		t.Errorf("originals = %v, %v, %v; want what the virtual pod has", labels, annotations, err)
	}
	if got := (Translator{}).Annotations(nil, nil); len(got) != 0 {
		t.Errorf("annotations of a pod without metadata = %v, want none", got)
	}
	if got := (Translator{}).Labels(map[string]string{"tier": "db"}); len(got) != 1 || got["tier"] != "" {
		t.Errorf("the zero Translator lets a key through: %v", got)
	}
}

func TestSelectorsSelectWhatTheVirtualOnesDo(t *testing.T) {
	pods := []map[string]string{
		{"app": "redis", "role": "primary"},
		{"app": "redis", "role": "replica", longestKey: "y"},
		{"app": "web"},
		{"app_x": "redis"},
		{"app/x": "redis"},
		{},
	}
	for _, s := range []string{
		"app=redis", "app=redis,role=primary", "app in (redis,web),role!=replica", "!role", "role", "app_x=redis",
		"app/x=redis", longestKey + "=y", "app notin (web)",
	} {
		virtual, err := labels.Parse(s)
		if err != nil {
			t.Fatal(err)
		}
		physical, err := Selector(virtual)
		if err != nil {
			t.Fatal(err)
		}
		asMap, mapErr := labels.ConvertSelectorToLabelsMap(s)
		for _, pod := range pods {
			podLabels := Translator{}.Labels(pod)
			if got, want := physical.Matches(labels.Set(podLabels)), virtual.Matches(labels.Set(pod)); got != want {
				t.Errorf("%q against %v: physical %v, virtual %v", s, pod, got, want)
			}
			if mapErr == nil {
				got := labels.SelectorFromSet(SelectorMap(asMap)).Matches(labels.Set(podLabels))
				if want := virtual.Matches(labels.Set(pod)); got != want {
					t.Errorf("map %v against %v: physical %v, virtual %v", asMap, pod, got, want)
				}
			}
			ls, err := metav1.ParseToLabelSelector(s)
			if err != nil {
				continue // "!=" has no LabelSelector form
			}
			translated, err := metav1.LabelSelectorAsSelector(LabelSelector(ls))
			if err != nil {
				t.Fatal(err)
			}
			if got, want := translated.Matches(labels.Set(podLabels)), virtual.Matches(labels.Set(pod)); got != want {
				t.Errorf("LabelSelector %q against %v: physical %v, virtual %v", s, pod, got, want)
			}
		}
	}
	if LabelSelector(nil) != nil || SelectorMap(nil) != nil {
		t.Error("a nil selector does not stay nil")
	}
}

func TestPodSelector(t *testing.T) {
	owner := ownership.Owner{ClusterID: "c", BindingUID: "uid-1"}
	pod := func(namespace string, binding ownership.Owner, virtual map[string]string) labels.Set {
		l := Translator{}.Labels(virtual)
		binding.Stamp(l)
		l[kubeoceanv1alpha1.LabelVirtualNamespace] = namespace
		return l
	}
	selector := labels.SelectorFromSet(PodSelector(owner, "shop", map[string]string{"app": "redis"}))
	for _, tc := range []struct {
		name   string
		labels labels.Set
		want   bool
	}{
		{"the binding's pod of the namespace", pod("shop", owner, map[string]string{"app": "redis", "x": "y"}), true},
		{"another namespace", pod("other", owner, map[string]string{"app": "redis"}), false},
		{"another binding", pod("shop", ownership.Owner{ClusterID: "c", BindingUID: "uid-2"}, map[string]string{"app": "redis"}), false},
		{"another app", pod("shop", owner, map[string]string{"app": "web"}), false},
		{"a tenant forging the namespace label", pod("other", owner, map[string]string{"app": "redis", kubeoceanv1alpha1.LabelVirtualNamespace: "shop"}), false},
		{"a physical pod that is not Kubeocean's", labels.Set{"app": "redis"}, false},
	} {
		if got := selector.Matches(tc.labels); got != tc.want {
			t.Errorf("%s: selected = %v", tc.name, got)
		}
	}
}
