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
	"net"
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
	"github.com/kubeocean/kubeocean/internal/ownership"
)

// DNS server settings of DNSOptions.
const (
	// DefaultClusterDomain is the cluster domain of --cluster-domain.
	DefaultClusterDomain = "cluster.local"
	dnsReplicas          = 2
	dnsPort              = 5353
	metricsPort          = 8080
	healthPort           = 8081
)

// DNSOptions are what the DNS server's objects are made from.
type DNSOptions struct {
	// Image is the syncer's image, which ships kubeocean-dns.
	Image string
	// ClusterDomain is the virtual cluster's DNS domain.
	ClusterDomain string
	// KubernetesAddress is where pods reach the virtual apiserver (the
	// host of --virtual-apiserver-address), which kubernetes.default.svc
	// answers; "" when it is not set.
	KubernetesAddress string
}

// kubernetesHost is the host of a host:port ("" for "").
func kubernetesHost(address string) string {
	if host, _, err := net.SplitHostPort(address); err == nil {
		return host
	}
	return address
}

// dnsPodLabels select the DNS server's pods. They carry no identity labels:
// pods with the binding's identity are the binding's workloads, which the
// pod controllers own.
func dnsPodLabels(owner ownership.Owner) map[string]string {
	return map[string]string{
		"app.kubernetes.io/name":     kubeoceanv1alpha1.DNSName,
		"app.kubernetes.io/instance": string(owner.BindingUID),
	}
}

func dnsMeta(owner ownership.Owner, mountNamespace string) metav1.ObjectMeta {
	labels := owner.Stamp(map[string]string{"app.kubernetes.io/name": kubeoceanv1alpha1.DNSName})
	return metav1.ObjectMeta{Namespace: mountNamespace, Name: kubeoceanv1alpha1.DNSName, Labels: labels}
}

// dnsService is the Service whose ClusterIP the binding's pods use as
// their nameserver.
func dnsService(owner ownership.Owner, mountNamespace string) *corev1.Service {
	return &corev1.Service{
		ObjectMeta: dnsMeta(owner, mountNamespace),
		Spec: corev1.ServiceSpec{
			Type:     corev1.ServiceTypeClusterIP,
			Selector: dnsPodLabels(owner),
			Ports: []corev1.ServicePort{
				{Name: "dns", Protocol: corev1.ProtocolUDP, Port: 53, TargetPort: intstr.FromString("dns")},
				{Name: "dns-tcp", Protocol: corev1.ProtocolTCP, Port: 53, TargetPort: intstr.FromString("dns-tcp")},
			},
		},
	}
}

func dnsServiceAccount(owner ownership.Owner, mountNamespace string) *corev1.ServiceAccount {
	return &corev1.ServiceAccount{ObjectMeta: dnsMeta(owner, mountNamespace)}
}

// dnsRole lets the DNS server read what it answers from, in the mount
// namespace only; the syncer holds these rights itself, so it may grant
// them without escalate. Its informers only list and watch (test/e2e's
// TestDNS audits it).
func dnsRole(owner ownership.Owner, mountNamespace string) *rbacv1.Role {
	read := []string{"list", "watch"}
	return &rbacv1.Role{
		ObjectMeta: dnsMeta(owner, mountNamespace),
		Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{""}, Resources: []string{"services"}, Verbs: read},
			{APIGroups: []string{"discovery.k8s.io"}, Resources: []string{"endpointslices"}, Verbs: read},
		},
	}
}

func dnsRoleBinding(owner ownership.Owner, mountNamespace string) *rbacv1.RoleBinding {
	return &rbacv1.RoleBinding{
		ObjectMeta: dnsMeta(owner, mountNamespace),
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: kubeoceanv1alpha1.DNSName},
		Subjects: []rbacv1.Subject{{
			Kind: rbacv1.ServiceAccountKind, Name: kubeoceanv1alpha1.DNSName, Namespace: mountNamespace,
		}},
	}
}

func dnsPDB(owner ownership.Owner, mountNamespace string) *policyv1.PodDisruptionBudget {
	return &policyv1.PodDisruptionBudget{
		ObjectMeta: dnsMeta(owner, mountNamespace),
		Spec: policyv1.PodDisruptionBudgetSpec{
			MinAvailable: ptr.To(intstr.FromInt32(1)),
			Selector:     &metav1.LabelSelector{MatchLabels: dnsPodLabels(owner)},
		},
	}
}

// dnsDeployment runs kubeocean-dns, restricted as the Pod Security
// Standards' restricted level asks, whatever level the mount namespace
// enforces.
func dnsDeployment(owner ownership.Owner, mountNamespace string, opts DNSOptions) *appsv1.Deployment {
	args := []string{
		"--namespace=" + mountNamespace,
		"--binding-uid=" + string(owner.BindingUID),
		"--cluster-domain=" + opts.ClusterDomain,
		"--listen-address=0.0.0.0:" + strconv.Itoa(dnsPort),
		"--metrics-bind-address=:" + strconv.Itoa(metricsPort),
		"--health-probe-bind-address=:" + strconv.Itoa(healthPort),
	}
	if host := kubernetesHost(opts.KubernetesAddress); host != "" {
		args = append(args, "--kubernetes-address="+host)
	}
	probe := func(path string) *corev1.Probe {
		return &corev1.Probe{
			ProbeHandler:  corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: path, Port: intstr.FromString("health")}},
			PeriodSeconds: 10, TimeoutSeconds: 2, FailureThreshold: 3,
		}
	}
	resources := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("50m"), corev1.ResourceMemory: resource.MustParse("64Mi")}
	container := corev1.Container{
		Name: kubeoceanv1alpha1.DNSName, Image: opts.Image, Command: []string{"kubeocean-dns"}, Args: args,
		Ports: []corev1.ContainerPort{
			{Name: "dns", ContainerPort: dnsPort, Protocol: corev1.ProtocolUDP},
			{Name: "dns-tcp", ContainerPort: dnsPort, Protocol: corev1.ProtocolTCP},
			{Name: "metrics", ContainerPort: metricsPort, Protocol: corev1.ProtocolTCP},
			{Name: "health", ContainerPort: healthPort, Protocol: corev1.ProtocolTCP},
		},
		ReadinessProbe: probe("/readyz"), LivenessProbe: probe("/healthz"),
		Resources: corev1.ResourceRequirements{Requests: resources, Limits: resources},
		SecurityContext: &corev1.SecurityContext{
			AllowPrivilegeEscalation: ptr.To(false), ReadOnlyRootFilesystem: ptr.To(true), RunAsNonRoot: ptr.To(true),
			Capabilities:   &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
			SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
		},
	}
	return &appsv1.Deployment{
		ObjectMeta: dnsMeta(owner, mountNamespace),
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](dnsReplicas),
			Selector: &metav1.LabelSelector{MatchLabels: dnsPodLabels(owner)},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: dnsPodLabels(owner)},
				Spec: corev1.PodSpec{
					ServiceAccountName: kubeoceanv1alpha1.DNSName,
					// The physical cluster's DNS resolves what is forwarded.
					DNSPolicy:  corev1.DNSDefault,
					Containers: []corev1.Container{container},
					// Spread the replicas so that one node going takes
					// no more than one.
					TopologySpreadConstraints: []corev1.TopologySpreadConstraint{{
						MaxSkew: 1, TopologyKey: corev1.LabelHostname, WhenUnsatisfiable: corev1.ScheduleAnyway,
						LabelSelector: &metav1.LabelSelector{MatchLabels: dnsPodLabels(owner)},
					}},
				},
			},
		},
	}
}
