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

package pod

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	psaapi "k8s.io/pod-security-admission/api"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
	"github.com/kubeocean/kubeocean/internal/syncer/topdown/podspec"
	"github.com/kubeocean/kubeocean/pkg/controller"
)

// refusedEphemeralContainers judges the ephemeral containers that the
// virtual pod has and its physical pod lacks as the physical Pod Security
// admission judges an ephemeralcontainers update: the pod with the
// container added, against the level the mount namespace enforces. Each
// is judged alone, so one refused container keeps none of the others
// back. It returns why each refused one is, by name; nil when the level is
// not known (the physical cluster's own admission then judges).
func (c *Controller) refusedEphemeralContainers(virtual, physical *corev1.Pod, m mapping) map[string]string {
	level, ok := c.preflight.PodSecurity.Level()
	if !ok || level.Level == psaapi.LevelPrivileged {
		return nil
	}
	t := c.translation(virtual, m.name, physical.Spec.NodeName, podspec.Names{Namespace: virtual.Namespace})
	base := podspec.PhysicalPod(virtual, t)
	var refused map[string]string
	for _, container := range missingEphemeralContainers(virtual, physical, t) {
		pod := base.DeepCopy()
		pod.Spec.EphemeralContainers = []corev1.EphemeralContainer{container}
		if message := c.preflight.PodSecurity.Violation(level, pod); message != "" {
			if refused == nil {
				refused = map[string]string{}
			}
			refused[container.Name] = message
		}
	}
	return refused
}

// withoutEphemeralContainers is virtual without the ephemeral containers
// named in refused; virtual itself when there are none.
func withoutEphemeralContainers(virtual *corev1.Pod, refused map[string]string) *corev1.Pod {
	if len(refused) == 0 {
		return virtual
	}
	admitted := virtual.DeepCopy()
	admitted.Spec.EphemeralContainers = slices.DeleteFunc(admitted.Spec.EphemeralContainers, func(e corev1.EphemeralContainer) bool {
		_, ok := refused[e.Name]
		return ok
	})
	return admitted
}

// reportEphemeralRefusals shows on the virtual pod which of its ephemeral
// containers are refused: one Warning event per container, the first time
// it is refused, and kubeoceanv1alpha1.PodConditionEphemeralContainersAllowed, written when it
// changes.
func (c *Controller) reportEphemeralRefusals(ctx context.Context, virtual *corev1.Pod, refused map[string]string) error {
	key := controller.ObjectKey(virtual)
	names := slices.Sorted(maps.Keys(refused))
	lines := make([]string, 0, len(names))
	for _, name := range names {
		message := fmt.Sprintf("ephemeral container %q not added to the physical pod: it %s", name, refused[name])
		lines = append(lines, message)
		if c.preflight.Memory.RememberEphemeral(key, virtual.UID, name) {
			c.recorder.Event(virtual, corev1.EventTypeWarning, kubeoceanv1alpha1.ReasonPodSecurityViolation, message)
			klog.FromContext(ctx).Info("Ephemeral container refused", "container", name, "message", message)
		}
	}
	if len(lines) == 0 {
		_, err := c.setPodCondition(ctx, virtual, kubeoceanv1alpha1.PodConditionEphemeralContainersAllowed, corev1.ConditionTrue, kubeoceanv1alpha1.ReasonEphemeralContainersAllowed, "")
		return err
	}
	_, err := c.setPodCondition(ctx, virtual, kubeoceanv1alpha1.PodConditionEphemeralContainersAllowed, corev1.ConditionFalse, kubeoceanv1alpha1.ReasonPodSecurityViolation, strings.Join(lines, "; "))
	return err
}
