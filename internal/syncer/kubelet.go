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
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/client-go/rest"

	"github.com/kubeocean/kubeocean/internal/app"
	"github.com/kubeocean/kubeocean/internal/compact"
	"github.com/kubeocean/kubeocean/internal/syncer/kubeletapi"
)

// DefaultKubeletPortRange holds the ports of the virtual nodes' kubelet
// API listeners: one port per virtual node of the process.
const DefaultKubeletPortRange = "10250-11249"

// Sources of the kubelet API's serving certificate
// (--kubelet-serving-cert-source).
const (
	// CertSourceFiles reads --kubelet-tls-cert-file and
	// --kubelet-tls-private-key-file, reloaded when they change.
	CertSourceFiles = "files"
	// CertSourceCSR asks the virtual cluster through a
	// CertificateSigningRequest that the manager approves.
	CertSourceCSR = "csr"
	// CertSourceSelfSigned makes a self-signed certificate.
	CertSourceSelfSigned = "self-signed"
)

// KubeletOptions configure the kubelet API the syncer serves for its
// virtual nodes (kubectl logs, exec, attach, port-forward, node stats).
type KubeletOptions struct {
	// Address is what virtual nodes advertise (an IP or a DNS name that
	// the virtual apiserver can reach); "" turns the kubelet API off and
	// virtual nodes copy their physical node's addresses.
	Address string
	// BindAddress is the host the listeners bind; "" binds all.
	BindAddress string
	// PortRange is "first-last", the ports of the listeners.
	PortRange string
	// CertSource is where the serving certificate comes from: one of
	// CertSourceFiles, CertSourceCSR, CertSourceSelfSigned; "" is files
	// when CertFile is set, else self-signed.
	CertSource string
	// CertFile and KeyFile hold the serving certificate of CertSourceFiles
	// (reloaded when they change).
	CertFile, KeyFile string
	// NodeStats serves stats/summary and metrics/resource; it needs
	// nodes/proxy in the physical cluster.
	NodeStats bool
	// StreamIdleTimeout closes exec, attach and port-forward streams that
	// carried no byte for that long; 0 is
	// kubeletapi.DefaultStreamIdleTimeout.
	StreamIdleTimeout time.Duration

	// ports is shared by every copy of the options, so that the syncers of
	// one process never give two nodes the same port. Set by Complete.
	ports *kubeletapi.PortAllocator
}

// NewKubeletOptions returns the defaults.
func NewKubeletOptions() KubeletOptions {
	return KubeletOptions{PortRange: DefaultKubeletPortRange, NodeStats: true, StreamIdleTimeout: kubeletapi.DefaultStreamIdleTimeout}
}

// AddFlags registers the kubelet API flags on fs.
func (o *KubeletOptions) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.Address, "kubelet-address", o.Address,
		"Address (IP or DNS name) that virtual nodes advertise for their kubelet API, served by this process; the virtual apiserver must reach it. Empty turns the kubelet API off.")
	fs.StringVar(&o.BindAddress, "kubelet-bind-address", o.BindAddress, "Host the kubelet API listeners bind; empty binds all addresses.")
	fs.StringVar(&o.PortRange, "kubelet-port-range", o.PortRange, "Ports (first-last) of the kubelet API listeners, one per virtual node.")
	fs.StringVar(&o.CertSource, "kubelet-serving-cert-source", o.CertSource,
		`Where the kubelet API's serving certificate comes from: "files" (--kubelet-tls-cert-file, e.g. a mounted Secret), "csr" (a CertificateSigningRequest of signer kubernetes.io/kubelet-serving in the virtual cluster, approved by the manager and renewed before it expires; --kubelet-address must be an IP) or "self-signed". Default: files when --kubelet-tls-cert-file is set, else self-signed.`)
	fs.StringVar(&o.CertFile, "kubelet-tls-cert-file", o.CertFile, "Serving certificate of the kubelet API (e.g. tls.crt of a mounted Secret), reloaded when it changes.")
	fs.StringVar(&o.KeyFile, "kubelet-tls-private-key-file", o.KeyFile, "Private key of --kubelet-tls-cert-file.")
	fs.BoolVar(&o.NodeStats, "kubelet-node-stats", o.NodeStats,
		"Serve stats/summary and metrics/resource of virtual nodes from the physical nodes' (needs nodes/proxy in the physical cluster).")
	fs.DurationVar(&o.StreamIdleTimeout, "kubelet-streaming-connection-idle-timeout", o.StreamIdleTimeout,
		"Close an exec, attach or port-forward stream of the kubelet API that carried no byte either way for this long (the kubelet's --streaming-connection-idle-timeout, whose default it shares); 0 is that default. Streams cannot be kept open forever.")
}

// Complete checks the options and builds the process-wide port allocator.
// Call it once per process, before the options are copied.
func (o *KubeletOptions) Complete() error {
	if o.Address == "" || o.ports != nil {
		return nil
	}
	if err := o.completeCertSource(); err != nil {
		return err
	}
	if o.StreamIdleTimeout < 0 {
		return fmt.Errorf("--kubelet-streaming-connection-idle-timeout must not be negative, not %s", o.StreamIdleTimeout)
	}
	var first, last int
	if _, err := fmt.Sscanf(strings.TrimSpace(o.PortRange), "%d-%d", &first, &last); err != nil {
		return fmt.Errorf("--kubelet-port-range %q: want first-last", o.PortRange)
	}
	ports, err := kubeletapi.NewPortAllocator(first, last)
	if err != nil {
		return err
	}
	o.ports = ports
	return nil
}

func (o *KubeletOptions) completeCertSource() error {
	if (o.CertFile == "") != (o.KeyFile == "") {
		return fmt.Errorf("--kubelet-tls-cert-file and --kubelet-tls-private-key-file go together")
	}
	if o.CertSource == "" {
		o.CertSource = CertSourceSelfSigned
		if o.CertFile != "" {
			o.CertSource = CertSourceFiles
		}
	}
	switch o.CertSource {
	case CertSourceFiles:
		if o.CertFile == "" {
			return fmt.Errorf("--kubelet-serving-cert-source=files needs --kubelet-tls-cert-file and --kubelet-tls-private-key-file")
		}
		return nil
	case CertSourceCSR, CertSourceSelfSigned:
	default:
		return fmt.Errorf("--kubelet-serving-cert-source must be %q, %q or %q, not %q", CertSourceFiles, CertSourceCSR, CertSourceSelfSigned, o.CertSource)
	}
	if o.CertFile != "" {
		return fmt.Errorf("--kubelet-tls-cert-file is only read with --kubelet-serving-cert-source=files, not %s", o.CertSource)
	}
	if o.CertSource == CertSourceCSR && net.ParseIP(o.Address) == nil {
		return fmt.Errorf("--kubelet-serving-cert-source=csr names --kubelet-address in the certificate, which must be an IP address, not %q", o.Address)
	}
	return nil
}

// servingCertificate builds the kubelet API's serving certificate of the
// binding's syncer from o.CertSource.
func (o *KubeletOptions) servingCertificate(e *syncerEnv, metrics *kubeletapi.Metrics) (*kubeletapi.ServingCertificate, error) {
	switch o.CertSource {
	case CertSourceCSR:
		return kubeletapi.NewCSRServingCertificate(e.virtual.Kube, e.binding.Name, o.Address, metrics)
	case CertSourceFiles:
		return kubeletapi.NewServingCertificate(o.CertFile, o.KeyFile, o.Address)
	}
	return kubeletapi.NewServingCertificate("", "", o.Address)
}

// kubeletAPI builds the kubelet API server of the binding's virtual nodes
// and the endpoints the node controller advertises; nil, nil when the
// kubelet API is off.
func kubeletAPI(e *syncerEnv) (*kubeletapi.Server, *kubeletapi.Endpoints, error) {
	o := e.opts.Kubelet
	if o.Address == "" {
		return nil, nil, nil
	}
	if err := o.Complete(); err != nil {
		return nil, nil, err
	}
	// The process's own cluster is the virtual one: its Auth is shared
	// with the metrics endpoint and the other syncers of the process.
	auth, err := e.process.DelegatingAuth()
	if err != nil {
		return nil, nil, err
	}
	metrics, err := kubeletapi.NewMetrics(e.process.Registry)
	if err != nil {
		return nil, nil, err
	}
	// Anyone who reaches a node's port can send bearer tokens: the token
	// cache's figures show what a flood of them costs.
	if err := auth.RegisterMetrics(e.process.Registry); err != nil {
		return nil, nil, err
	}
	cert, err := o.servingCertificate(e, metrics)
	if err != nil {
		return nil, nil, err
	}
	clusterID, mount := e.binding.Spec.ClusterID, e.binding.Spec.MountNamespace
	virtualNodes := e.virtualInformers.Kube(ownedScope(clusterID, "")).Core().V1().Nodes()
	endpoints := kubeletapi.NewEndpoints(o.Address, o.ports, virtualNodes.Lister())
	server, err := kubeletapi.New(kubeletapi.Options{
		BindAddress: o.BindAddress, Endpoints: endpoints, Auth: auth, Certificate: cert,
		MountNamespace: mount, VirtualNodes: virtualNodes,
		VirtualPods:  e.virtualInformers.Kube(e.virtualPodScope()).Core().V1().Pods().Lister(),
		PhysicalPods: e.physicalPods().Lister(), PhysicalPodsOn: compact.PhysicalPodsOn(e.physicalPodRecords().GetStore()),
		Physical: e.physical.Kube, PhysicalConfig: streamingConfig(e.physicalConfig),
		StatsEnabled: o.NodeStats, Metrics: metrics, Recorder: e.process.Recorder, StreamIdleTimeout: o.StreamIdleTimeout,
	})
	return server, endpoints, err
}

// streamingConfig drops the client timeout: a log follow or an exec
// session lasts as long as the user wants.
func streamingConfig(config *rest.Config) *rest.Config {
	c := rest.CopyConfig(config)
	c.Timeout = 0
	return c
}

func kubeletRunnable(server *kubeletapi.Server) app.Runnable {
	return app.Runnable{Name: "kubelet-api", Run: server.Run}
}
