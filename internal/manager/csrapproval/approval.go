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

package csrapproval

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"net"
	"slices"
	"strings"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	certificatesv1client "k8s.io/client-go/kubernetes/typed/certificates/v1"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
)

// Organization is the subject organization the kubelet-serving signer
// requires.
const Organization = "system:nodes"

// commonNamePrefix starts the common name of a syncer's certificate: the
// signer requires a node identity, which a syncer's certificate gets from
// its binding, never from a real node's name.
const commonNamePrefix = "system:node:kubeocean-syncer-"

// CommonName is the common name of the serving certificate of a binding's
// syncer.
func CommonName(binding string) string { return commonNamePrefix + binding }

// Syncers tells the approver who its syncers are.
type Syncers interface {
	// IsSyncer reports whether username is the identity a syncer of this
	// manager runs as (its ServiceAccount, or the manager's own identity
	// for in-process syncers).
	IsSyncer(username string) bool
	// Serves reports whether this manager runs a syncer for binding.
	Serves(binding string) bool
	// PodIPs are the IP addresses of the binding's syncer pods.
	PodIPs(binding string) []net.IP
}

// Decision is what to do with a request.
type Decision int

const (
	// Ignore leaves the request to someone else.
	Ignore Decision = iota
	Approve
	Deny
	// Pending cannot tell yet: an IP address is not one of the binding's
	// syncer pods as far as the manager knows now.
	Pending
)

func (d Decision) String() string {
	switch d {
	case Approve:
		return "approve"
	case Deny:
		return "deny"
	case Pending:
		return "pending"
	}
	return "ignore"
}

// servingUsages are the key usages a serving certificate may ask for;
// server auth is required.
var servingUsages = []certificatesv1.KeyUsage{
	certificatesv1.UsageDigitalSignature, certificatesv1.UsageKeyEncipherment, certificatesv1.UsageServerAuth,
}

// Decide applies the rules of the package comment to csr and says why.
func Decide(csr *certificatesv1.CertificateSigningRequest, syncers Syncers) (Decision, string) {
	switch {
	case csr.Spec.SignerName != certificatesv1.KubeletServingSignerName:
		return Ignore, "signer " + csr.Spec.SignerName
	case decided(csr):
		return Ignore, "already approved or denied"
	case !syncers.IsSyncer(csr.Spec.Username):
		return Ignore, "requested by " + csr.Spec.Username + ", not a syncer"
	}
	request, err := parseRequest(csr.Spec.Request)
	if err != nil {
		return Deny, err.Error()
	}
	binding, ok := strings.CutPrefix(request.Subject.CommonName, commonNamePrefix)
	switch {
	case !ok || binding == "":
		return Deny, fmt.Sprintf("common name %q is not %s<binding>", request.Subject.CommonName, commonNamePrefix)
	case !syncers.Serves(binding):
		return Deny, "no syncer runs for binding " + binding
	case !slices.Equal(request.Subject.Organization, []string{Organization}):
		return Deny, fmt.Sprintf("organization %q, want [%s]", request.Subject.Organization, Organization)
	case len(request.DNSNames) > 0 || len(request.EmailAddresses) > 0 || len(request.URIs) > 0:
		return Deny, "asks for DNS names, e-mail addresses or URIs; a syncer's certificate names its pod IPs only"
	case len(request.IPAddresses) == 0:
		return Deny, "asks for no IP address"
	}
	if !slices.Contains(csr.Spec.Usages, certificatesv1.UsageServerAuth) {
		return Deny, "does not ask for server auth"
	}
	for _, usage := range csr.Spec.Usages {
		if !slices.Contains(servingUsages, usage) {
			return Deny, fmt.Sprintf("asks for usage %q, not one of a serving certificate", usage)
		}
	}
	podIPs := syncers.PodIPs(binding)
	for _, ip := range request.IPAddresses {
		if !slices.ContainsFunc(podIPs, ip.Equal) {
			return Pending, fmt.Sprintf("IP address %s is not one of the syncer pods of binding %s %v", ip, binding, podIPs)
		}
	}
	return Approve, fmt.Sprintf("serving certificate of the syncer of binding %s", binding)
}

func decided(csr *certificatesv1.CertificateSigningRequest) bool {
	return slices.ContainsFunc(csr.Status.Conditions, func(c certificatesv1.CertificateSigningRequestCondition) bool {
		return c.Type == certificatesv1.CertificateApproved || c.Type == certificatesv1.CertificateDenied
	})
}

func parseRequest(data []byte) (*x509.CertificateRequest, error) {
	block, _ := pem.Decode(data)
	if block == nil || block.Type != "CERTIFICATE REQUEST" {
		return nil, fmt.Errorf("the request is not a PEM CERTIFICATE REQUEST")
	}
	request, err := x509.ParseCertificateRequest(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("parsing the certificate request: %w", err)
	}
	if err := request.CheckSignature(); err != nil {
		return nil, fmt.Errorf("the certificate request's signature: %w", err)
	}
	return request, nil
}

// Record writes an Approve or Deny decision on csr through the approval
// subresource; Ignore writes nothing.
func Record(ctx context.Context, client certificatesv1client.CertificateSigningRequestInterface,
	csr *certificatesv1.CertificateSigningRequest, decision Decision, message string) error {
	condition := certificatesv1.CertificateSigningRequestCondition{
		Status: corev1.ConditionTrue, Message: message, LastUpdateTime: metav1.Now(),
	}
	switch decision {
	case Approve:
		condition.Type, condition.Reason = certificatesv1.CertificateApproved, kubeoceanv1alpha1.ReasonSyncerServingCertificate
	case Deny:
		condition.Type, condition.Reason = certificatesv1.CertificateDenied, kubeoceanv1alpha1.ReasonNotSyncerServingCertificate
	default:
		return nil
	}
	update := csr.DeepCopy()
	update.Status.Conditions = append(update.Status.Conditions, condition)
	_, err := client.UpdateApproval(ctx, update.Name, update, metav1.UpdateOptions{})
	return err
}
