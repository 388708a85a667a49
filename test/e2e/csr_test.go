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

package e2e

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
	"github.com/kubeocean/kubeocean/internal/manager/csrapproval"
	"github.com/kubeocean/kubeocean/internal/syncer/kubeletapi"
	"github.com/kubeocean/kubeocean/test/kwokkubelet"
	"github.com/kubeocean/kubeocean/test/stack"
)

// signingDuration is the virtual controller-manager's certificate lifetime
// in TestKubeletServingCertificateCSR: it backdates each certificate by
// 5 minutes, so a certificate lives 8 minutes and the syncer renews it at
// 70–90 % of that, 0.6 to 2.2 minutes after it is issued.
const signingDuration = 3 * time.Minute

// TestKubeletServingCertificateCSR runs the shipped manager and syncer
// Deployments' arguments (the syncer asks for its kubelet API serving
// certificate through a CertificateSigningRequest, the manager approves it)
// against a virtual apiserver that verifies kubelet serving certificates
// against the cluster CA (--kubelet-certificate-authority), whose
// controller-manager signs kubelet-serving requests for a short time. It
// checks that the served certificate is the issued one, that kubectl logs
// through the virtual apiserver works (it fails on a self-signed one), that
// requests of the syncer's identity for another binding or another address
// are denied and one of another user left alone, and that the certificate
// is renewed before it expires, without a restart.
func TestKubeletServingCertificateCSR(t *testing.T) {
	kwok, err := kwokkubelet.New(t.TempDir(), metricsNode)
	step(t, "configure kwok's kubelet API", err)
	t.Cleanup(kwok.Close)
	s, err := stack.Start(t.Context(), stack.Options{
		KwokArgs: kwok.Args, VerifyKubeletServing: true,
		VirtualControllerManagerFlags: []string{"--cluster-signing-duration=" + signingDuration.String()},
	})
	step(t, "start the clusters", err)
	t.Cleanup(s.Stop)
	world = s
	ctx := t.Context()
	clusterCA, err := s.Virtual.ClusterCA()
	step(t, "cluster CA", err)
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(clusterCA)

	step(t, "install CRDs", s.InstallCRDs(ctx))
	step(t, "install RBAC", s.InstallRBAC(ctx, "virtual"))
	step(t, "create physical nodes", s.CreateNodes(ctx, []string{"node-a"}, map[string]string{stack.LendableLabel: "true"}))
	physicalKubeconfig, err := s.PhysicalSyncerKubeconfig(ctx)
	step(t, "physical kubeconfig", err)
	step(t, "bind", s.Bind(ctx, physicalKubeconfig))
	manager := startManager(t, managerDeploymentArgs(t, "deployment")...)
	syncer := startSyncerOfDeployment(t)
	step(t, "virtual nodes Ready", s.WaitVirtualNodesReady(waitCtx(t), 1))
	endpoint := kubeletEndpoint(t, "vnode-"+stack.ClusterID+"-node-a")

	first := waitServed(t, endpoint, roots, nil)
	if want := kubeletapi.CSRCommonName(stack.BindingName); first.Subject.CommonName != want {
		t.Errorf("served certificate of %q, want %q", first.Subject.CommonName, want)
	}
	if !slices.ContainsFunc(first.IPAddresses, net.ParseIP(kwokkubelet.Address()).Equal) {
		t.Errorf("served certificate names %v, want %s", first.IPAddresses, kwokkubelet.Address())
	}
	t.Logf("issued certificate serial %s, valid %s to %s", first.SerialNumber, first.NotBefore, first.NotAfter)
	approvedOwn(t)

	step(t, "deploy the sample application", s.DeployApp(ctx))
	step(t, "application running", s.WaitAppRunning(waitCtx(t)))
	kubectlLogs(t)

	// Requests the manager must not approve, made with the syncer's own
	// token, and one of another identity it must leave alone.
	token, err := s.Virtual.ServiceAccountToken(ctx, stack.SystemNamespace, stack.SyncerAccount)
	step(t, "syncer token", err)
	asSyncer, err := kubernetes.NewForConfig(s.Virtual.ConfigForToken(token))
	step(t, "syncer client", err)
	otherBinding := createCSR(t, asSyncer, "other-binding", csrapproval.CommonName("worker-2"), kwokkubelet.Address())
	otherIP := createCSR(t, asSyncer, "other-ip", csrapproval.CommonName(stack.BindingName), "10.99.0.1")
	notSyncer := createCSR(t, s.VirtualKube, "not-a-syncer", csrapproval.CommonName(stack.BindingName), kwokkubelet.Address())

	// Renewed before it expires, by the same process.
	second := waitServed(t, endpoint, roots, first)
	if !second.NotAfter.After(first.NotAfter) || time.Now().After(first.NotAfter) {
		t.Errorf("renewed at %s: the first certificate expires %s, the second %s", time.Now(), first.NotAfter, second.NotAfter)
	}
	if exited, err := syncer.Exited(); exited {
		t.Fatalf("the syncer exited: %v", err)
	}
	t.Logf("renewed certificate serial %s, valid %s to %s", second.SerialNumber, second.NotBefore, second.NotAfter)
	kubectlLogs(t)

	waitDecided(t, otherBinding, certificatesv1.CertificateDenied, "no syncer runs for binding worker-2")
	waitDecided(t, otherIP, certificatesv1.CertificateDenied, "IP address 10.99.0.1 is not one of the syncer pods")
	got, err := s.VirtualKube.CertificatesV1().CertificateSigningRequests().Get(ctx, notSyncer, metav1.GetOptions{})
	step(t, "get "+notSyncer, err)
	if len(got.Status.Conditions) != 0 {
		t.Errorf("a request of another user was decided: %+v", got.Status.Conditions)
	}
	manager.Stop()
	syncer.Stop()
}

// kubeletEndpoint is host:port of the kubelet API a virtual node advertises.
func kubeletEndpoint(t *testing.T, node string) string {
	var endpoint string
	step(t, "kubelet endpoint", stack.Poll(waitCtx(t), node+" advertises its kubelet API", func(ctx context.Context) (string, error) {
		n, err := world.VirtualKube.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
		if err != nil {
			return err.Error(), nil
		}
		port := n.Status.DaemonEndpoints.KubeletEndpoint.Port
		if len(n.Status.Addresses) == 0 || port == 0 {
			return "no address or port yet", nil
		}
		endpoint = net.JoinHostPort(n.Status.Addresses[0].Address, strconv.Itoa(int(port)))
		return "", nil
	}))
	return endpoint
}

// waitServed waits until endpoint serves a certificate that chains to
// roots for its IP address and is not previous, and returns it.
func waitServed(t *testing.T, endpoint string, roots *x509.CertPool, previous *x509.Certificate) *x509.Certificate {
	host, _, _ := net.SplitHostPort(endpoint)
	var served *x509.Certificate
	what := "the kubelet API serves a certificate of the cluster CA"
	ctx, cancel := context.WithTimeout(t.Context(), signingDuration+2*time.Minute)
	defer cancel()
	if previous != nil {
		what = "the kubelet API serves a renewed certificate"
	}
	step(t, what, stack.Poll(ctx, what, func(ctx context.Context) (string, error) {
		dialer := &tls.Dialer{Config: &tls.Config{RootCAs: roots, ServerName: host, MinVersion: tls.VersionTLS12}}
		conn, err := dialer.DialContext(ctx, "tcp", endpoint)
		if err != nil {
			return err.Error(), nil
		}
		defer conn.Close()
		leaf := conn.(*tls.Conn).ConnectionState().PeerCertificates[0]
		if previous != nil && leaf.SerialNumber.Cmp(previous.SerialNumber) == 0 {
			return "still serial " + leaf.SerialNumber.String(), nil
		}
		served = leaf
		return "", nil
	}))
	return served
}

// approvedOwn checks that the syncer's request was approved by the manager
// and signed by the controller-manager.
func approvedOwn(t *testing.T) {
	list, err := world.VirtualKube.CertificatesV1().CertificateSigningRequests().List(t.Context(), metav1.ListOptions{})
	step(t, "list CSRs", err)
	syncerUser := "system:serviceaccount:" + stack.SystemNamespace + ":" + stack.SyncerAccount
	for _, csr := range list.Items {
		if csr.Spec.Username != syncerUser || len(csr.Status.Certificate) == 0 {
			continue
		}
		for _, c := range csr.Status.Conditions {
			if c.Type == certificatesv1.CertificateApproved && c.Reason == kubeoceanv1alpha1.ReasonSyncerServingCertificate {
				return
			}
		}
	}
	t.Errorf("no request of %s approved by the manager and issued", syncerUser)
}

// kubectlLogs reads a pod's logs through the virtual apiserver, which
// verifies the kubelet API's certificate.
func kubectlLogs(t *testing.T) {
	ctx := t.Context()
	pods, err := world.VirtualKube.CoreV1().Pods(stack.AppNamespace).List(ctx, metav1.ListOptions{LabelSelector: "app=" + stack.AppName})
	step(t, "list the application's pods", err)
	if len(pods.Items) == 0 {
		t.Fatal("the application has no pods")
	}
	out, err := world.Virtual.Kubectl(ctx, "logs", "-n", stack.AppNamespace, pods.Items[0].Name)
	step(t, "kubectl logs through a virtual apiserver that verifies the kubelet API's certificate", err)
	if !strings.Contains(out, kwokkubelet.LogLines[0]) {
		t.Errorf("kubectl logs: %q missing in %q", kwokkubelet.LogLines[0], out)
	}
}

// createCSR asks for a kubelet serving certificate of commonName at ip as
// client's user and returns the request's name.
func createCSR(t *testing.T, client kubernetes.Interface, name, commonName, ip string) string {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	step(t, "key", err)
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{
		Subject:     pkix.Name{CommonName: commonName, Organization: []string{csrapproval.Organization}},
		IPAddresses: []net.IP{net.ParseIP(ip)},
	}, key)
	step(t, "certificate request", err)
	csr := &certificatesv1.CertificateSigningRequest{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: certificatesv1.CertificateSigningRequestSpec{
			Request:    pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der}),
			SignerName: certificatesv1.KubeletServingSignerName,
			Usages:     []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageServerAuth},
		},
	}
	_, err = client.CertificatesV1().CertificateSigningRequests().Create(t.Context(), csr, metav1.CreateOptions{})
	step(t, "create CSR "+name, err)
	return name
}

// waitDecided waits until request name has a condition of type want whose
// message contains reason.
func waitDecided(t *testing.T, name string, want certificatesv1.RequestConditionType, reason string) {
	step(t, name+" "+string(want), stack.Poll(waitCtx(t), fmt.Sprintf("%s %s", name, want), func(ctx context.Context) (string, error) {
		csr, err := world.VirtualKube.CertificatesV1().CertificateSigningRequests().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err.Error(), nil
		}
		for _, c := range csr.Status.Conditions {
			if c.Type == want && c.Status == corev1.ConditionTrue {
				if !strings.Contains(c.Message, reason) {
					t.Errorf("%s %s: %q, want %q in it", name, want, c.Message, reason)
				}
				return "", nil
			}
		}
		return fmt.Sprintf("conditions %+v", csr.Status.Conditions), nil
	}))
}
