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

package main

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
)

const (
	mountNamespace = "kubeocean-bench"
	bindingUID     = "bench-binding"
)

type runtimeObject = runtime.Object

func labels() map[string]string {
	return map[string]string{kubeoceanv1alpha1.LabelManagedBy: kubeoceanv1alpha1.ManagedByKubeocean, kubeoceanv1alpha1.LabelBindingUID: bindingUID}
}

// mirror is the mirror Service of virtual namespace/name, as the syncer
// keeps it.
func mirror(namespace, name string, spec corev1.ServiceSpec) *corev1.Service {
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{
			Name: kubeoceanv1alpha1.PhysicalName(namespace, name), Namespace: mountNamespace, Labels: labels(),
			Annotations: map[string]string{kubeoceanv1alpha1.AnnotationVirtualName: name, kubeoceanv1alpha1.AnnotationVirtualNamespace: namespace},
		},
		Spec: spec,
	}
}

func clusterIP(ip string) corev1.ServiceSpec {
	return corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP, ClusterIP: ip, ClusterIPs: []string{ip},
		Ports: []corev1.ServicePort{{Name: "http", Protocol: corev1.ProtocolTCP, Port: 80}}}
}

// headless is a headless mirror with one slice of n ready endpoints.
func headless(namespace, name string, n int) []runtime.Object {
	svc := mirror(namespace, name, corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP, ClusterIP: corev1.ClusterIPNone,
		Ports: []corev1.ServicePort{{Name: "http", Protocol: corev1.ProtocolTCP, Port: 80}}})
	return []runtime.Object{svc, endpointSlice(svc, n, 0)}
}

// endpointSlice is a slice of svc with n ready endpoints, as the
// EndpointSlice controller writes it (with the Service's labels).
func endpointSlice(svc *corev1.Service, n, seed int) *discoveryv1.EndpointSlice {
	l := labels()
	l[discoveryv1.LabelServiceName] = svc.Name
	s := &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Name: svc.Name + "-abcde", Namespace: mountNamespace, Labels: l},
		AddressType: discoveryv1.AddressTypeIPv4,
		Ports:       []discoveryv1.EndpointPort{{Name: ptr.To("http"), Protocol: ptr.To(corev1.ProtocolTCP), Port: ptr.To[int32](8080)}},
	}
	for i := range n {
		s.Endpoints = append(s.Endpoints, discoveryv1.Endpoint{
			Addresses:  []string{fmt.Sprintf("10.%d.%d.%d", 100+seed/65536, seed/256%256, i+1)},
			Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true), Serving: ptr.To(true), Terminating: ptr.To(false)},
			NodeName:   ptr.To("node-1"),
			TargetRef:  &corev1.ObjectReference{Kind: "Pod", Namespace: mountNamespace, Name: fmt.Sprintf("%s-%d", svc.Name, i)},
		})
	}
	return s
}
