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

package portholder

import (
	"context"
	"fmt"
	"hash/fnv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
	"github.com/kubeocean/kubeocean/internal/hostports"
	"github.com/kubeocean/kubeocean/pkg/controller"
)

// placeholderImage names what the placeholder would run, were it ever run;
// nothing pulls it.
const placeholderImage = "kubeocean.io/host-ports-placeholder"

// reconcile keeps exactly one placeholder on the virtual node, carrying the
// host ports in use on its physical node, while the node is lent and not
// being drained and some port is in use; none otherwise.
func (c *Controller) reconcile(ctx context.Context, nodeName string) (controller.Result, error) {
	var ports []hostports.Port
	node, err := c.virtualNodes.Get(nodeName)
	switch {
	case apierrors.IsNotFound(err):
		node = nil
	case err != nil:
		return controller.Result{}, err
	}
	if node != nil && c.ownsNode(node) && !deleting(node) {
		if physical := kubeoceanv1alpha1.PhysicalNodeNameOf(node); physical != "" {
			ports = c.tracker.Used(physical)
		}
	}
	existing, err := c.placeholders.ByIndex(byNodeName, nodeName)
	if err != nil {
		return controller.Result{}, err
	}
	want := ""
	if len(ports) > 0 {
		want = placeholderName(nodeName, ports)
	}
	found := false
	var stale []*corev1.Pod
	for _, obj := range existing {
		pod, ok := obj.(*corev1.Pod)
		if !ok || !c.isPlaceholder(pod) {
			continue
		}
		if pod.Name == want && pod.DeletionTimestamp == nil {
			found = true
			continue
		}
		stale = append(stale, pod)
	}
	logger := klog.FromContext(ctx).WithValues("node", klog.KRef("", nodeName))
	if want != "" && !found {
		// The new one first: the ports never look free in between.
		pod := c.placeholder(node, want, ports)
		_, err := c.client.Pods(c.namespace).Create(ctx, pod, metav1.CreateOptions{})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return controller.Result{}, fmt.Errorf("creating host port placeholder %s/%s: %w", c.namespace, want, err)
		}
		logger.V(2).Info("Created host port placeholder", "pod", klog.KObj(pod), "ports", len(ports))
	}
	for _, pod := range stale {
		if pod.DeletionTimestamp != nil {
			continue
		}
		// Never run, so nothing to wait for: gone at once.
		err := c.client.Pods(pod.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{
			GracePeriodSeconds: ptr.To[int64](0),
			Preconditions:      &metav1.Preconditions{UID: &pod.UID},
		})
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			return controller.Result{}, fmt.Errorf("deleting host port placeholder %s/%s: %w", pod.Namespace, pod.Name, err)
		}
		logger.V(2).Info("Deleted host port placeholder", "pod", klog.KObj(pod))
	}
	return controller.Result{}, nil
}

// placeholderName names the placeholder of node for ports: the node's name
// and a hash of both, so a change of ports makes a new name.
func placeholderName(node string, ports []hostports.Port) string {
	h := fnv.New64a()
	h.Write([]byte(node))
	for _, p := range ports {
		fmt.Fprintf(h, "\x00%s", p)
	}
	prefix := strings.TrimRight(node[:min(len(node), 40)], "-.")
	return fmt.Sprintf("%s-%016x", prefix, h.Sum64())
}

// placeholder is the pod holding ports on node.
func (c *Controller) placeholder(node *corev1.Node, name string, ports []hostports.Port) *corev1.Pod {
	labels := c.owner.Stamp(map[string]string{hostports.LabelPlaceholder: "true"})
	containerPorts := make([]corev1.ContainerPort, 0, len(ports))
	for _, p := range ports {
		hostIP := p.IP
		if hostIP == "0.0.0.0" {
			hostIP = ""
		}
		containerPorts = append(containerPorts, corev1.ContainerPort{ContainerPort: p.Port, HostPort: p.Port, HostIP: hostIP, Protocol: p.Protocol})
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: c.namespace,
			Name:      name,
			Labels:    labels,
			Annotations: map[string]string{
				kubeoceanv1alpha1.AnnotationPhysicalNodeName: kubeoceanv1alpha1.PhysicalNodeNameOf(node),
			},
			// Goes with its virtual node.
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: node.Name, UID: node.UID}},
		},
		Spec: corev1.PodSpec{
			NodeName:                      node.Name,
			Tolerations:                   []corev1.Toleration{{Operator: corev1.TolerationOpExists}},
			AutomountServiceAccountToken:  ptr.To(false),
			EnableServiceLinks:            ptr.To(false),
			TerminationGracePeriodSeconds: ptr.To[int64](0),
			Containers: []corev1.Container{{
				Name:  "host-ports",
				Image: placeholderImage,
				Ports: containerPorts,
			}},
		},
	}
}
