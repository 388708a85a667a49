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

package preflight

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
	"github.com/kubeocean/kubeocean/internal/hostports"
)

// HostPorts tells the host ports bound on physical nodes by the pods the
// binding does not run, other bindings' included; *hostports.Tracker.
type HostPorts interface {
	Conflicts(node string, want []hostports.Port) []hostports.Port
	OnChange(fn func(node string, freed bool))
	HasSynced() bool
}

// HostPortsFree refuses a pod that asks for a host port bound on its
// physical node by a pod the binding does not run (ReasonHostPortInUse):
// it is not sent until the port is free (see Memory.WaitForPorts).
type HostPortsFree struct {
	// Ports, nil, knows of no port taken.
	Ports HostPorts
}

func (h HostPortsFree) Check(_ context.Context, pod *Pod) *Refusal {
	if message := h.InUse(pod.Virtual, pod.PhysicalNode); message != "" {
		return &Refusal{Reason: kubeoceanv1alpha1.ReasonHostPortInUse, Message: message, PortsOn: pod.PhysicalNode}
	}
	return nil
}

// InUse says which host ports of pod are taken on physicalNode; "" when
// none (or nothing is known of host ports).
func (h HostPortsFree) InUse(pod *corev1.Pod, physicalNode string) string {
	if h.Ports == nil {
		return ""
	}
	taken := h.Ports.Conflicts(physicalNode, hostports.Of(pod))
	if len(taken) == 0 {
		return ""
	}
	names := make([]string, len(taken))
	for i, p := range taken {
		names[i] = p.String()
	}
	return fmt.Sprintf("host ports %s are in use on physical node %s by pods this binding does not run; the pod is created once they are free",
		strings.Join(names, ", "), physicalNode)
}
