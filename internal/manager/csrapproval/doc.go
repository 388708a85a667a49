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

// Package csrapproval decides which CertificateSigningRequests for a
// kubelet API serving certificate the manager approves: only those of its
// own syncers, for the addresses their pods have. A syncer asks the signer
// kubernetes.io/kubelet-serving, which the virtual cluster's
// kube-controller-manager signs with its cluster signing CA (the CA the
// apiserver's --kubelet-certificate-authority trusts in kubeadm clusters);
// the controller-manager never approves such requests itself, so without
// an approver nothing is signed.
//
// The rules (Decide):
//   - other signers, requests already approved or denied, and requests of
//     users that are not a syncer of this manager are left alone (a node's
//     kubelet asks the same signer; someone else approves those);
//   - a syncer's request is approved only when it names a binding this
//     manager runs (common name CommonName(binding), organization
//     system:nodes, as the signer requires), asks only IP addresses of that
//     binding's syncer pods (no DNS names, e-mail addresses or URIs), and
//     only the usages of a serving certificate; any other is denied, with
//     the reason. An IP address that is not (yet) one of the binding's
//     syncer pods' is Pending first: the pod informer may lag the syncer
//     that just started in that pod; the controller denies it after a
//     grace period.
//
// The syncer side is kubeletapi's CSR serving certificate
// (--kubelet-serving-cert-source=csr); the manager runs the controller
// with --approve-kubelet-serving-csrs. See docs/kubelet-api.md.
package csrapproval
