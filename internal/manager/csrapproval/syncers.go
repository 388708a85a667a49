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

package csrapproval

import (
	"net"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apiserver/pkg/authentication/serviceaccount"
	corelisters "k8s.io/client-go/listers/core/v1"

	kubeoceanlisters "github.com/kubeocean/kubeocean/generated/listers/kubeocean/v1alpha1"
)

// InstanceLabel names a syncer pod's binding: the shipped syncer template
// sets it on the pods of each binding's Deployment.
const InstanceLabel = "app.kubernetes.io/instance"

// Deployed are the syncers the manager runs as Deployments: pods in
// Namespace running as ServiceAccount, labelled with their binding.
type Deployed struct {
	Namespace, ServiceAccount string
	Bindings                  kubeoceanlisters.ClusterBindingLister
	// Pods lists the pods of Namespace (at least those with InstanceLabel).
	Pods corelisters.PodLister
}

var _ Syncers = Deployed{}

func (d Deployed) IsSyncer(username string) bool {
	return username == serviceaccount.MakeUsername(d.Namespace, d.ServiceAccount)
}

func (d Deployed) Serves(binding string) bool { return servesBinding(d.Bindings, binding) }

// PodIPs are the IPs of the binding's pods that run as the syncer's
// ServiceAccount and have not finished.
func (d Deployed) PodIPs(binding string) []net.IP {
	pods, err := d.Pods.Pods(d.Namespace).List(labels.SelectorFromSet(labels.Set{InstanceLabel: binding}))
	if err != nil {
		return nil
	}
	var ips []net.IP
	for _, pod := range pods {
		if pod.Spec.ServiceAccountName != d.ServiceAccount || pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
			continue
		}
		for _, podIP := range pod.Status.PodIPs {
			if ip := net.ParseIP(podIP.IP); ip != nil {
				ips = append(ips, ip)
			}
		}
	}
	return ips
}

// InProcess are the syncers the manager runs itself: they ask as the
// manager (Username) and serve at the manager's own address.
type InProcess struct {
	Username string
	Address  net.IP
	Bindings kubeoceanlisters.ClusterBindingLister
}

var _ Syncers = InProcess{}

func (p InProcess) IsSyncer(username string) bool { return username != "" && username == p.Username }
func (p InProcess) Serves(binding string) bool    { return servesBinding(p.Bindings, binding) }
func (p InProcess) PodIPs(string) []net.IP        { return []net.IP{p.Address} }

// servesBinding: the manager runs a syncer for every binding that exists
// (one being deleted keeps its syncer until it has unbound).
func servesBinding(bindings kubeoceanlisters.ClusterBindingLister, name string) bool {
	_, err := bindings.Get(name)
	return err == nil
}

// SlimPod keeps of a syncer pod what PodIPs reads.
func SlimPod(obj any) (any, error) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return obj, nil
	}
	return &corev1.Pod{
		ObjectMeta: pod.ObjectMeta,
		Spec:       corev1.PodSpec{ServiceAccountName: pod.Spec.ServiceAccountName},
		Status:     corev1.PodStatus{Phase: pod.Status.Phase, PodIPs: pod.Status.PodIPs},
	}, nil
}
