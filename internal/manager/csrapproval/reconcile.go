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
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/klog/v2"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
	"github.com/kubeocean/kubeocean/pkg/controller"
)

// reconcile decides the request name once and records the decision.
func (c *Controller) reconcile(ctx context.Context, name string) (controller.Result, error) {
	logger := klog.FromContext(ctx)
	csr, err := c.requests.Get(name)
	if apierrors.IsNotFound(err) {
		return controller.Result{}, nil
	}
	if err != nil {
		return controller.Result{}, err
	}
	decision, reason := Decide(csr, c.syncers)
	if decision == Pending {
		if age := c.clock.Since(csr.CreationTimestamp.Time); age < PodIPGrace {
			logger.V(2).Info("Waiting for the syncer pod's address before deciding", "csr", klog.KObj(csr), "reason", reason)
			return controller.RequeueAfter(pendingRecheck), nil
		}
		decision = Deny
	}
	if decision == Ignore {
		logger.V(4).Info("Leaving the request alone", "csr", klog.KObj(csr), "reason", reason)
		return controller.Result{}, nil
	}
	if err := Record(ctx, c.client.CertificateSigningRequests(), csr, decision, reason); err != nil {
		if apierrors.IsNotFound(err) {
			return controller.Result{}, nil
		}
		return controller.Result{}, fmt.Errorf("recording the decision on %s: %w", csr.Name, err)
	}
	c.decisions.WithLabelValues(decision.String()).Inc()
	if decision == Approve {
		logger.Info("Approved a syncer's serving certificate request", "csr", klog.KObj(csr), "user", csr.Spec.Username, "reason", reason)
		c.recorder.Event(csr, corev1.EventTypeNormal, kubeoceanv1alpha1.EventCSRApproved, reason)
	} else {
		logger.Info("Denied a syncer's serving certificate request", "csr", klog.KObj(csr), "user", csr.Spec.Username, "reason", reason)
		c.recorder.Event(csr, corev1.EventTypeWarning, kubeoceanv1alpha1.EventCSRDenied, reason)
	}
	return controller.Result{}, nil
}
