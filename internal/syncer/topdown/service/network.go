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

package service

import (
	"net"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
	"github.com/kubeocean/kubeocean/internal/ownership"
	"github.com/kubeocean/kubeocean/internal/syncer/topdown/podspec"
)

// VirtualNamespaceIndex indexes the physical Services by the virtual
// namespace of the mirror (AnnotationVirtualNamespace); other Services are
// not indexed.
const VirtualNamespaceIndex = "kubeocean.io/virtual-namespace"

func virtualNamespaceIndex(obj any) ([]string, error) {
	s, ok := obj.(*corev1.Service)
	if !ok {
		return nil, nil
	}
	namespace := s.Annotations[kubeoceanv1alpha1.AnnotationVirtualNamespace]
	if namespace == "" || s.Annotations[kubeoceanv1alpha1.AnnotationVirtualName] == "" {
		return nil, nil
	}
	return []string{namespace}, nil
}

// addVirtualNamespaceIndex adds the index unless the informer has it.
func addVirtualNamespaceIndex(informer cache.SharedIndexInformer) error {
	if _, ok := informer.GetIndexer().GetIndexers()[VirtualNamespaceIndex]; ok {
		return nil
	}
	return informer.AddIndexers(cache.Indexers{VirtualNamespaceIndex: virtualNamespaceIndex})
}

// Network implements podspec.Network from the binding's physical Services.
type Network struct {
	owner          ownership.Owner
	mountNamespace string
	domain         string
	services       cache.Indexer
}

var _ podspec.Network = (*Network)(nil)

// DNSServer implements podspec.Network.
func (n *Network) DNSServer() string {
	obj, ok, err := n.services.GetByKey(n.mountNamespace + "/" + kubeoceanv1alpha1.DNSName)
	if err != nil || !ok {
		return ""
	}
	s, isService := obj.(*corev1.Service)
	if !isService || !n.owner.Owns(s) || net.ParseIP(s.Spec.ClusterIP) == nil {
		return ""
	}
	return s.Spec.ClusterIP
}

// ClusterDomain implements podspec.Network.
func (n *Network) ClusterDomain() string { return n.domain }

// ServiceLinks implements podspec.Network.
func (n *Network) ServiceLinks(namespace string) []podspec.ServiceLink {
	objs, err := n.services.ByIndex(VirtualNamespaceIndex, namespace)
	if err != nil {
		return nil
	}
	links := make([]podspec.ServiceLink, 0, len(objs))
	for _, obj := range objs {
		s, ok := obj.(*corev1.Service)
		if !ok || !n.owner.Owns(s) || s.DeletionTimestamp != nil || net.ParseIP(s.Spec.ClusterIP) == nil {
			continue
		}
		links = append(links, podspec.ServiceLink{
			Name: s.Annotations[kubeoceanv1alpha1.AnnotationVirtualName], ClusterIP: s.Spec.ClusterIP, Ports: s.Spec.Ports,
		})
	}
	return links
}
