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
	"context"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/kubeocean/kubeocean/internal/hostports"
)

const (
	placeholderNamespace = "kubeocean-system"
	foreignHostPortPod   = "foreign-host-port"
)

// placeholders counts the host port placeholders in the virtual cluster.
func placeholders(ctx context.Context) (int, error) {
	list, err := world.VirtualKube.CoreV1().Pods(placeholderNamespace).List(ctx, metav1.ListOptions{LabelSelector: hostports.LabelPlaceholder + "=true"})
	if err != nil {
		return 0, err
	}
	return len(list.Items), nil
}

// holdForeignHostPort runs a pod Kubeocean does not run with a host port on
// node-a and waits for the placeholder that holds the port on its virtual
// node; unbinding must remove it (checkPlaceholdersGone).
func holdForeignHostPort(t *testing.T) {
	ctx := t.Context()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: metav1.NamespaceDefault, Name: foreignHostPortPod},
		Spec: corev1.PodSpec{
			NodeName:    "node-a",
			Tolerations: []corev1.Toleration{{Operator: corev1.TolerationOpExists}},
			Containers: []corev1.Container{{Name: "app", Image: "registry.k8s.io/pause:3.10",
				Ports: []corev1.ContainerPort{{ContainerPort: 7070, HostPort: 7070}}}},
		},
	}
	_, err := world.PhysicalKube.CoreV1().Pods(pod.Namespace).Create(ctx, pod, metav1.CreateOptions{})
	step(t, "create a foreign pod with a host port", err)
	waitFor(t, "a placeholder holds the foreign host port", func(ctx context.Context) (string, error) {
		n, err := placeholders(ctx)
		if err != nil || n != 1 {
			return fmt.Sprintf("%d placeholders (%v)", n, err), nil
		}
		return "", nil
	})
}

// checkPlaceholdersGone: after unbinding no placeholder is left.
func checkPlaceholdersGone(t *testing.T) {
	ctx := t.Context()
	waitFor(t, "no placeholder left after unbinding", func(ctx context.Context) (string, error) {
		n, err := placeholders(ctx)
		if err != nil || n != 0 {
			return fmt.Sprintf("%d placeholders (%v)", n, err), nil
		}
		return "", nil
	})
	err := world.PhysicalKube.CoreV1().Pods(metav1.NamespaceDefault).Delete(ctx, foreignHostPortPod, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)})
	step(t, "delete the foreign pod", ignoreNotFound(err))
}
