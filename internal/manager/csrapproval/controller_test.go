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
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/record"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/kubeocean/kubeocean/pkg/controller"
)

// TestReconcile: a syncer's good request is approved through the approval
// subresource with an event; a bad one is denied; a request naming an
// address the manager does not know yet waits, then is denied; others are
// left alone.
func TestReconcile(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	young := metav1.NewTime(now.Add(-time.Second))
	old := metav1.NewTime(now.Add(-2 * PodIPGrace))
	tests := []struct {
		name        string
		req         request
		created     metav1.Time
		mutate      func(*certificatesv1.CertificateSigningRequest)
		want        certificatesv1.RequestConditionType // "" writes nothing
		wantRequeue bool
		wantEvent   string
	}{
		{name: "approved", req: goodRequest(), created: young, want: certificatesv1.CertificateApproved, wantEvent: "Normal Approved"},
		{name: "another binding denied", req: request{cn: CommonName("worker-2"), org: Organization, ips: []string{"10.0.0.5"}},
			created: young, want: certificatesv1.CertificateDenied, wantEvent: "Warning Denied"},
		{name: "unknown IP waits", req: request{cn: CommonName("worker-1"), org: Organization, ips: []string{"10.0.0.9"}},
			created: young, wantRequeue: true},
		{name: "unknown IP denied after the grace", req: request{cn: CommonName("worker-1"), org: Organization, ips: []string{"10.0.0.9"}},
			created: old, want: certificatesv1.CertificateDenied, wantEvent: "Warning Denied"},
		{name: "a node's kubelet left alone", req: goodRequest(), created: young, mutate: func(c *certificatesv1.CertificateSigningRequest) {
			c.Spec.Username = "system:node:worker-a"
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			csr := makeCSR(t, tt.req, tt.mutate)
			csr.CreationTimestamp = tt.created
			client := fake.NewClientset(csr)
			factory := informers.NewSharedInformerFactory(client, 0)
			requests := factory.Certificates().V1().CertificateSigningRequests()
			if err := requests.Informer().GetIndexer().Add(csr); err != nil {
				t.Fatal(err)
			}
			recorder := record.NewFakeRecorder(10)
			c, err := New(Options{
				Client: client.CertificatesV1(), Requests: requests, Syncers: testSyncers{},
				Recorder: recorder, Clock: clocktesting.NewFakeClock(now),
			})
			if err != nil {
				t.Fatal(err)
			}
			client.ClearActions()
			result, err := c.reconcile(t.Context(), csr.Name)
			if err != nil {
				t.Fatal(err)
			}
			if got := result != (controller.Result{}); got != tt.wantRequeue {
				t.Errorf("result %+v, want a requeue: %v", result, tt.wantRequeue)
			}
			actions := client.Actions()
			if tt.want == "" {
				if len(actions) != 0 {
					t.Errorf("wrote %v", actions)
				}
				return
			}
			if len(actions) != 1 || actions[0].GetSubresource() != "approval" {
				t.Fatalf("actions %v, want one update of approval", actions)
			}
			got, err := client.CertificatesV1().CertificateSigningRequests().Get(t.Context(), csr.Name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if len(got.Status.Conditions) != 1 || got.Status.Conditions[0].Type != tt.want {
				t.Errorf("conditions %+v, want %s", got.Status.Conditions, tt.want)
			}
			select {
			case event := <-recorder.Events:
				if len(event) < len(tt.wantEvent) || event[:len(tt.wantEvent)] != tt.wantEvent {
					t.Errorf("event %q, want %q", event, tt.wantEvent)
				}
			default:
				t.Errorf("no event, want %q", tt.wantEvent)
			}
		})
	}
}
