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

package podspec

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
	"github.com/kubeocean/kubeocean/internal/ownership"
)

const (
	testClusterID = "c1"
	testBinding   = types.UID("binding-uid")
	mountNS       = "mount"
	virtualNS     = "team-a"
	virtualName   = "web"
	virtualNode   = "vnode-c1-node-1"
	physicalNode  = "node-1"
	virtualUID    = types.UID("virtual-uid")
	physicalUID   = types.UID("physical-uid")
)

var (
	physicalName = kubeoceanv1alpha1.PhysicalName(virtualNS, virtualName)
	testOwner    = ownership.Owner{ClusterID: testClusterID, BindingUID: testBinding}
)

// boundPod is a virtual pod bound to a virtual node, with a ConfigMap and a
// Secret env and no token volume.
func boundPod() *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: virtualNS, Name: virtualName, UID: virtualUID, ResourceVersion: "10",
			Labels: map[string]string{"app": "web"},
		},
		Spec: corev1.PodSpec{
			NodeName: virtualNode,
			Containers: []corev1.Container{{
				Name: "app", Image: "nginx:1",
				Env: []corev1.EnvVar{
					{Name: "A", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{
						LocalObjectReference: corev1.LocalObjectReference{Name: "config"}, Key: "a"}}},
					{Name: "B", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
						LocalObjectReference: corev1.LocalObjectReference{Name: "creds"}, Key: "b"}}},
				},
			}},
		},
		Status: corev1.PodStatus{Phase: corev1.PodPending},
	}
}

// mapped adds the mapping annotations; with uid also the physical UID the
// bottom-up side records.
func mapped(pod *corev1.Pod, uid types.UID) *corev1.Pod {
	if pod.Annotations == nil {
		pod.Annotations = map[string]string{}
	}
	pod.Annotations[kubeoceanv1alpha1.AnnotationPhysicalPodNamespace] = mountNS
	pod.Annotations[kubeoceanv1alpha1.AnnotationPhysicalPodName] = physicalName
	if uid != "" {
		pod.Annotations[kubeoceanv1alpha1.AnnotationPhysicalPodUID] = string(uid)
	}
	return pod
}
