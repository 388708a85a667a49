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

package preflight

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
	"github.com/kubeocean/kubeocean/internal/syncer/allowances"
)

// DaemonSetPods refuses the pods of DaemonSets (ReasonDaemonSetPodNotSynced)
// unless the syncer runs them.
type DaemonSetPods struct {
	// Sync is the syncer's --sync-daemonset-pods.
	Sync bool
}

// daemonSetPodMessage is the condition message of a DaemonSet's pod.
const daemonSetPodMessage = "Pods of DaemonSets are not run on virtual nodes (the syncer's --sync-daemonset-pods is off); " +
	"keep the DaemonSet off virtual nodes: do not tolerate the kubeocean.io/vnode taint, or require nodes without the label kubeocean.io/managed-by=kubeocean"

func (d DaemonSetPods) Check(_ context.Context, pod *Pod) *Refusal {
	if d.Sync || !isDaemonSetPod(pod.Virtual) {
		return nil
	}
	return &Refusal{Reason: kubeoceanv1alpha1.ReasonDaemonSetPodNotSynced, Message: daemonSetPodMessage, Again: true}
}

// isDaemonSetPod tells a pod whose controller is a DaemonSet.
func isDaemonSetPod(pod *corev1.Pod) bool {
	owner := metav1.GetControllerOf(pod)
	return owner != nil && owner.Kind == "DaemonSet" && strings.HasPrefix(owner.APIVersion, "apps/")
}

// AllowedSpec refuses a pod that is not created as it asks, beyond Pod
// Security: a runtime class the lender does not allow
// (ResourceLeasingPolicy.spec.allowances.runtimeClassNames), or a projected
// volume source that Kubeocean cannot serve from the virtual cluster.
//
// Such a pod is refused, not run without what it asks for: a pod that
// names a sandboxing runtime (gVisor, Kata) counts on it to contain what it
// runs, and a projected source left out would mount less than the pod
// expects. The allowances are read as the cache has them now; the pod is
// tried again when it changes, or when whatever wakes refused pods fires.
type AllowedSpec struct {
	// Allowances, nil, allow nothing beyond the defaults.
	Allowances *allowances.Source
}

func (a AllowedSpec) Check(_ context.Context, pod *Pod) *Refusal {
	if reason, message := a.notAllowed(pod.Virtual); reason != "" {
		return &Refusal{Reason: reason, Message: message}
	}
	return nil
}

func (a AllowedSpec) notAllowed(virtual *corev1.Pod) (reason, message string) {
	if name := virtual.Spec.RuntimeClassName; name != nil && *name != "" && !a.Allowances.Current().RuntimeClass(*name) {
		return kubeoceanv1alpha1.ReasonRuntimeClassNotAllowed, fmt.Sprintf("Runtime class %q is not allowed on this binding's physical cluster: "+
			"its administrator lists the runtime classes pods may use in the ResourceLeasingPolicy's spec.allowances.runtimeClassNames", *name)
	}
	for _, v := range virtual.Spec.Volumes {
		if v.Projected == nil {
			continue
		}
		for _, source := range v.Projected.Sources {
			if kind := unsupportedProjection(source); kind != "" {
				return kubeoceanv1alpha1.ReasonVolumeSourceNotSupported, fmt.Sprintf("Volume %q projects a %s source, which pods on virtual nodes cannot use: "+
					"only configMap, secret, downwardAPI and serviceAccountToken sources are served from the virtual cluster", v.Name, kind)
			}
		}
	}
	return "", ""
}

// unsupportedProjection names a projected source other than those the
// translation serves from the virtual cluster, or "" for one of those. A
// source of the physical cluster's (a trust bundle, a certificate its
// signers issue) would tell the pod the physical cluster's secrets; a
// source this version does not know cannot be translated at all.
func unsupportedProjection(source corev1.VolumeProjection) string {
	switch {
	case source.ConfigMap != nil, source.Secret != nil, source.DownwardAPI != nil, source.ServiceAccountToken != nil:
		return ""
	case source.ClusterTrustBundle != nil:
		return "clusterTrustBundle"
	case source.PodCertificate != nil:
		return "podCertificate"
	}
	return "unknown"
}
