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

package main

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
	"github.com/kubeocean/kubeocean/test/stack"
)

// webName is the sample Service's name in the cluster domain.
const webName = stack.AppName + "." + stack.AppNamespace + ".svc.cluster.local."

// dnsBinary is --dns, or kubeocean-dns beside the manager binary (make
// build puts both in bin/).
func (d *demo) dnsBinary() string {
	if d.opts.dns != "" {
		return d.opts.dns
	}
	return filepath.Join(filepath.Dir(d.opts.manager), "kubeocean-dns")
}

// startDNS runs the binding's kubeocean-dns on loopback, as the Deployment
// the syncer keeps in the mount namespace would run it (kwok runs no
// container), and waits until it answers the sample Service's name with
// the ClusterIP of its mirror.
func (d *demo) startDNS(ctx context.Context) error {
	s := d.stack
	var err error
	if d.dns, err = s.StartDNS(ctx, d.dnsBinary(), stack.MountNamespace); err != nil {
		return err
	}
	mirror := kubeoceanv1alpha1.PhysicalName(stack.AppNamespace, stack.AppName)
	return stack.Poll(ctx, webName+" answers the ClusterIP of mirror "+stack.MountNamespace+"/"+mirror, func(ctx context.Context) (string, error) {
		svc, err := s.PhysicalKube.CoreV1().Services(stack.MountNamespace).Get(ctx, mirror, metav1.GetOptions{})
		if err != nil {
			return err.Error(), nil
		}
		a, err := stack.Query(d.dns.Address, webName, dns.TypeA)
		if err != nil {
			return err.Error(), nil
		}
		if !slices.Equal(a.Records, []string{"A " + svc.Spec.ClusterIP}) {
			return fmt.Sprintf("%s, mirror ClusterIP %s", a, svc.Spec.ClusterIP), nil
		}
		d.mirrorIP = svc.Spec.ClusterIP
		return "", nil
	})
}

// showDNS prints the resolver a physical pod of the sample runs with and
// what kubeocean-dns answers for the sample's Service, asked with a DNS
// client as that pod's resolver would.
func (d *demo) showDNS(ctx context.Context) error {
	s := d.stack
	pods, err := s.VirtualKube.CoreV1().Pods(stack.AppNamespace).List(ctx, metav1.ListOptions{LabelSelector: "app=" + stack.AppName})
	if err != nil {
		return err
	}
	if len(pods.Items) == 0 {
		return errors.New("the application has no pods")
	}
	virtual := pods.Items[0]
	physical, err := s.PhysicalKube.CoreV1().Pods(stack.MountNamespace).Get(ctx, virtual.Annotations[kubeoceanv1alpha1.AnnotationPhysicalPodName], metav1.GetOptions{})
	if err != nil {
		return err
	}
	config := physical.Spec.DNSConfig
	if physical.Spec.DNSPolicy != corev1.DNSNone || config == nil || len(config.Nameservers) == 0 || len(config.Searches) == 0 {
		return fmt.Errorf("physical pod %s does not use the binding's DNS: dnsPolicy %s", physical.Name, physical.Spec.DNSPolicy)
	}
	virtualService, err := s.VirtualKube.CoreV1().Services(stack.AppNamespace).Get(ctx, stack.AppName, metav1.GetOptions{})
	if err != nil {
		return err
	}
	fmt.Printf("\nDNS for pods on virtual nodes: %s/%s runs in the physical cluster with nameserver %s (Service\n",
		stack.AppNamespace, virtual.Name, strings.Join(config.Nameservers, " "))
	fmt.Printf("%s/%s, the binding's kubeocean-dns) and search %s.\n", stack.MountNamespace, kubeoceanv1alpha1.DNSName, strings.Join(config.Searches, " "))
	fmt.Printf("kwok runs no container, so the demo runs kubeocean-dns on %s and asks it as that pod's resolver would:\n", d.dns.Address)
	fmt.Printf("  %s → A %s: the ClusterIP of its mirror in the physical cluster (the virtual Service's is %s)\n",
		webName, d.mirrorIP, virtualService.Spec.ClusterIP)
	for _, q := range []struct {
		name, note string
		qtype      uint16
	}{
		{"_http._tcp." + webName, "(its named port)", dns.TypeSRV},
		{kubeoceanv1alpha1.DNSName + "." + stack.MountNamespace + ".svc.cluster.local.", "(a Service of the physical cluster: hidden, never forwarded)", dns.TypeA},
	} {
		a, err := stack.Query(d.dns.Address, q.name, q.qtype)
		if err != nil {
			return err
		}
		fmt.Printf("  %s %s → %s %s\n", q.name, dns.TypeToString[q.qtype], a, q.note)
	}
	return nil
}
