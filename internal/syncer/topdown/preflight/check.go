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

	corev1 "k8s.io/api/core/v1"
)

// Pod is a virtual pod about to be sent to the physical cluster, as the
// checks see it.
type Pod struct {
	Virtual *corev1.Pod
	// PhysicalNode is the physical node behind the pod's virtual node.
	PhysicalNode string
	// Physical builds the physical pod as it would be sent, but for the
	// names of the copies, which are not resolved yet: the checks read the
	// spec and the annotations. Called only by the checks that need it.
	Physical func() *corev1.Pod

	// claims is what the pod's claims bring, read once for the checks
	// that look at it (see claimsOf).
	claims *claimedVolumes
}

// Refusal says why a pod is not sent: the reason and message of
// ConditionPhysicalPodCreated False and of the Warning event.
type Refusal struct {
	Reason, Message string
	// Again: the check costs nothing and writes only a change, so the pod
	// is not remembered as refused; every pass judges it again.
	Again bool
	// PortsOn is the physical node on which a freed host port must send the
	// pod again (see Memory.WaitForPorts); "" for other refusals.
	PortsOn string
}

// Check is one reason not to send a pod. It only reads: nothing of the pod
// is made before every check has passed.
type Check interface {
	// Check returns why pod must not be sent, or nil.
	Check(ctx context.Context, pod *Pod) *Refusal
}

// Checks are run in order; the first refusal is the pod's.
type Checks []Check

// First is the refusal of the first check that refuses pod, or nil.
func (cs Checks) First(ctx context.Context, pod *Pod) *Refusal {
	for _, c := range cs {
		if r := c.Check(ctx, pod); r != nil {
			return r
		}
	}
	return nil
}
