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
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
	"github.com/kubeocean/kubeocean/internal/app"
	"github.com/kubeocean/kubeocean/internal/ownership"
	"github.com/kubeocean/kubeocean/internal/syncer/topdown/service"
	"github.com/kubeocean/kubeocean/pkg/informers"
)

// The scopes of the network side's informers. Virtual Services and
// EndpointSlices are read cluster-wide (which namespaces are in reach
// changes with the pods and the binding; the EndpointSlice controller's
// slices tell where a Service's ready endpoints run, which the syncer's own
// pod cache cannot: it keeps only the binding's pods). The slices are kept
// only in what the mirrors read (compactEndpointSlice). The virtual nodes of
// every binding are kept only as their names and binding labels. The
// physical ones are the binding's own in its mount namespace.

func virtualEndpointSliceScope() informers.Scope {
	return informers.Scope{Slim: compactEndpointSlice, SlimName: "endpoints"}
}

func kubeoceanNodeScope() informers.Scope {
	return informers.Scope{LabelSelector: service.KubeoceanNodeSelector, Slim: nodeBinding, SlimName: "node-binding"}
}

// compactEndpointSlice drops what the mirrors never read of a virtual
// EndpointSlice: its annotations, and its endpoints' zones, hints and
// deprecated topology.
func compactEndpointSlice(obj any) (any, error) {
	s, ok := obj.(*discoveryv1.EndpointSlice)
	if !ok {
		return obj, nil
	}
	s.Annotations = nil
	for i := range s.Endpoints {
		e := &s.Endpoints[i]
		e.Zone, e.Hints, e.DeprecatedTopology = nil, nil, nil
	}
	return s, nil
}

// nodeBinding keeps of a virtual node its name and the labels that say
// whose it is.
func nodeBinding(obj any) (any, error) {
	n, ok := obj.(*corev1.Node)
	if !ok {
		return obj, nil
	}
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{
		Name: n.Name, UID: n.UID, ResourceVersion: n.ResourceVersion,
		Labels: map[string]string{
			kubeoceanv1alpha1.LabelClusterBinding: n.Labels[kubeoceanv1alpha1.LabelClusterBinding],
			kubeoceanv1alpha1.LabelClusterID:      n.Labels[kubeoceanv1alpha1.LabelClusterID],
		},
	}}, nil
}

func physicalOwnedScope(owner ownership.Owner, mountNamespace string) informers.Scope {
	return informers.Scope{Namespace: mountNamespace, LabelSelector: owner.Selector()}
}

func physicalEndpointSliceScope(owner ownership.Owner, mountNamespace string) informers.Scope {
	return informers.Scope{Namespace: mountNamespace, LabelSelector: owner.Selector() + "," + service.PhysicalEndpointSliceSelector}
}

// networkControllers builds the Service mirrors and the binding's DNS
// server (docs/networking.md), and the view of them the pod controller
// gives pods.
func (e *syncerEnv) networkControllers() (*service.Network, []app.Runnable, error) {
	owner, mount := ownership.Of(e.binding), e.binding.Spec.MountNamespace
	v, ph := e.virtualInformers, e.physicalInformers
	domain, image := e.opts.ClusterDomain, e.opts.DNSImage
	if domain == "" {
		domain = service.DefaultClusterDomain
	}
	if image == "" {
		image = DefaultDNSImage
	}
	physical := ph.Kube(physicalOwnedScope(owner, mount))
	opts := service.Options{
		BindingName: e.binding.Name, ClusterID: owner.ClusterID, BindingUID: owner.BindingUID, MountNamespace: mount,
		PhysicalClient: e.physical.Kube, BindingStatus: e.virtual.Kubeocean.KubeoceanV1alpha1(),
		Bindings:               v.Kubeocean(bindingScope(e.binding.Name)).Kubeocean().V1alpha1().ClusterBindings(),
		VirtualServices:        v.Kube(informers.Scope{}).Core().V1().Services(),
		VirtualEndpointSlices:  v.Kube(virtualEndpointSliceScope()).Discovery().V1().EndpointSlices(),
		VirtualPods:            v.Kube(e.virtualPodScope()).Core().V1().Pods(),
		VirtualNodes:           v.Kube(ownedScope(owner.ClusterID, "")).Core().V1().Nodes(),
		KubeoceanNodes:         v.Kube(kubeoceanNodeScope()).Core().V1().Nodes(),
		PhysicalServices:       physical.Core().V1().Services(),
		PhysicalEndpointSlices: ph.Kube(physicalEndpointSliceScope(owner, mount)).Discovery().V1().EndpointSlices(),
		PhysicalDeployments:    physical.Apps().V1().Deployments(),
		DNS:                    service.DNSOptions{Image: image, ClusterDomain: domain, KubernetesAddress: e.opts.VirtualAPIServer},
		Recorder:               e.process.Recorder, Metrics: e.process.Metrics,
	}
	mirrors, err := service.New(opts)
	if err != nil {
		return nil, nil, err
	}
	dns, err := service.NewDNS(opts)
	if err != nil {
		return nil, nil, err
	}
	network, err := service.NewNetwork(opts)
	if err != nil {
		return nil, nil, err
	}
	e.onPhysicalAnswers = append(e.onPhysicalAnswers, mirrors.RetryFailing, dns.RetryFailing)
	return network, []app.Runnable{
		app.ControllerRunnable(mirrors.Controller, e.opts.Workers),
		app.ControllerRunnable(dns.Controller, 1),
	}, nil
}
