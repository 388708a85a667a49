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

// Package testenv holds what integration and end-to-end tests share beyond
// starting control planes: installing Kubeocean's manifests the way a user
// would, and finding files of the repository.
package testenv

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"
)

// RepoPath returns the absolute path of a file or folder of the repository,
// given relative to its root.
func RepoPath(rel string) string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", rel)
}

// InstallCRDs creates every CRD in manifests/crds, from the same YAML files
// users apply, and waits until the apiserver serves them.
func InstallCRDs(ctx context.Context, config *rest.Config) error {
	client, err := apiextensionsclient.NewForConfig(config)
	if err != nil {
		return err
	}
	files, err := filepath.Glob(RepoPath("manifests/crds/*.yaml"))
	if err != nil || len(files) == 0 {
		return fmt.Errorf("no CRD manifests found in manifests/crds (err: %v)", err)
	}
	var names []string
	for _, file := range files {
		crd, err := readCRD(file)
		if err != nil {
			return err
		}
		_, err = client.ApiextensionsV1().CustomResourceDefinitions().Create(ctx, crd, metav1.CreateOptions{})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating CRD from %s: %w", filepath.Base(file), err)
		}
		names = append(names, crd.Name)
	}
	for _, name := range names {
		if err := waitEstablished(ctx, client, name); err != nil {
			return err
		}
	}
	return nil
}

func readCRD(file string) (*apiextensionsv1.CustomResourceDefinition, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := yaml.UnmarshalStrict(data, crd); err != nil {
		return nil, fmt.Errorf("decoding %s: %w", file, err)
	}
	return crd, nil
}

func waitEstablished(ctx context.Context, client apiextensionsclient.Interface, name string) error {
	var last string
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		crd, err := client.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		var conditions []string
		for _, c := range crd.Status.Conditions {
			conditions = append(conditions, fmt.Sprintf("%s=%s", c.Type, c.Status))
			if c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue {
				return true, nil
			}
		}
		last = strings.Join(conditions, ",")
		return false, nil
	})
	if err != nil {
		return fmt.Errorf("CRD %s not established (conditions %s): %w", name, last, err)
	}
	return nil
}
