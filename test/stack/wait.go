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

package stack

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
)

// WaitBindingCondition waits until the sample binding has a condition of
// type with status.
func (s *Stack) WaitBindingCondition(ctx context.Context, conditionType string, status metav1.ConditionStatus) error {
	return Poll(ctx, fmt.Sprintf("ClusterBinding %s has %s=%s", BindingName, conditionType, status), func(ctx context.Context) (string, error) {
		binding, err := s.VirtualOcean.KubeoceanV1alpha1().ClusterBindings().Get(ctx, BindingName, metav1.GetOptions{})
		if err != nil {
			return err.Error(), nil
		}
		if meta.IsStatusConditionPresentAndEqual(binding.Status.Conditions, conditionType, status) {
			return "", nil
		}
		return describeConditions(binding.Status.Conditions), nil
	})
}

// WaitVirtualNodesReady waits until the binding has want virtual nodes,
// all Ready.
func (s *Stack) WaitVirtualNodesReady(ctx context.Context, want int) error {
	return Poll(ctx, fmt.Sprintf("%d virtual nodes are Ready", want), func(ctx context.Context) (string, error) {
		nodes, err := s.virtualNodes(ctx)
		if err != nil {
			return err.Error(), nil
		}
		ready := 0
		for _, node := range nodes {
			if nodeReady(&node) {
				ready++
			}
		}
		if len(nodes) == want && ready == want {
			return "", nil
		}
		return fmt.Sprintf("%d virtual nodes, %d Ready", len(nodes), ready), nil
	})
}

// WaitAppRunning waits until every replica of the sample application runs
// on a virtual node and its physical twin runs in the mount namespace.
func (s *Stack) WaitAppRunning(ctx context.Context) error {
	return Poll(ctx, fmt.Sprintf("the %d pods of %s/%s run in both clusters", AppReplicas, AppNamespace, AppName), func(ctx context.Context) (string, error) {
		twins, err := s.AppPods(ctx)
		if err != nil {
			return err.Error(), nil
		}
		var waiting []string
		for _, twin := range twins {
			if state := twin.waitingFor(); state != "" {
				waiting = append(waiting, twin.Virtual.Name+": "+state)
			}
		}
		if len(twins) == AppReplicas && len(waiting) == 0 {
			return "", nil
		}
		return fmt.Sprintf("%d/%d pods; %s", len(twins), AppReplicas, strings.Join(waiting, "; ")), nil
	})
}

// Twin is a virtual pod of the sample application and its physical pod.
type Twin struct {
	Virtual corev1.Pod
	// Physical is nil until the syncer has created it.
	Physical *corev1.Pod
}

func (t Twin) waitingFor() string {
	switch {
	case t.Virtual.Spec.NodeName == "":
		return "not scheduled"
	case t.Physical == nil:
		return "no physical pod yet"
	case t.Physical.Status.Phase != corev1.PodRunning:
		return "physical pod " + string(t.Physical.Status.Phase)
	case t.Virtual.Status.Phase != corev1.PodRunning:
		return "virtual pod " + string(t.Virtual.Status.Phase)
	}
	return ""
}

// AppPods lists the sample application's virtual pods with their physical
// twins, found through the mapping annotations.
func (s *Stack) AppPods(ctx context.Context) ([]Twin, error) {
	pods, err := s.VirtualKube.CoreV1().Pods(AppNamespace).List(ctx, metav1.ListOptions{LabelSelector: "app=" + AppName})
	if err != nil {
		return nil, err
	}
	twins := make([]Twin, 0, len(pods.Items))
	for _, pod := range pods.Items {
		twin := Twin{Virtual: pod}
		namespace := pod.Annotations[kubeoceanv1alpha1.AnnotationPhysicalPodNamespace]
		name := pod.Annotations[kubeoceanv1alpha1.AnnotationPhysicalPodName]
		if namespace != "" && name != "" {
			physical, err := s.PhysicalKube.CoreV1().Pods(namespace).Get(ctx, name, metav1.GetOptions{})
			switch {
			case err == nil:
				twin.Physical = physical
			case !apierrors.IsNotFound(err):
				return nil, err
			}
		}
		twins = append(twins, twin)
	}
	return twins, nil
}

// virtualNodes lists the sample binding's virtual nodes.
func (s *Stack) virtualNodes(ctx context.Context) ([]corev1.Node, error) {
	nodes, err := s.VirtualKube.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: kubeoceanv1alpha1.LabelClusterID + "=" + ClusterID})
	if err != nil {
		return nil, err
	}
	return nodes.Items, nil
}

func nodeReady(node *corev1.Node) bool {
	for _, c := range node.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func describeConditions(conditions []metav1.Condition) string {
	if len(conditions) == 0 {
		return "no conditions yet"
	}
	parts := make([]string, 0, len(conditions))
	for _, c := range conditions {
		parts = append(parts, fmt.Sprintf("%s=%s (%s: %s)", c.Type, c.Status, c.Reason, c.Message))
	}
	return strings.Join(parts, "; ")
}
