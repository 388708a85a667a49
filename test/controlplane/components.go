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

package controlplane

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// pollInterval is how often readiness is checked while a component starts.
const pollInterval = 100 * time.Millisecond

// waitUntil polls check until it succeeds, the process exits, or ctx ends.
// Errors carry the end of the component's log, since the folder holding it
// is removed when a failed start cleans up.
func waitUntil(ctx context.Context, p *process, what string, check func(context.Context) error) error {
	ticker := time.NewTicker(pollInterval)
	defer ticker.Stop()
	for {
		lastErr := check(ctx)
		if lastErr == nil {
			return nil
		}
		select {
		case <-p.done:
			return p.exitError()
		case <-ctx.Done():
			err := fmt.Errorf("waiting for %s: %w (last error: %v); last lines of %s:\n%s",
				what, ctx.Err(), lastErr, p.logPath, p.tail(20))
			if p.logContains("address already in use") {
				err = fmt.Errorf("%w: %w", errPortInUse, err)
			}
			return err
		case <-ticker.C:
		}
	}
}

// startEtcd runs a single-member etcd with its data in the cluster folder.
// Tests never need durability, hence --unsafe-no-fsync.
func (c *Cluster) startEtcd(ctx context.Context, clientPort, peerPort int) error {
	clientURL := loopbackURL("http", clientPort)
	peerURL := loopbackURL("http", peerPort)
	member := filepath.Base(c.Dir) // unique, so readiness can tell our etcd from another
	args := []string{
		"--name=" + member,
		"--data-dir=" + filepath.Join(c.Dir, "etcd"),
		"--listen-client-urls=" + clientURL,
		"--advertise-client-urls=" + clientURL,
		"--listen-peer-urls=" + peerURL,
		"--initial-advertise-peer-urls=" + peerURL,
		"--initial-cluster=" + member + "=" + peerURL,
		"--unsafe-no-fsync=true",
		"--log-level=warn",
	}
	p, err := c.run(binEtcd, c.bins.path(binEtcd), args, nil)
	if err != nil {
		return err
	}
	c.etcdURL = clientURL
	httpClient := &http.Client{Timeout: 2 * time.Second}
	return waitUntil(ctx, p, "etcd", func(ctx context.Context) error {
		// Had another etcd taken our client port in the moment between
		// picking and binding, /health alone would succeed against it and
		// two clusters would share storage; etcd serves its peer port only
		// once both ports are bound, and names its members there.
		if err := checkEtcdMember(ctx, httpClient, peerURL, member); err != nil {
			return err
		}
		health, err := httpGet(ctx, httpClient, clientURL+"/health")
		if err != nil {
			return err
		}
		if !strings.Contains(health, `"health":"true"`) {
			return fmt.Errorf("etcd /health: %s", health)
		}
		return nil
	})
}

func checkEtcdMember(ctx context.Context, client *http.Client, peerURL, name string) error {
	body, err := httpGet(ctx, client, peerURL+"/members")
	if err != nil {
		return err
	}
	var members []struct {
		Name string `json:"name"`
	}
	if err := json.Unmarshal([]byte(body), &members); err != nil {
		return fmt.Errorf("etcd members %s: %w", body, err)
	}
	if len(members) != 1 || members[0].Name != name {
		return fmt.Errorf("etcd at %s is not member %s: %s", peerURL, name, body)
	}
	return nil
}

// httpGet returns the body of a 200 response.
func httpGet(ctx context.Context, client *http.Client, url string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return "", err
	}
	resp, err := client.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", err
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("GET %s: %s: %s", url, resp.Status, body)
	}
	return string(body), nil
}

// apiServerArgs are the flags of a minimal but real apiserver: RBAC on, a
// static admin token, and service-account tokens signed with our key so that
// components can later run as service accounts to exercise the shipped RBAC.
func (c *Cluster) apiServerArgs(port int) []string {
	args := []string{
		"--etcd-servers=" + c.etcdURL,
		"--cert-dir=" + c.certDir(),
		"--secure-port=" + strconv.Itoa(port),
		"--bind-address=127.0.0.1",
		// The kubernetes Service endpoint would otherwise carry the host's
		// default-route address, which may not exist in a sandbox.
		"--advertise-address=127.0.0.1",
		// ...and an Endpoints object may not hold a loopback address: the
		// reconciler would log an error every 10s. Nothing runs in-cluster.
		"--endpoint-reconciler-type=none",
		"--service-cluster-ip-range=10.0.0.0/24",
		"--service-account-issuer=" + serviceAccountIssuer,
		"--service-account-key-file=" + c.creds.serviceAccountPubKey,
		"--service-account-signing-key-file=" + c.creds.serviceAccountKey,
		"--token-auth-file=" + c.creds.tokenAuthFile,
		// Client certificates: the apiserver's own to kubelets, and the CA
		// that servers delegating authentication (Kubeocean's kubelet API)
		// read from extension-apiserver-authentication. Kubelet serving
		// certificates are verified only with Options.VerifyKubeletServing.
		"--client-ca-file=" + c.certs.caCert,
		"--kubelet-client-certificate=" + c.certs.kubeletCert,
		"--kubelet-client-key=" + c.certs.kubeletKey,
		"--authorization-mode=RBAC",
		"--allow-privileged=true",
	}
	if c.opts.VerifyKubeletServing {
		args = append(args, "--kubelet-certificate-authority="+c.certs.caCert)
	}
	if !c.opts.ControllerManager {
		// Nobody creates the "default" ServiceAccount without the
		// controller-manager, and the ServiceAccount admission plugin would
		// reject every pod that names it. kwok runs no containers, so pods
		// lose nothing by not getting a token volume.
		args = append(args, "--disable-admission-plugins=ServiceAccount")
	}
	if c.AuditLogPath != "" {
		args = append(args,
			"--audit-policy-file="+c.auditPolicyPath(),
			"--audit-log-path="+c.AuditLogPath,
			"--audit-log-format=json",
			// Every request is in the log once the response is out, so a
			// test may read it as soon as its client is done.
			"--audit-log-mode=blocking",
		)
	}
	return append(args, c.opts.ExtraAPIServerFlags...)
}

func (c *Cluster) auditPolicyPath() string { return filepath.Join(c.Dir, "audit-policy.yaml") }

// writeAuditPolicy writes Options.AuditPolicy for the apiserver and sets
// AuditLogPath; without a policy it does nothing.
func (c *Cluster) writeAuditPolicy() error {
	if len(c.opts.AuditPolicy) == 0 {
		return nil
	}
	if err := os.WriteFile(c.auditPolicyPath(), c.opts.AuditPolicy, 0o600); err != nil {
		return fmt.Errorf("writing the audit policy: %w", err)
	}
	c.AuditLogPath = filepath.Join(c.Dir, "audit.log")
	return nil
}

func (c *Cluster) certDir() string { return filepath.Join(c.Dir, "apiserver-certs") }

// startAPIServer runs the apiserver, waits until it is ready and the default
// namespace exists, and writes the admin kubeconfig.
func (c *Cluster) startAPIServer(ctx context.Context, port int) error {
	p, err := c.run(binAPIServer, c.bins.path(binAPIServer), c.apiServerArgs(port), nil)
	if err != nil {
		return err
	}
	c.URL = loopbackURL("https", port)

	// The apiserver writes its self-signed certificate before it serves.
	certFile := filepath.Join(c.certDir(), "apiserver.crt")
	err = waitUntil(ctx, p, "apiserver serving certificate", func(context.Context) error {
		var err error
		c.caData, err = servingCA(certFile)
		return err
	})
	if err != nil {
		return err
	}
	if c.caData != nil {
		c.caFile = certFile
	}

	client := c.Clientset()
	err = waitUntil(ctx, p, "apiserver /readyz", func(ctx context.Context) error {
		body, err := client.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
		if err != nil {
			return fmt.Errorf("%w: %s", err, body)
		}
		return nil
	})
	if err != nil {
		return err
	}
	err = waitUntil(ctx, p, "namespace default", func(ctx context.Context) error {
		_, err := client.CoreV1().Namespaces().Get(ctx, metav1.NamespaceDefault, metav1.GetOptions{})
		return err
	})
	if err != nil {
		return err
	}
	return c.writeAdminKubeconfig()
}

// startControllerManager runs every default controller with the admin
// credentials.
func (c *Cluster) startControllerManager() (*process, error) {
	args := []string{
		"--kubeconfig=" + c.KubeconfigPath,
		"--leader-elect=false",
		"--controllers=*",
		"--use-service-account-credentials=false",
		"--service-account-private-key-file=" + c.creds.serviceAccountKey,
		"--secure-port=0",
		// The cluster CA (as kubeadm's, also the client CA) signs the
		// approved requests of the kubernetes.io/* signers, kubelet-serving
		// among them.
		"--cluster-signing-cert-file=" + c.certs.caCert,
		"--cluster-signing-key-file=" + c.certs.caKey,
	}
	if c.caFile != "" {
		// Published to pods as kube-root-ca.crt.
		args = append(args, "--root-ca-file="+c.caFile)
	}
	args = append(args, c.opts.ExtraControllerManagerFlags...)
	return c.run(binControllerManager, c.bins.path(binControllerManager), args, nil)
}

// waitForDefaultServiceAccount treats the controller-manager as ready once
// the default ServiceAccount exists: with the ServiceAccount admission plugin
// on, pods cannot be created before.
func (c *Cluster) waitForDefaultServiceAccount(ctx context.Context, p *process) error {
	client := c.Clientset()
	return waitUntil(ctx, p, "default ServiceAccount", func(ctx context.Context) error {
		_, err := client.CoreV1().ServiceAccounts(metav1.NamespaceDefault).Get(ctx, "default", metav1.GetOptions{})
		return err
	})
}

// startScheduler runs kube-scheduler from a config file: its --kubeconfig
// and --leader-elect flags are deprecated in favour of the file.
func (c *Cluster) startScheduler() error {
	config := fmt.Sprintf(`apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
clientConnection:
  kubeconfig: %q
leaderElection:
  leaderElect: false
`, c.KubeconfigPath)
	configPath := filepath.Join(c.Dir, "kube-scheduler.yaml")
	if err := os.WriteFile(configPath, []byte(config), 0o644); err != nil {
		return err
	}
	args := []string{"--config=" + configPath, "--secure-port=0"}
	_, err := c.run(binScheduler, c.bins.path(binScheduler), args, nil)
	return err
}

// startKwok runs kwok for every node in the cluster. Its HTTP server (logs,
// exec, port-forward) stays off unless Options.KwokArgs asks for it with
// --server-address or --node-port, so clusters cannot collide on a port.
func (c *Cluster) startKwok() error {
	args := []string{
		"--kubeconfig=" + c.KubeconfigPath,
		"--manage-all-nodes=true",
		// Without a lease duration kwok keeps no node Lease, and the node
		// lifecycle controller marks nodes NotReady about every 90s.
		"--node-lease-duration-seconds=40",
		// Pod IPs apart from the Service range (10.0.0.0/24), as on a real
		// cluster: a pod IP never equals a ClusterIP.
		"--cidr=10.244.0.0/16",
	}
	for _, stage := range c.bins.kwokStages {
		args = append(args, "-c", stage)
	}
	args = append(args, c.opts.KwokArgs...)
	// kwok also loads <workdir>/kwok.yaml when it exists; point the workdir
	// into the cluster folder so a developer's ~/.kwok cannot leak in.
	env := []string{"KWOK_WORKDIR=" + filepath.Join(c.Dir, "kwok")}
	_, err := c.run(binKwok, c.bins.path(binKwok), args, env)
	return err
}

// run starts one component and records it so Stop reaches it. It refuses to
// start anything once Stop has begun, so a concurrent Stop cannot miss it.
func (c *Cluster) run(name, bin string, args, env []string) (*process, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stopping {
		return nil, errors.New("cluster " + c.Name + " is stopping")
	}
	p, err := startProcess(c.Dir, name, bin, args, env)
	if err != nil {
		return nil, err
	}
	// A component started again (see StartAPIServer) takes its predecessor's
	// place, so that Stop keeps stopping components in order.
	for i, old := range c.procs {
		if old.name == name && old.exited() {
			c.procs[i] = p
			return p, nil
		}
	}
	c.procs = append(c.procs, p)
	return p, nil
}
