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
	"io"
	"text/tabwriter"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
)

// WriteSummary prints what a person wants to see once the application
// runs: the virtual nodes with what they lend, the virtual pods beside
// their physical twins, and the binding's status.
func (s *Stack) WriteSummary(ctx context.Context, w io.Writer) error {
	nodes, err := s.virtualNodes(ctx)
	if err != nil {
		return err
	}
	twins, err := s.AppPods(ctx)
	if err != nil {
		return err
	}
	binding, err := s.VirtualOcean.KubeoceanV1alpha1().ClusterBindings().Get(ctx, BindingName, metav1.GetOptions{})
	if err != nil {
		return err
	}

	fmt.Fprintf(w, "Virtual nodes (virtual cluster), lent by ClusterBinding %s:\n", BindingName)
	table := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(table, "  NAME\tREADY\tCPU\tMEMORY\tPODS\tPHYSICAL NODE\tTAINTS")
	for _, node := range nodes {
		a := node.Status.Allocatable
		fmt.Fprintf(table, "  %s\t%t\t%s\t%s\t%s\t%s\t%s\n", node.Name, nodeReady(&node),
			a.Cpu(), a.Memory(), a.Pods(), kubeoceanv1alpha1.PhysicalNodeNameOf(&node), taints(node.Spec.Taints))
	}
	if err := table.Flush(); err != nil {
		return err
	}

	fmt.Fprintf(w, "\nPods of %s/%s: virtual (virtual cluster) and physical twin (physical cluster):\n", AppNamespace, AppName)
	table = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(table, "  VIRTUAL POD\tNODE\tPHASE\tPHYSICAL POD\tPHYSICAL NODE\tPHASE")
	for _, twin := range twins {
		physical, physicalNode, physicalPhase := "-", "-", "-"
		if p := twin.Physical; p != nil {
			physical, physicalNode, physicalPhase = p.Namespace+"/"+p.Name, p.Spec.NodeName, string(p.Status.Phase)
		}
		fmt.Fprintf(table, "  %s/%s\t%s\t%s\t%s\t%s\t%s\n", twin.Virtual.Namespace, twin.Virtual.Name, twin.Virtual.Spec.NodeName,
			twin.Virtual.Status.Phase, physical, physicalNode, physicalPhase)
	}
	if err := table.Flush(); err != nil {
		return err
	}

	fmt.Fprintf(w, "\nClusterBinding %s: phase %s\n", binding.Name, binding.Status.Phase)
	for _, c := range binding.Status.Conditions {
		fmt.Fprintf(w, "  %s=%s  %s: %s\n", c.Type, c.Status, c.Reason, c.Message)
	}
	return nil
}

func taints(taints []corev1.Taint) string {
	if len(taints) == 0 {
		return "-"
	}
	out := ""
	for i, t := range taints {
		if i > 0 {
			out += ","
		}
		out += t.ToString()
	}
	return out
}
