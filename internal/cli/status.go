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

package cli

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
)

// recentWarnings is how many of a binding's latest warnings status shows.
const recentWarnings = 5

func newStatusCommand(virtual *ClusterFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "status [NAME]",
		Short: "Show the bindings, their conditions, virtual nodes with what they lend, synced pods and recent warnings.",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := virtual.clients("virtual")
			if err != nil {
				return err
			}
			name := ""
			if len(args) == 1 {
				name = args[0]
			}
			return status(cmd.Context(), c, name, time.Now(), cmd.OutOrStdout())
		},
	}
}

// bindingView is what status shows of one binding.
type bindingView struct {
	binding  kubeoceanv1alpha1.ClusterBinding
	nodes    []corev1.Node
	pods     map[string][]corev1.Pod // by node name
	warnings []corev1.Event
}

func status(ctx context.Context, virtual *clients, name string, now time.Time, out io.Writer) error {
	var bindings []kubeoceanv1alpha1.ClusterBinding
	if name != "" {
		b, err := virtual.ocean.KubeoceanV1alpha1().ClusterBindings().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		bindings = append(bindings, *b)
	} else {
		list, err := virtual.ocean.KubeoceanV1alpha1().ClusterBindings().List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		bindings = list.Items
	}
	if len(bindings) == 0 {
		fmt.Fprintln(out, "No ClusterBindings.")
		return nil
	}
	pods, err := virtual.kube.CoreV1().Pods("").List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName!="})
	if err != nil {
		return err
	}
	byNode := map[string][]corev1.Pod{}
	for _, p := range pods.Items {
		byNode[p.Spec.NodeName] = append(byNode[p.Spec.NodeName], p)
	}
	views := make([]bindingView, 0, len(bindings))
	for _, b := range bindings {
		v := bindingView{binding: b, pods: byNode}
		nodes, err := virtual.kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: kubeoceanv1alpha1.LabelClusterID + "=" + b.Spec.ClusterID})
		if err != nil {
			return err
		}
		v.nodes = nodes.Items
		events, err := virtual.kube.CoreV1().Events("").List(ctx, metav1.ListOptions{FieldSelector: fields.Set{
			"involvedObject.kind": "ClusterBinding", "involvedObject.name": b.Name, "type": corev1.EventTypeWarning,
		}.AsSelector().String()})
		if err != nil {
			return err
		}
		v.warnings = latest(events.Items, recentWarnings)
		views = append(views, v)
	}
	return printStatus(out, views, now)
}

func printStatus(out io.Writer, views []bindingView, now time.Time) error {
	w := tabwriter.NewWriter(out, 0, 8, 3, ' ', 0)
	fmt.Fprintln(w, "NAME\tCLUSTER-ID\tPHASE\tREASON\tNODES\tCPU\tMEMORY\tPODS\tAGE")
	for _, v := range views {
		cpu, memory := v.lent()
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%d\t%s\t%s\t%d\t%s\n", v.binding.Name, v.binding.Spec.ClusterID, orNone(string(v.binding.Status.Phase)),
			orNone(v.readyReason()), len(v.nodes), cpu.String(), memory.String(), v.podCount(), age(now.Sub(v.binding.CreationTimestamp.Time)))
	}
	if err := w.Flush(); err != nil {
		return err
	}
	for _, v := range views {
		fmt.Fprintf(out, "\nClusterBinding %s\n", v.binding.Name)
		w := tabwriter.NewWriter(out, 0, 8, 3, ' ', 0)
		fmt.Fprintln(w, "  CONDITION\tSTATUS\tREASON\tMESSAGE")
		for _, c := range v.binding.Status.Conditions {
			fmt.Fprintf(w, "  %s\t%s\t%s\t%s\n", c.Type, c.Status, c.Reason, oneLine(c.Message))
		}
		fmt.Fprintln(w, "  NODE\tREADY\tCPU\tMEMORY\tPODS")
		for _, n := range v.nodes {
			fmt.Fprintf(w, "  %s\t%s\t%s\t%s\t%d\n", n.Name, nodeReady(n), n.Status.Allocatable.Cpu(), n.Status.Allocatable.Memory(), len(v.pods[n.Name]))
		}
		if err := w.Flush(); err != nil {
			return err
		}
		fmt.Fprintf(out, "  Pods: %s\n", v.podPhases())
		if len(v.warnings) == 0 {
			fmt.Fprintln(out, "  Recent warnings: none")
			continue
		}
		fmt.Fprintln(out, "  Recent warnings:")
		for _, e := range v.warnings {
			fmt.Fprintf(out, "    %s ago\t%s\t%s\n", age(now.Sub(eventTime(e))), e.Reason, oneLine(e.Message))
		}
	}
	return nil
}

func (v bindingView) readyReason() string {
	if c := meta.FindStatusCondition(v.binding.Status.Conditions, kubeoceanv1alpha1.ClusterBindingConditionReady); c != nil {
		return c.Reason
	}
	return ""
}

// lent sums the allocatable CPU and memory of the binding's virtual nodes.
func (v bindingView) lent() (cpu, memory resource.Quantity) {
	cpu, memory = *resource.NewQuantity(0, resource.DecimalSI), *resource.NewQuantity(0, resource.BinarySI)
	for _, n := range v.nodes {
		cpu.Add(*n.Status.Allocatable.Cpu())
		memory.Add(*n.Status.Allocatable.Memory())
	}
	return cpu, memory
}

func (v bindingView) podCount() int {
	count := 0
	for _, n := range v.nodes {
		count += len(v.pods[n.Name])
	}
	return count
}

// podPhases is "3 Running, 1 Pending", in a stable order.
func (v bindingView) podPhases() string {
	phases := map[corev1.PodPhase]int{}
	for _, n := range v.nodes {
		for _, p := range v.pods[n.Name] {
			phases[p.Status.Phase]++
		}
	}
	if len(phases) == 0 {
		return "none"
	}
	var parts []string
	for _, phase := range []corev1.PodPhase{corev1.PodRunning, corev1.PodPending, corev1.PodSucceeded, corev1.PodFailed, corev1.PodUnknown} {
		if phases[phase] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", phases[phase], phase))
		}
	}
	return strings.Join(parts, ", ")
}

func nodeReady(n corev1.Node) string {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return string(c.Status)
		}
	}
	return "Unknown"
}

func eventTime(e corev1.Event) time.Time {
	for _, t := range []time.Time{e.LastTimestamp.Time, e.EventTime.Time, e.FirstTimestamp.Time} {
		if !t.IsZero() {
			return t
		}
	}
	return e.CreationTimestamp.Time
}

// latest returns the n most recent events, newest first.
func latest(events []corev1.Event, n int) []corev1.Event {
	sort.Slice(events, func(i, j int) bool { return eventTime(events[i]).After(eventTime(events[j])) })
	return events[:min(n, len(events))]
}

func orNone(s string) string {
	if s == "" {
		return "<none>"
	}
	return s
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
