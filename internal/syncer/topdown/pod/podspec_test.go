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
	corev1 "k8s.io/api/core/v1"

	"github.com/kubeocean/kubeocean/internal/syncer/topdown/podidentity"
	"github.com/kubeocean/kubeocean/internal/syncer/topdown/podspec"
	"github.com/kubeocean/kubeocean/internal/syncer/topdown/podtest"
)

// The physical pods these tests expect, made as package podspec makes them.

// resolvedNames are the names the fake dependents return for pod.
func resolvedNames(pod *corev1.Pod) podspec.Names {
	configMaps, secrets, pvcs := podtest.CopiedNames(pod)
	return podspec.Names{Namespace: pod.Namespace, ConfigMaps: configMaps, Secrets: secrets, PVCs: pvcs}
}

// physicalFor is the physical pod created for virtual, as it is stored.
func physicalFor(virtual *corev1.Pod) *corev1.Pod {
	pod := podspec.PhysicalPod(virtual, podspec.Translation{MountNamespace: mountNS, Owner: testOwner, PhysicalName: physicalName, PhysicalNode: physicalNode,
		Names: resolvedNames(virtual), Plan: podidentity.PlanFor(virtual)})
	pod.UID = physicalUID
	pod.ResourceVersion = "20"
	return pod
}
