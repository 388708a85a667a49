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
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kubeocean/kubeocean/test/controlplane"
)

// startCoreDNS runs the CoreDNS binary with its kubernetes plugin on a real
// apiserver holding the benchmark's Services under their virtual names
// (web and db in namespace shop), so that it answers the same queries as
// kubeocean-dns, and its forward plugin pointed at upstream.
func startCoreDNS(ctx context.Context, binary, upstream string) (string, func(), error) {
	cluster, err := controlplane.Start(ctx, controlplane.Options{Name: "coredns"})
	if err != nil {
		return "", nil, err
	}
	stop := func() { cluster.Stop() }
	if err := createServices(ctx, cluster.Clientset()); err != nil {
		stop()
		return "", nil, err
	}
	addr, err := controlplane.FreeLoopbackAddress()
	if err != nil {
		stop()
		return "", nil, err
	}
	_, port, _ := net.SplitHostPort(addr)
	corefile := filepath.Join(cluster.Dir, "Corefile")
	conf := fmt.Sprintf(".:%s {\n  bind 127.0.0.1\n  kubernetes cluster.local in-addr.arpa ip6.arpa {\n    kubeconfig %s\n    namespaces shop\n    fallthrough in-addr.arpa ip6.arpa\n  }\n  forward . %s\n}\n",
		port, cluster.KubeconfigPath, upstream)
	if err := os.WriteFile(corefile, []byte(conf), 0o600); err != nil {
		stop()
		return "", nil, err
	}
	log, err := os.Create(filepath.Join(cluster.Dir, "coredns.log"))
	if err != nil {
		stop()
		return "", nil, err
	}
	cmd := exec.Command(binary, "-conf", corefile)
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		stop()
		return "", nil, err
	}
	stop = func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		_ = log.Close()
		cluster.Stop()
	}
	// Ready once it answers the headless name in full.
	c := &dns.Client{Net: "tcp", Timeout: time.Second}
	for deadline := time.Now().Add(60 * time.Second); ; {
		resp, _, err := c.Exchange(new(dns.Msg).SetQuestion(names[1].qname, dns.TypeA), addr)
		if err == nil && len(resp.Answer) == names[1].answers {
			return addr, stop, nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			stop()
			return "", nil, fmt.Errorf("CoreDNS did not answer %s (log: %s): %v", names[1].qname, log.Name(), err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// createServices writes web (ClusterIP) and db (headless, 100 ready
// endpoints in a slice of its own) in namespace shop.
func createServices(ctx context.Context, kube kubernetes.Interface) error {
	if _, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shop"}}, metav1.CreateOptions{}); err != nil {
		return err
	}
	web := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "shop"}, Spec: clusterIP("")}
	web.Spec.ClusterIP, web.Spec.ClusterIPs = "", nil
	db := headless("shop", "db", 100)
	dbSvc, dbSlice := db[0].(*corev1.Service), db[1].(*discoveryv1.EndpointSlice)
	dbSvc.ObjectMeta = metav1.ObjectMeta{Name: "db", Namespace: "shop"}
	dbSlice.ObjectMeta = metav1.ObjectMeta{Name: "db-1", Namespace: "shop", Labels: map[string]string{discoveryv1.LabelServiceName: "db"}}
	for _, svc := range []*corev1.Service{web, dbSvc} {
		if _, err := kube.CoreV1().Services("shop").Create(ctx, svc, metav1.CreateOptions{}); err != nil {
			return err
		}
	}
	_, err := kube.DiscoveryV1().EndpointSlices("shop").Create(ctx, dbSlice, metav1.CreateOptions{})
	return err
}

// coreDNSVersion is the CoreDNS module built by --coredns=build.
const coreDNSVersion = "v1.15.0"

// buildCoreDNS builds CoreDNS from its module through the module proxy,
// like the other test binaries, into the user's cache (about ten minutes on
// two cores the first time), and returns the binary's path.
func buildCoreDNS(ctx context.Context) (string, error) {
	cache, err := os.UserCacheDir()
	if err != nil {
		return "", err
	}
	bin := filepath.Join(cache, "kubeocean", "coredns-"+coreDNSVersion, "coredns")
	if _, err := os.Stat(bin); err == nil {
		return bin, nil
	}
	dir, err := os.MkdirTemp("", "kubeocean-coredns-")
	if err != nil {
		return "", err
	}
	defer func() { _ = os.RemoveAll(dir) }()
	fmt.Fprintf(os.Stderr, "building CoreDNS %s into %s (once)...\n", coreDNSVersion, bin)
	for _, args := range [][]string{
		{"mod", "init", "kubeocean-coredns"},
		{"get", "github.com/coredns/coredns@" + coreDNSVersion},
		{"build", "-o", bin + ".tmp", "github.com/coredns/coredns"},
	} {
		cmd := exec.CommandContext(ctx, "go", args...)
		cmd.Dir, cmd.Stdout, cmd.Stderr = dir, os.Stderr, os.Stderr
		cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOWORK=off")
		if err := cmd.Run(); err != nil {
			return "", fmt.Errorf("go %v: %w", args, err)
		}
	}
	return bin, os.Rename(bin+".tmp", bin)
}
