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
	"encoding/json"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/klog/v2"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
	"github.com/kubeocean/kubeocean/internal/syncer/topdown/podidentity"
	"github.com/kubeocean/kubeocean/internal/syncer/topdown/podspec"
)

// ephemeralContainersSubresource is the subresource through which
// ephemeral containers are added to a running pod; the API takes them
// nowhere else.
const ephemeralContainersSubresource = "ephemeralcontainers"

// missingEphemeralContainers are the virtual pod's ephemeral containers
// (added by kubectl debug) that its physical pod lacks, translated like
// every other container. Ephemeral containers can be added, never changed
// or removed, so those the physical pod has are left alone.
func missingEphemeralContainers(virtual, physical *corev1.Pod, t podspec.Translation) []corev1.EphemeralContainer {
	have := sets.New[string]()
	for _, c := range physical.Spec.EphemeralContainers {
		have.Insert(c.Name)
	}
	var missing []corev1.EphemeralContainer
	for _, c := range virtual.Spec.EphemeralContainers {
		if have.Has(c.Name) {
			continue
		}
		c := *c.DeepCopy()
		t.RewriteContainer((*corev1.Container)(&c.EphemeralContainerCommon), virtual)
		missing = append(missing, c)
	}
	return missing
}

func lacksEphemeralContainers(virtual, physical *corev1.Pod) bool {
	have := sets.New[string]()
	for _, c := range physical.Spec.EphemeralContainers {
		have.Insert(c.Name)
	}
	for _, c := range virtual.Spec.EphemeralContainers {
		if !have.Has(c.Name) {
			return true
		}
	}
	return false
}

// syncEphemeralContainers adds to the physical pod the ephemeral containers
// added to the virtual pod, after copying what they refer to. Those that
// would break the mount namespace's Pod Security level are judged first
// and never sent, nor is anything they refer to copied (see
// refusedEphemeralContainers). The bottom-up side copies their statuses
// back with the rest of the pod's status. It returns when to look again (a
// name conflict of a copy, which someone must remove) or an error worth
// retrying; a refusal by the physical cluster is an event on the virtual
// pod and is not retried before the pod is reconciled again for another
// reason.
func (c *Controller) syncEphemeralContainers(ctx context.Context, virtual, physical *corev1.Pod, m mapping) (time.Duration, error) {
	if !lacksEphemeralContainers(virtual, physical) {
		return 0, nil
	}
	refused := c.refusedEphemeralContainers(virtual, physical, m)
	if err := c.reportEphemeralRefusals(ctx, virtual, refused); err != nil {
		return 0, err
	}
	virtual = withoutEphemeralContainers(virtual, refused)
	if !lacksEphemeralContainers(virtual, physical) {
		return 0, nil
	}
	names, problem := c.resolveDependencies(ctx, virtual)
	if problem != nil {
		if problem.conflict {
			c.recorder.Event(virtual, corev1.EventTypeWarning, problem.reason, problem.message)
			return conflictRecheck, nil
		}
		return 0, fmt.Errorf("ephemeral containers wait for their references: %w", problem.err)
	}
	missing := missingEphemeralContainers(virtual, physical, podspec.Translation{
		MountNamespace: c.mountNamespace,
		Owner:          c.owner,
		PhysicalName:   m.name,
		Names:          names,
		Plan:           podidentity.PlanFor(virtual),
		APIServer:      c.apiServer,
	})
	// A strategic merge patch adds by name, whatever the physical pod's
	// resourceVersion: the kubelet's status updates cannot make it fail.
	patch, err := json.Marshal(map[string]any{"spec": map[string]any{"ephemeralContainers": missing}})
	if err != nil {
		return 0, err
	}
	_, err = c.physicalClient.Pods(physical.Namespace).Patch(ctx, physical.Name, types.StrategicMergePatchType, patch,
		metav1.PatchOptions{}, ephemeralContainersSubresource)
	switch {
	case apierrors.IsNotFound(err):
		return 0, nil // gone; its deletion event brings us back
	case isEphemeralRefusal(err):
		// Pod Security or validation: the same containers meet the same
		// answer until something changes.
		c.recorder.Eventf(virtual, corev1.EventTypeWarning, kubeoceanv1alpha1.ReasonEphemeralContainersRejected,
			"The physical cluster refused the ephemeral containers: %v", err)
		return 0, nil
	case err != nil:
		return 0, fmt.Errorf("adding ephemeral containers to physical pod %s/%s: %w", physical.Namespace, physical.Name, err)
	}
	klog.FromContext(ctx).V(2).Info("Added ephemeral containers to physical pod", "physicalPod", klog.KObj(physical), "count", len(missing))
	return 0, nil
}

// isEphemeralRefusal is isRefusal for the ephemeralcontainers subresource:
// the syncer's own missing grant names the user and is retried.
func isEphemeralRefusal(err error) bool {
	return apierrors.IsInvalid(err) ||
		(apierrors.IsForbidden(err) && !strings.Contains(err.Error(), " cannot patch resource "))
}
