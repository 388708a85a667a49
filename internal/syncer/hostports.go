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
	"github.com/kubeocean/kubeocean/internal/app"
	"github.com/kubeocean/kubeocean/internal/compact"
	"github.com/kubeocean/kubeocean/internal/hostports"
	"github.com/kubeocean/kubeocean/internal/ownership"
	"github.com/kubeocean/kubeocean/internal/syncer/bottomup/portholder"
	"github.com/kubeocean/kubeocean/pkg/informers"
)

// DefaultPlaceholderNamespace is the virtual namespace, Kubeocean's own,
// that holds the host port placeholders of virtual nodes.
const DefaultPlaceholderNamespace = "kubeocean-system"

// hostPorts is the tracker of the host ports bound by the pods that are
// not the binding's own (other bindings' included), fed from the foreign
// pod informer the node controller reads too; made on first use, shared by
// the placeholder and the pod controllers.
func (e *syncerEnv) hostPorts() (*hostports.Tracker, error) {
	if e.hostPortTracker != nil {
		return e.hostPortTracker, nil
	}
	tracker := hostports.NewTracker()
	if err := tracker.Feed(e.foreignPods(), compact.HostPortsOf); err != nil {
		return nil, err
	}
	e.hostPortTracker = tracker
	return tracker, nil
}

// placeholderScope selects the binding's host port placeholders.
func placeholderScope(owner ownership.Owner, namespace string) informers.Scope {
	return informers.Scope{Namespace: namespace, LabelSelector: portholder.Selector(owner)}
}

// hostPortController builds the controller of the host port placeholders.
func hostPortController(e *syncerEnv) (app.Runnable, error) {
	tracker, err := e.hostPorts()
	if err != nil {
		return app.Runnable{}, err
	}
	owner := ownership.Of(e.binding)
	namespace := e.opts.PlaceholderNamespace
	if namespace == "" {
		namespace = DefaultPlaceholderNamespace
	}
	c, err := portholder.New(portholder.Options{
		ClusterID: owner.ClusterID, BindingUID: owner.BindingUID, Namespace: namespace,
		VirtualClient: e.virtual.Kube.CoreV1(),
		VirtualNodes:  e.virtualInformers.Kube(ownedScope(owner.ClusterID, "")).Core().V1().Nodes(),
		Placeholders:  e.virtualInformers.Kube(placeholderScope(owner, namespace)).Core().V1().Pods(),
		Tracker:       tracker, Metrics: e.process.Metrics,
	})
	if err != nil {
		return app.Runnable{}, err
	}
	return app.ControllerRunnable(c.Controller, 1), nil
}
