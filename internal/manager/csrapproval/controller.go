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
	"errors"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	certificatesv1 "k8s.io/api/certificates/v1"
	"k8s.io/apimachinery/pkg/fields"
	certificatesv1informers "k8s.io/client-go/informers/certificates/v1"
	certificatesv1client "k8s.io/client-go/kubernetes/typed/certificates/v1"
	certificatesv1listers "k8s.io/client-go/listers/certificates/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"

	"github.com/kubeocean/kubeocean/pkg/controller"
)

// ControllerName names the controller, its queue and its metrics.
const ControllerName = "manager-csr-approval"

// PodIPGrace is how long a request naming an IP address that is not (yet)
// a syncer pod's waits for the pod informer before it is denied.
const PodIPGrace = 30 * time.Second

// pendingRecheck is how often a Pending request is looked at again.
const pendingRecheck = time.Second

// FieldSelector selects the requests the controller looks at.
var FieldSelector = fields.OneTermEqualSelector("spec.signerName", certificatesv1.KubeletServingSignerName).String()

// Options are the dependencies of the controller.
type Options struct {
	// Client writes approvals through the approval subresource.
	Client certificatesv1client.CertificateSigningRequestsGetter
	// Requests is an informer on CertificateSigningRequests, ideally of
	// FieldSelector only.
	Requests certificatesv1informers.CertificateSigningRequestInformer
	// Syncers tells the manager's syncers; HasSynced are the informers it
	// reads.
	Syncers   Syncers
	HasSynced []cache.InformerSynced
	// Recorder records an event on each decided request.
	Recorder record.EventRecorder
	// Metrics receives the reconcile metrics, Registry the decision
	// counter; nil records none.
	Metrics  *controller.Metrics
	Registry prometheus.Registerer
	// Clock ages requests; nil is the real clock.
	Clock clock.WithTicker
}

// Controller approves the serving certificates of the manager's syncers
// and denies requests of its syncers that break the rules; it leaves every
// other request alone. Keyed by the request's name.
type Controller struct {
	*controller.Controller[string]

	client    certificatesv1client.CertificateSigningRequestsGetter
	requests  certificatesv1listers.CertificateSigningRequestLister
	syncers   Syncers
	recorder  record.EventRecorder
	clock     clock.PassiveClock
	decisions *prometheus.CounterVec
}

// New builds the controller and registers its handler and metrics; it
// starts nothing.
func New(opts Options) (*Controller, error) {
	if opts.Client == nil || opts.Requests == nil || opts.Syncers == nil || opts.Recorder == nil {
		return nil, errors.New("csr approval controller options: Client, Requests, Syncers and Recorder are required")
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	c := &Controller{
		client: opts.Client, requests: opts.Requests.Lister(), syncers: opts.Syncers,
		recorder: opts.Recorder, clock: opts.Clock,
		decisions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "kubeocean_manager_csr_decisions_total",
			Help: "CertificateSigningRequests of the manager's syncers, approved or denied.",
		}, []string{"decision"}),
	}
	if opts.Registry != nil {
		if err := opts.Registry.Register(c.decisions); err != nil {
			return nil, fmt.Errorf("registering the CSR approval metrics: %w", err)
		}
	}
	informer := opts.Requests.Informer()
	c.Controller = controller.New(controller.Options[string]{
		Name:      ControllerName,
		Reconcile: c.reconcile,
		HasSynced: append([]cache.InformerSynced{informer.HasSynced}, opts.HasSynced...),
		Metrics:   opts.Metrics,
		Clock:     opts.Clock,
	})
	err := c.Watch(informer, controller.Handler[*certificatesv1.CertificateSigningRequest, string]{
		Enqueue: c.Enqueue,
		Keys:    func(csr *certificatesv1.CertificateSigningRequest) []string { return []string{csr.Name} },
		Filter: func(csr *certificatesv1.CertificateSigningRequest) bool {
			return csr.Spec.SignerName == certificatesv1.KubeletServingSignerName && !decided(csr)
		},
	})
	return c, err
}
