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
	corev1listers "k8s.io/client-go/listers/core/v1"

	"github.com/kubeocean/kubeocean/internal/syncer/allowances"
)

// Options are what the checks read; all but MountNamespace are optional.
type Options struct {
	// MountNamespace is the physical namespace the pods go to, and
	// Namespaces reads its Pod Security labels; without Namespaces no pod
	// is judged by Pod Security before it is sent.
	MountNamespace string
	Namespaces     corev1listers.NamespaceLister
	// Claims says which PersistentVolume each claim brings.
	Claims ClaimVolumes
	// SyncDaemonSetPods lets the pods of DaemonSets through.
	SyncDaemonSetPods bool
	// Allowances are what the lender lets the pods use beyond the
	// defaults; nil allows nothing more.
	Allowances *allowances.Source
	// HostPorts tells the host ports taken on physical nodes.
	HostPorts HostPorts
}

// Gate is the pre-flight of the pod controller: its checks in the order
// of the package documentation, and the memory of the pods they refused.
type Gate struct {
	Checks Checks
	Memory *Memory
	// PodSecurity also judges the ephemeral containers added to running
	// pods; HostPorts tells whether a port a pod waits for is free.
	PodSecurity *PodSecurity
	HostPorts   HostPortsFree
}

// New builds the gate.
func New(opts Options) (*Gate, error) {
	podSecurity, err := NewPodSecurity(opts.MountNamespace, opts.Namespaces, opts.Claims)
	if err != nil {
		return nil, err
	}
	hostPorts := HostPortsFree{Ports: opts.HostPorts}
	return &Gate{
		Checks: Checks{
			DaemonSetPods{Sync: opts.SyncDaemonSetPods},
			VolumeSources{Claims: opts.Claims},
			podSecurity,
			AllowedSpec{Allowances: opts.Allowances},
			hostPorts,
		},
		Memory:      NewMemory(),
		PodSecurity: podSecurity,
		HostPorts:   hostPorts,
	}, nil
}
