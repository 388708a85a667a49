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

package dns

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
	"github.com/kubeocean/kubeocean/internal/app"
	"github.com/kubeocean/kubeocean/internal/serving"
	"github.com/kubeocean/kubeocean/pkg/informers"
)

// Setup is kubeocean-dns's part of app.Run: the server with its informers,
// and a readiness check that fails until they have synced.
func Setup(o *Options) app.Setup {
	return func(_ context.Context, p *app.Process) ([]app.Runnable, error) {
		server, runnables, err := Assemble(p.Kube, o, p.Registry)
		if err != nil {
			return nil, err
		}
		p.Health.AddReadyz(serving.Check{Name: "dns-cache-synced", Fn: func(*http.Request) error {
			if !server.index.Synced() {
				return errors.New("the Service and EndpointSlice caches have not synced")
			}
			return nil
		}})
		return runnables, nil
	}
}

// Assemble builds a listening server whose index follows the binding's
// mirrors through kube, and what runs it: the informers (which mark the
// index synced once they have listed) and the DNS server. Run them with
// app.RunAll. reg may be nil.
func Assemble(kube kubernetes.Interface, o *Options, reg prometheus.Registerer) (*Server, []app.Runnable, error) {
	upstreams, err := o.upstreams()
	if err != nil {
		return nil, nil, err
	}
	var metrics *Metrics
	if reg != nil {
		metrics = NewMetrics(reg)
	}
	index := NewIndex(o.BindingUID, o.ClusterDomain, metrics)
	// The server's list and watch see only this binding's objects of its
	// namespace; the index checks the labels again, as a watch of a fake
	// client does not filter.
	selector := labels.Set{
		kubeoceanv1alpha1.LabelManagedBy:  kubeoceanv1alpha1.ManagedByKubeocean,
		kubeoceanv1alpha1.LabelBindingUID: o.BindingUID,
	}.String()
	cluster := informers.NewCluster("physical", kube, nil, 0)
	factory := cluster.Kube(informers.Scope{Namespace: o.Namespace, LabelSelector: selector})
	if _, err := factory.Core().V1().Services().Informer().AddEventHandler(index.ServiceHandler()); err != nil {
		return nil, nil, err
	}
	if _, err := factory.Discovery().V1().EndpointSlices().Informer().AddEventHandler(index.SliceHandler()); err != nil {
		return nil, nil, err
	}
	server := NewServer(Config{
		Domain: o.ClusterDomain, Index: index, Upstreams: upstreams, UpstreamTimeout: o.UpstreamTimeout,
		KubernetesAddress: o.kubernetesAddress(), Metrics: metrics,
	})
	if err := server.Listen(o.ListenAddress); err != nil {
		return nil, nil, fmt.Errorf("listening on %s: %w", o.ListenAddress, err)
	}
	syncInformers := func(ctx context.Context) error {
		cluster.Start(ctx)
		defer cluster.Shutdown()
		if err := cluster.WaitForCacheSync(ctx); err != nil {
			if ctx.Err() != nil {
				return nil // stopped before the caches synced
			}
			return err
		}
		index.MarkSynced()
		klog.FromContext(ctx).Info("Caches synced: answering the cluster domain", "namespace", o.Namespace, "bindingUID", o.BindingUID)
		<-ctx.Done()
		return nil
	}
	return server, []app.Runnable{{Name: "dns-informers", Run: syncInformers}, {Name: "dns-server", Run: server.Serve}}, nil
}

// Ready reports whether the server answers the cluster domain (its caches
// have synced).
func (s *Server) Ready() bool { return s.index.Synced() }
