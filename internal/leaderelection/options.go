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

package leaderelection

import (
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/util/uuid"
)

// The defaults of kube-controller-manager: a new leader takes over within
// about 15s of a crash, and a leader stops working within 10s of losing its
// connection to the API server.
const (
	DefaultLeaseDuration = 15 * time.Second
	DefaultRenewDeadline = 10 * time.Second
	DefaultRetryPeriod   = 2 * time.Second
)

// Options configures leader election on a coordination.k8s.io Lease.
type Options struct {
	// Enabled turns leader election on; when off, Run calls the work directly.
	Enabled bool
	// LeaseName and LeaseNamespace locate the Lease; both are required when enabled.
	LeaseName      string
	LeaseNamespace string
	// Identity names this candidate in the Lease; empty means DefaultIdentity().
	Identity string
	// LeaseDuration is how long candidates wait before taking over a lease
	// that is not renewed; zero means DefaultLeaseDuration.
	LeaseDuration time.Duration
	// RenewDeadline is how long the leader keeps trying to renew before it
	// gives up leadership; zero means DefaultRenewDeadline.
	RenewDeadline time.Duration
	// RetryPeriod is the wait between attempts; zero means DefaultRetryPeriod.
	RetryPeriod time.Duration
	// Healthz, when set, is tied to the elector so the liveness check fails
	// if this process leads but has stopped renewing (for example when stuck).
	Healthz *HealthzAdaptor
}

// AddFlags registers the --leader-elect* flags, defaulting to the current
// values of o.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	fs.BoolVar(&o.Enabled, "leader-elect", o.Enabled,
		"Elect a leader on a Lease before doing any work, so several replicas can run for availability.")
	fs.StringVar(&o.LeaseName, "leader-elect-resource-name", o.LeaseName, "The name of the Lease used for leader election.")
	fs.StringVar(&o.LeaseNamespace, "leader-elect-resource-namespace", o.LeaseNamespace,
		"The namespace of the Lease used for leader election.")
	fs.DurationVar(&o.LeaseDuration, "leader-elect-lease-duration", o.LeaseDuration,
		"How long candidates wait before taking over a Lease that is not renewed.")
	fs.DurationVar(&o.RenewDeadline, "leader-elect-renew-deadline", o.RenewDeadline,
		"How long the leader tries to renew the Lease before it stops leading; less than the lease duration.")
	fs.DurationVar(&o.RetryPeriod, "leader-elect-retry-period", o.RetryPeriod,
		"How long candidates wait between attempts to acquire or renew the Lease.")
}

// DefaultIdentity is the hostname (the pod name in a Deployment) with a
// unique suffix, so a restarted container never mistakes the previous
// holder's record for its own.
func DefaultIdentity() (string, error) {
	hostname, err := os.Hostname()
	if err != nil {
		return "", fmt.Errorf("getting hostname for the leader election identity: %w", err)
	}
	return hostname + "_" + string(uuid.NewUUID()), nil
}

// completed returns o with the defaults filled in, or an error naming what
// is missing.
func (o Options) completed() (Options, error) {
	var missing []error
	if o.LeaseName == "" {
		missing = append(missing, errors.New("lease name is required"))
	}
	if o.LeaseNamespace == "" {
		missing = append(missing, errors.New("lease namespace is required"))
	}
	if err := errors.Join(missing...); err != nil {
		return o, fmt.Errorf("leader election: %w", err)
	}
	if o.Identity == "" {
		identity, err := DefaultIdentity()
		if err != nil {
			return o, err
		}
		o.Identity = identity
	}
	o.LeaseDuration = orDefault(o.LeaseDuration, DefaultLeaseDuration)
	o.RenewDeadline = orDefault(o.RenewDeadline, DefaultRenewDeadline)
	o.RetryPeriod = orDefault(o.RetryPeriod, DefaultRetryPeriod)
	return o, nil
}

func orDefault(value, fallback time.Duration) time.Duration {
	if value == 0 {
		return fallback
	}
	return value
}
