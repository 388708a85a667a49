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

package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/restmapper"
	"sigs.k8s.io/yaml"
)

// decodeYAML splits multi-document YAML into objects, skipping empty ones.
func decodeYAML(data []byte) ([]*unstructured.Unstructured, error) {
	decoder := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	var objects []*unstructured.Unstructured
	for {
		var obj map[string]any
		if err := decoder.Decode(&obj); err != nil {
			if errors.Is(err, io.EOF) {
				return objects, nil
			}
			return nil, err
		}
		if len(obj) > 0 {
			objects = append(objects, &unstructured.Unstructured{Object: obj})
		}
	}
}

// toUnstructured turns a typed object with its TypeMeta set into one.
func toUnstructured(obj runtime.Object) (*unstructured.Unstructured, error) {
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, err
	}
	u := &unstructured.Unstructured{Object: m}
	unstructured.RemoveNestedField(u.Object, "metadata", "creationTimestamp")
	unstructured.RemoveNestedField(u.Object, "status")
	return u, nil
}

// Outcomes of ensure, as printed.
const (
	outcomeCreated     = "created"
	outcomeUnchanged   = "unchanged"
	outcomeDiffers     = "differs from the shipped version, left as is"
	outcomeWouldCreate = "would be created"
	outcomeWouldLeave  = "differs from the shipped version, would be left as is"
)

// applier creates in one cluster the objects that are missing and leaves
// those that exist as they are: an administrator may have hardened them
// (a stricter pod security level, a rule removed), and bind must never
// undo that. It prints, per object, what it did or, in a dry run, a diff
// of what it would apply against what exists.
type applier struct {
	cluster string // "physical" or "virtual", for messages
	dynamic dynamic.Interface
	mapper  meta.RESTMapper
	dryRun  bool
	out     io.Writer
}

func newApplier(cluster string, c *clients, dryRun bool, out io.Writer) *applier {
	return &applier{cluster: cluster, dynamic: c.dynamic, dryRun: dryRun, out: out,
		mapper: restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(c.kube.Discovery()))}
}

// ensure creates each object that does not exist, in order, and reports
// on those that do.
func (a *applier) ensure(ctx context.Context, objects ...*unstructured.Unstructured) error {
	for _, obj := range objects {
		if _, err := a.ensureOne(ctx, obj); err != nil {
			return fmt.Errorf("%s cluster: %s %s: %w", a.cluster, obj.GetKind(), describe(obj), err)
		}
	}
	return nil
}

// ensureOne returns the outcome it printed.
func (a *applier) ensureOne(ctx context.Context, obj *unstructured.Unstructured) (string, error) {
	resource, err := a.resource(obj)
	if meta.IsNoMatchError(err) && a.dryRun {
		// A kind whose CRD the dry run did not create: nothing of it exists.
		return a.report(obj, nil)
	}
	if err != nil {
		return "", err
	}
	existing, err := resource.Get(ctx, obj.GetName(), metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		existing = nil
	case err != nil:
		return "", err
	}
	if existing == nil && !a.dryRun {
		if _, err := resource.Create(ctx, obj, metav1.CreateOptions{FieldManager: FieldManager}); err != nil {
			return "", err
		}
	}
	return a.report(obj, existing)
}

// report prints what ensure did with obj, given what existed before.
func (a *applier) report(obj, existing *unstructured.Unstructured) (string, error) {
	head := fmt.Sprintf("%s cluster: %s %s", a.cluster, obj.GetKind(), describe(obj))
	if existing == nil {
		if !a.dryRun {
			fmt.Fprintf(a.out, "%s %s\n", head, outcomeCreated)
			return outcomeCreated, nil
		}
		return outcomeWouldCreate, a.printDiff(head+" "+outcomeWouldCreate, obj, nil)
	}
	diffs := differences(obj.Object, existing.Object)
	switch {
	case len(diffs) == 0:
		fmt.Fprintf(a.out, "%s %s\n", head, outcomeUnchanged)
		return outcomeUnchanged, nil
	case a.dryRun:
		return outcomeWouldLeave, a.printDiff(head+" "+outcomeWouldLeave, obj, existing)
	}
	fmt.Fprintf(a.out, "%s %s:\n", head, outcomeDiffers)
	for _, d := range diffs {
		fmt.Fprintf(a.out, "    %s\n", d)
	}
	return outcomeDiffers, nil
}

// printDiff prints a unified diff of the fields of existing that bind sets
// against obj (all added when existing is nil), secret values redacted.
func (a *applier) printDiff(head string, obj, existing *unstructured.Unstructured) error {
	shipped, err := yaml.Marshal(redacted(obj).Object)
	if err != nil {
		return err
	}
	var current []byte
	if existing != nil {
		projected, _ := project(obj.Object, redacted(existing).Object).(map[string]any)
		if current, err = yaml.Marshal(projected); err != nil {
			return err
		}
	}
	from := "/dev/null"
	if existing != nil {
		from = a.cluster + " cluster: " + describe(obj)
	}
	diff := unifiedDiff(from, "bind: "+describe(obj), string(current), string(shipped))
	_, err = fmt.Fprintf(a.out, "%s\n%s", head, indent(diff))
	return err
}

func (a *applier) resource(obj *unstructured.Unstructured) (dynamic.ResourceInterface, error) {
	gvk := obj.GroupVersionKind()
	mapping, err := a.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if meta.IsNoMatchError(err) {
		// A CRD created a moment ago: discover again.
		if r, ok := a.mapper.(meta.ResettableRESTMapper); ok {
			r.Reset()
		}
		mapping, err = a.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	}
	if err != nil {
		return nil, err
	}
	if mapping.Scope.Name() == meta.RESTScopeNameNamespace {
		return a.dynamic.Resource(mapping.Resource).Namespace(obj.GetNamespace()), nil
	}
	return a.dynamic.Resource(mapping.Resource), nil
}

func indent(s string) string {
	if s == "" {
		return ""
	}
	return "    " + strings.ReplaceAll(strings.TrimSuffix(s, "\n"), "\n", "\n    ") + "\n"
}

func describe(obj *unstructured.Unstructured) string {
	if obj.GetNamespace() != "" {
		return obj.GetNamespace() + "/" + obj.GetName()
	}
	return obj.GetName()
}
