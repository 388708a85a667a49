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

package service

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
	"github.com/kubeocean/kubeocean/internal/ownership"
	"github.com/kubeocean/kubeocean/internal/syncer/tenantmeta"
)

// mirrorClass is what of a Service the API cannot change in place between
// two of its values: whether it has a ClusterIP, none (headless), or is a
// DNS alias (ExternalName).
type mirrorClass int

const (
	classClusterIP mirrorClass = iota
	classHeadless
	classExternalName
)

func classOf(s *corev1.Service) mirrorClass {
	switch {
	case s.Spec.Type == corev1.ServiceTypeExternalName:
		return classExternalName
	case s.Spec.ClusterIP == corev1.ClusterIPNone:
		return classHeadless
	}
	return classClusterIP
}

// Mirror is the physical Service for a virtual Service: in mountNamespace,
// named by the physical name rule, with the binding's identity. NodePort
// and LoadBalancer become ClusterIP (a tenant opens no port on physical
// nodes, takes no load balancer and no external IP); the ClusterIP is the
// physical cluster's to allocate. A selector selects only the binding's
// physical pods of the virtual namespace (tenantmeta.PodSelector); without
// one the syncer writes the endpoints (MirrorSlices).
func Mirror(virtual *corev1.Service, owner ownership.Owner, mountNamespace string) *corev1.Service {
	mirror := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: mountNamespace,
			Name:      kubeoceanv1alpha1.PhysicalName(virtual.Namespace, virtual.Name),
			Labels:    owner.Stamp(nil),
			Annotations: map[string]string{
				kubeoceanv1alpha1.AnnotationVirtualName:      virtual.Name,
				kubeoceanv1alpha1.AnnotationVirtualNamespace: virtual.Namespace,
			},
		},
	}
	spec, from := &mirror.Spec, &virtual.Spec
	if classOf(virtual) == classExternalName {
		spec.Type = corev1.ServiceTypeExternalName
		spec.ExternalName = from.ExternalName
		spec.Ports = mirrorPorts(from.Ports)
		return mirror
	}
	spec.Type = corev1.ServiceTypeClusterIP
	if classOf(virtual) == classHeadless {
		spec.ClusterIP = corev1.ClusterIPNone
	}
	spec.Ports = mirrorPorts(from.Ports)
	if len(from.Selector) > 0 {
		spec.Selector = tenantmeta.PodSelector(owner, virtual.Namespace, from.Selector)
	}
	spec.SessionAffinity = from.SessionAffinity
	if spec.SessionAffinity == "" {
		spec.SessionAffinity = corev1.ServiceAffinityNone
	}
	if spec.SessionAffinity == corev1.ServiceAffinityClientIP {
		spec.SessionAffinityConfig = from.SessionAffinityConfig.DeepCopy()
	}
	spec.PublishNotReadyAddresses = from.PublishNotReadyAddresses
	spec.InternalTrafficPolicy = from.InternalTrafficPolicy
	return mirror
}

// mirrorPorts are the virtual ports without node ports.
func mirrorPorts(ports []corev1.ServicePort) []corev1.ServicePort {
	if len(ports) == 0 {
		return nil
	}
	out := make([]corev1.ServicePort, len(ports))
	for i, p := range ports {
		p.NodePort = 0
		if p.Protocol == "" {
			p.Protocol = corev1.ProtocolTCP
		}
		if p.TargetPort.IntVal == 0 && p.TargetPort.StrVal == "" {
			// The API's default, written so that the mirror read back
			// compares equal.
			p.TargetPort.IntVal = p.Port
		}
		p.AppProtocol = copyString(p.AppProtocol)
		out[i] = p
	}
	return out
}

func copyString(s *string) *string {
	if s == nil {
		return nil
	}
	c := *s
	return &c
}

// needsRecreate tells a mirror the API cannot turn into desired in place.
func needsRecreate(current, desired *corev1.Service) bool {
	return classOf(current) != classOf(desired)
}

// applyMirror writes desired's fields that the syncer owns onto a copy of
// current (keeping what the physical apiserver allocated and defaulted) and
// tells whether anything changed.
func applyMirror(current, desired *corev1.Service) (*corev1.Service, bool) {
	updated := current.DeepCopy()
	for k, v := range desired.Labels {
		if updated.Labels == nil {
			updated.Labels = map[string]string{}
		}
		updated.Labels[k] = v
	}
	for k, v := range desired.Annotations {
		if updated.Annotations == nil {
			updated.Annotations = map[string]string{}
		}
		updated.Annotations[k] = v
	}
	spec, want := &updated.Spec, &desired.Spec
	spec.Type = want.Type
	spec.ExternalName = want.ExternalName
	spec.Ports = want.Ports
	spec.Selector = want.Selector
	spec.PublishNotReadyAddresses = want.PublishNotReadyAddresses
	if want.Type != corev1.ServiceTypeExternalName {
		spec.SessionAffinity = want.SessionAffinity
		spec.SessionAffinityConfig = want.SessionAffinityConfig
		if want.InternalTrafficPolicy != nil {
			spec.InternalTrafficPolicy = want.InternalTrafficPolicy
		}
	}
	// A ClientIP affinity's timeout is defaulted by the apiserver; a
	// desired config without one compares equal to it.
	if want.SessionAffinityConfig == nil && current.Spec.SessionAffinity == want.SessionAffinity {
		spec.SessionAffinityConfig = current.Spec.SessionAffinityConfig
	}
	changed := !equality.Semantic.DeepEqual(current.Spec, updated.Spec) ||
		!equality.Semantic.DeepEqual(current.Labels, updated.Labels) ||
		!equality.Semantic.DeepEqual(current.Annotations, updated.Annotations)
	return updated, changed
}
