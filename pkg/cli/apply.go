package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/discovery/cached/memory"
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

// applier applies objects to one cluster with server-side apply, or, in a
// dry run, prints them.
type applier struct {
	cluster string // "physical" or "virtual", for messages
	c       *clients
	dryRun  bool
	out     io.Writer
	mapper  meta.RESTMapper
}

func newApplier(cluster string, c *clients, dryRun bool, out io.Writer) *applier {
	a := &applier{cluster: cluster, c: c, dryRun: dryRun, out: out}
	if c != nil {
		a.mapper = restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(c.kube.Discovery()))
	}
	return a
}

// apply applies each object in order; secret values are never printed.
func (a *applier) apply(ctx context.Context, objects ...*unstructured.Unstructured) error {
	for _, obj := range objects {
		if a.dryRun {
			if err := a.print(obj); err != nil {
				return err
			}
			continue
		}
		if err := a.applyOne(ctx, obj); err != nil {
			return fmt.Errorf("%s cluster: applying %s %s: %w", a.cluster, obj.GetKind(), describe(obj), err)
		}
		fmt.Fprintf(a.out, "%s cluster: %s %s applied\n", a.cluster, obj.GetKind(), describe(obj))
	}
	return nil
}

func (a *applier) applyOne(ctx context.Context, obj *unstructured.Unstructured) error {
	gvk := obj.GroupVersionKind()
	mapping, err := a.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if meta.IsNoMatchError(err) {
		// A CRD applied a moment ago: discover again.
		if r, ok := a.mapper.(meta.ResettableRESTMapper); ok {
			r.Reset()
		}
		mapping, err = a.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	}
	if err != nil {
		return err
	}
	resource := a.c.dynamic.Resource(mapping.Resource)
	opts := metav1.ApplyOptions{FieldManager: FieldManager, Force: true}
	if mapping.Scope.Name() == meta.RESTScopeNameNamespace {
		_, err = resource.Namespace(obj.GetNamespace()).Apply(ctx, obj.GetName(), obj, opts)
	} else {
		_, err = resource.Apply(ctx, obj.GetName(), obj, opts)
	}
	return err
}

// print writes obj as a YAML document, with the values of a Secret
// replaced.
func (a *applier) print(obj *unstructured.Unstructured) error {
	if obj.GetKind() == "Secret" {
		obj = obj.DeepCopy()
		for _, field := range []string{"data", "stringData"} {
			values, _, _ := unstructured.NestedMap(obj.Object, field)
			for k := range values {
				values[k] = "<redacted>"
			}
			if len(values) > 0 {
				_ = unstructured.SetNestedMap(obj.Object, values, field)
			}
		}
	}
	data, err := yaml.Marshal(obj.Object)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(a.out, "# %s cluster\n---\n%s", a.cluster, data)
	return err
}

func describe(obj *unstructured.Unstructured) string {
	if obj.GetNamespace() != "" {
		return obj.GetNamespace() + "/" + obj.GetName()
	}
	return obj.GetName()
}
