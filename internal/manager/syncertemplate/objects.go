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

package syncertemplate

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/yaml"
)

// Object is a rendered syncer object: a *appsv1.Deployment,
// *corev1.ServiceAccount or *corev1.ConfigMap.
type Object interface {
	runtime.Object
	metav1.Object
}

// strictDecoder rejects unknown and duplicate fields, so a misspelt field in
// a template is an error rather than a silently missing setting.
var strictDecoder = serializer.NewCodecFactory(clientgoscheme.Scheme, serializer.EnableStrict).UniversalDeserializer()

// decode splits one rendered file into documents and decodes each. Objects
// without a namespace get namespace; objects in another one are refused,
// since the manager only watches its syncer namespace.
func decode(file string, rendered []byte, namespace string) ([]Object, error) {
	reader := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(rendered)))
	var objects []Object
	for doc := 1; ; doc++ {
		data, err := reader.Read()
		if errors.Is(err, io.EOF) {
			return objects, nil
		}
		if err != nil {
			return nil, fmt.Errorf("syncer template %s, document %d: %w", file, doc, err)
		}
		if empty, err := isEmpty(data); err != nil || empty {
			if err != nil {
				return nil, fmt.Errorf("syncer template %s, document %d: %w", file, doc, err)
			}
			continue
		}
		obj, gvk, err := strictDecoder.Decode(data, nil, nil)
		if err != nil {
			return nil, fmt.Errorf("syncer template %s, document %d: %w", file, doc, err)
		}
		object, ok := obj.(Object)
		if !ok || !supported(obj) {
			return nil, fmt.Errorf("syncer template %s, document %d: kind %s is not supported (only Deployment, ServiceAccount and ConfigMap)", file, doc, gvk.Kind)
		}
		// The typed object forgets its kind on decoding; keep it for
		// messages and hashes.
		obj.GetObjectKind().SetGroupVersionKind(*gvk)
		switch object.GetNamespace() {
		case "":
			object.SetNamespace(namespace)
		case namespace:
		default:
			return nil, fmt.Errorf("syncer template %s, document %d: %s %s is in namespace %q; syncer objects must be in %q (or leave the namespace out)",
				file, doc, gvk.Kind, object.GetName(), object.GetNamespace(), namespace)
		}
		if object.GetName() == "" {
			return nil, fmt.Errorf("syncer template %s, document %d: %s has no name", file, doc, gvk.Kind)
		}
		objects = append(objects, object)
	}
}

func isEmpty(doc []byte) (bool, error) {
	data, err := yaml.YAMLToJSON(doc)
	if err != nil {
		return false, err
	}
	trimmed := bytes.TrimSpace(data)
	return len(trimmed) == 0 || string(trimmed) == "null", nil
}

func supported(obj runtime.Object) bool {
	switch obj.(type) {
	case *appsv1.Deployment, *corev1.ServiceAccount, *corev1.ConfigMap:
		return true
	}
	return false
}

// checkObjects requires exactly one Deployment (the syncer, whose
// availability is its readiness) and no two objects of one kind and name.
func checkObjects(objects []Object) error {
	deployments := 0
	seen := map[string]bool{}
	for _, o := range objects {
		if _, ok := o.(*appsv1.Deployment); ok {
			deployments++
		}
		key := o.GetObjectKind().GroupVersionKind().Kind + "/" + o.GetName()
		if seen[key] {
			return fmt.Errorf("syncer templates render %s twice", key)
		}
		seen[key] = true
	}
	if deployments != 1 {
		return fmt.Errorf("syncer templates must render exactly one Deployment, got %d", deployments)
	}
	return nil
}

// Deployment returns the syncer Deployment among rendered objects.
func Deployment(objects []Object) *appsv1.Deployment {
	for _, o := range objects {
		if d, ok := o.(*appsv1.Deployment); ok {
			return d
		}
	}
	return nil
}
