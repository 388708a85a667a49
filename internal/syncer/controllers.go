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

package syncer

import (
	"context"

	"github.com/kubeocean/kubeocean/internal/app"
	"github.com/kubeocean/kubeocean/internal/compact"
	"github.com/kubeocean/kubeocean/internal/syncer/bottomup/csinode"
	physicalevents "github.com/kubeocean/kubeocean/internal/syncer/bottomup/events"
	"github.com/kubeocean/kubeocean/internal/syncer/bottomup/lease"
	"github.com/kubeocean/kubeocean/internal/syncer/bottomup/node"
	"github.com/kubeocean/kubeocean/internal/syncer/bottomup/podstatus"
	"github.com/kubeocean/kubeocean/internal/syncer/bottomup/policy"
	"github.com/kubeocean/kubeocean/internal/syncer/unbind"
	"github.com/kubeocean/kubeocean/pkg/informers"
)

// nodeLeaseNamespace holds the node Leases the virtual cluster's node
// lifecycle controller reads.
const nodeLeaseNamespace = "kube-node-lease"

// bottomUpControllers builds the physical → virtual controllers, listed
// explicitly, and asks for their informers.
func bottomUpControllers(e *syncerEnv) ([]app.Runnable, error) {
	clusterID := e.binding.Spec.ClusterID
	p := e.process
	v, ph := e.virtualInformers, e.physicalInformers

	bindings := v.Kubeocean(bindingScope(e.binding.Name)).Kubeocean().V1alpha1().ClusterBindings()
	virtualNodes := v.Kube(ownedScope(clusterID, "")).Core().V1().Nodes()
	virtualPods := v.Kube(e.virtualPodScope()).Core().V1().Pods()
	policies := ph.Kubeocean(informers.Scope{}).Kubeocean().V1alpha1().ResourceLeasingPolicies()
	physicalNodes := ph.Kube(physicalNodeScope(e.binding.Spec.NodeSelector)).Core().V1().Nodes()

	nodes, err := node.New(node.Options{
		BindingName: e.binding.Name, ClusterID: clusterID, MountNamespace: e.binding.Spec.MountNamespace,
		VirtualNodesClient: e.virtual.Kube.CoreV1(), VirtualPodsClient: e.virtual.Kube.CoreV1(),
		Bindings: bindings, Policies: policies, PhysicalNodes: physicalNodes,
		ForeignPods:  e.foreignPods(),
		VirtualNodes: virtualNodes, VirtualPods: virtualPods,
		PhysicalAnswers: e.physicalHealth.Answers, PhysicalLastAnswer: e.physicalHealth.LastAnswer, KubeletEndpoint: e.kubeletEndpoint,
		Recorder: p.Recorder, Metrics: p.Metrics, DrainTimeout: e.opts.DrainTimeout,
		StatusUpdateInterval: e.opts.NodeStatusUpdateInterval,

		MaxNodeRemovalFraction: e.opts.MaxNodeRemovalFraction, PhysicalClusterUID: e.physicalClusterUID,
		PhysicalNodesClient: e.physical.Kube.CoreV1(), BindingsClient: e.virtual.Kubeocean.KubeoceanV1alpha1(),
	})
	if err != nil {
		return nil, err
	}
	e.onPhysicalAnswers = append(e.onPhysicalAnswers, nodes.RetryFailing, nodes.EnqueueAll)
	// The nodes say at once that their state is stale (docs/operations.md,
	// "When a cluster does not answer").
	e.onPhysicalSilent = append(e.onPhysicalSilent, nodes.EnqueueAll)
	policyController, err := policy.New(policy.Options{
		BindingName: e.binding.Name, MountNamespace: e.binding.Spec.MountNamespace,
		Client:   e.physical.Kubeocean.KubeoceanV1alpha1(),
		Policies: policies, VirtualNodes: virtualNodes,
		BindingActive: func() bool {
			b, err := bindings.Lister().Get(e.binding.Name)
			return err == nil && b.DeletionTimestamp == nil
		},
		Recorder: e.physicalRecorder, Metrics: p.Metrics,
	})
	if err != nil {
		return nil, err
	}
	leases, err := lease.New(lease.Options{
		ClusterID: clusterID, Client: e.virtual.Kube.CoordinationV1(),
		VirtualNodes: virtualNodes, PhysicalNodes: physicalNodes,
		Leases:             v.Kube(ownedScope(clusterID, nodeLeaseNamespace)).Coordination().V1().Leases(),
		PhysicalAnswers:    e.physicalHealth.Answers,
		PhysicalLastAnswer: e.physicalHealth.LastAnswer,
		OutageRenewalLimit: e.opts.OutageRenewalLimit,
		Metrics:            p.Metrics,
	})
	if err != nil {
		return nil, err
	}
	e.onPhysicalAnswers = append(e.onPhysicalAnswers, leases.RetryFailing, leases.EnqueueAll)
	csiNodes, err := csinode.New(csinode.Options{
		ClusterID: clusterID, VirtualClient: e.virtual.Kube.StorageV1(),
		PhysicalCSINodes: ph.Kube(informers.Scope{}).Storage().V1().CSINodes(),
		VirtualCSINodes:  v.Kube(ownedScope(clusterID, "")).Storage().V1().CSINodes(),
		VirtualNodes:     virtualNodes,
		Recorder:         p.Recorder, Metrics: p.Metrics,
	})
	if err != nil {
		return nil, err
	}
	pods, err := podstatus.New(podstatus.Options{
		ClusterID: clusterID, BindingUID: e.binding.UID, MountNamespace: e.binding.Spec.MountNamespace,
		PhysicalClient: e.physical.Kube.CoreV1(), VirtualClient: compact.LeanWrites(e.virtual.Kube.CoreV1()),
		PhysicalPods: e.physicalPods(),
		VirtualPods:  virtualPods,
		Recorder:     e.physicalRecorder, Metrics: p.Metrics,
	})
	if err != nil {
		return nil, err
	}
	unbinding, err := unbind.New(unbind.Options{
		BindingName: e.binding.Name, ClusterID: clusterID, BindingUID: e.binding.UID, MountNamespace: e.binding.Spec.MountNamespace,
		VirtualKube: e.virtual.Kube, PhysicalKube: e.physical.Kube,
		VirtualKubeocean: e.virtual.Kubeocean, PhysicalKubeocean: e.physical.Kubeocean,
		Bindings: bindings, VirtualNodes: virtualNodes, Policies: policies,
		ManagedPods: e.physicalPods(),
		Recorder:    p.Recorder, Metrics: p.Metrics,
	})
	if err != nil {
		return nil, err
	}
	hostPorts, err := hostPortController(e)
	if err != nil {
		return nil, err
	}
	events, err := physicalevents.New(physicalevents.Options{
		BindingName: e.binding.Name, ClusterID: clusterID, BindingUID: e.binding.UID, MountNamespace: e.binding.Spec.MountNamespace,
		Component: Component, PhysicalClient: e.physical.ListWatchKube.CoreV1(), VirtualClient: e.virtual.Kube.CoreV1(),
		PhysicalPods: e.physicalPods(), VirtualPods: virtualPods, VirtualNodes: virtualNodes,
		Limits: e.opts.Events, Registry: p.Registry, Metrics: p.Metrics,
	})
	if err != nil {
		return nil, err
	}
	workers := e.opts.Workers
	return []app.Runnable{
		hostPorts,
		app.ControllerRunnable(nodes.Controller, e.opts.NodeWorkers),
		app.ControllerRunnable(policyController.Controller, workers),
		app.ControllerRunnable(leases.Controller, e.opts.NodeWorkers),
		app.ControllerRunnable(csiNodes.Controller, workers),
		// One status copy per pod: it must not queue behind a burst of
		// creations.
		app.ControllerRunnable(pods.Controller, e.opts.PodWorkers),
		app.ControllerRunnable(unbinding.Controller, 1),
		// Its own Run: it starts its event informers once the pod and node
		// caches their filters read are filled.
		{Name: physicalevents.Name, Run: func(ctx context.Context) error { return events.Run(ctx, workers) }},
	}, nil
}
