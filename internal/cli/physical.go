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
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/kubernetes"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
	"github.com/kubeocean/kubeocean/manifests"
)

// physicalObjects: the ResourceLeasingPolicy CRD, then the shipped
// physical RBAC with its mount namespace replaced by the binding's
// everywhere it is named: the namespace, the objects in it, the subjects,
// resourceNames, and the names of the binding's own ClusterRole,
// ClusterRoleBinding and FlowSchema. The long-lived token Secret is left
// out: bind issues a bound token, which expires and can be revoked.
func (o *bindOptions) physicalObjects() ([]*unstructured.Unstructured, error) {
	crd, err := manifests.Read(manifests.ResourceLeasingPolicyCRD)
	if err != nil {
		return nil, err
	}
	objects, err := decodeYAML(crd)
	if err != nil {
		return nil, err
	}
	files, err := manifests.Kustomization("rbac/physical")
	if err != nil {
		return nil, err
	}
	for _, f := range files {
		decoded, err := decodeYAML(replaceWord(f, shippedMountNamespace, o.mountNamespace))
		if err != nil {
			return nil, err
		}
		for _, obj := range decoded {
			if obj.GetKind() == "Secret" {
				continue
			}
			objects = append(objects, obj)
		}
	}
	return objects, nil
}

// replaceWord replaces each whole-word occurrence of from in data by to: a
// name character (letter, digit, '-' or '_') on either side makes it part
// of another name (kubeocean-worker-2, my-kubeocean-worker), which stays.
func replaceWord(data []byte, from, to string) []byte {
	var out bytes.Buffer
	last := 0
	for i := 0; ; {
		j := bytes.Index(data[i:], []byte(from))
		if j < 0 {
			break
		}
		start, end := i+j, i+j+len(from)
		if (start == 0 || !isNameByte(data[start-1])) && (end == len(data) || !isNameByte(data[end])) {
			out.Write(data[last:start])
			out.WriteString(to)
			last = end
		}
		i = end
	}
	out.Write(data[last:])
	return out.Bytes()
}

func isNameByte(b byte) bool {
	return b == '-' || b == '_' || (b >= 'a' && b <= 'z') || (b >= 'A' && b <= 'Z') || (b >= '0' && b <= '9')
}

// checkClaim refuses a mount namespace that another binding claimed: the
// manager records the binding a mount namespace belongs to in the
// ConfigMap MountNamespaceClaim at its first connection. A binding of the
// same name in the same virtual cluster (the same one, or one recreated)
// may bind it again.
func checkClaim(ctx context.Context, physical, virtual kubernetes.Interface, mountNamespace, name string) error {
	claim, err := physical.CoreV1().ConfigMaps(mountNamespace).Get(ctx, kubeoceanv1alpha1.MountNamespaceClaim, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("physical cluster: reading the claim of the mount namespace %s: %w", mountNamespace, err)
	}
	kubeSystem, err := virtual.CoreV1().Namespaces().Get(ctx, metav1.NamespaceSystem, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("virtual cluster: namespace %s, which identifies the virtual cluster: %w", metav1.NamespaceSystem, err)
	}
	owner := claim.Data[kubeoceanv1alpha1.ClaimKeyBinding]
	ownerCluster := claim.Data[kubeoceanv1alpha1.ClaimKeyVirtualCluster]
	if owner == name && ownerCluster == string(kubeSystem.UID) {
		return nil
	}
	whose := "this virtual cluster"
	if ownerCluster != string(kubeSystem.UID) {
		whose = fmt.Sprintf("another virtual cluster (kube-system UID %q)", ownerCluster)
	}
	return fmt.Errorf("physical cluster: the mount namespace %s belongs to the binding %q of %s (ConfigMap %s/%s, clusterID %q): "+
		"choose another --mount-namespace, or, if that binding is gone for good, delete that ConfigMap",
		mountNamespace, owner, whose, mountNamespace, kubeoceanv1alpha1.MountNamespaceClaim, claim.Data[kubeoceanv1alpha1.ClaimKeyClusterID])
}
