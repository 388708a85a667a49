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

package serving

import (
	"errors"

	"github.com/spf13/pflag"
)

const (
	// DefaultMetricsBindAddress is where /metrics is served unless overridden.
	DefaultMetricsBindAddress = ":8080"
	// DefaultHealthProbeBindAddress is where /healthz and /readyz are served unless overridden.
	DefaultHealthProbeBindAddress = ":8081"
)

// Names of the key pair in --metrics-cert-dir: those of a Secret of type
// kubernetes.io/tls mounted as a volume.
const (
	CertFileName = "tls.crt"
	KeyFileName  = "tls.key"
)

// Options are the bind addresses of the two servers and how the metrics
// server is protected. "0" or "" disables a server.
type Options struct {
	MetricsBindAddress     string
	HealthProbeBindAddress string
	// MetricsSecure serves the metrics address (metrics and profiles) over
	// HTTPS to callers that the apiserver authenticates and authorizes.
	MetricsSecure bool
	// MetricsCertDir holds tls.crt and tls.key of the metrics server,
	// reloaded when they change; "" uses a self-signed certificate.
	MetricsCertDir string
}

// NewOptions returns the defaults.
func NewOptions() Options {
	return Options{
		MetricsBindAddress:     DefaultMetricsBindAddress,
		HealthProbeBindAddress: DefaultHealthProbeBindAddress,
	}
}

// AddFlags registers the flags of the two servers, defaulting to the
// current values of o.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.MetricsBindAddress, "metrics-bind-address", o.MetricsBindAddress,
		`The address the /metrics endpoint binds to, e.g. ":8080"; "0" disables it.`)
	fs.BoolVar(&o.MetricsSecure, "metrics-secure", o.MetricsSecure,
		"Serve /metrics and /debug/pprof over HTTPS, only to callers that the API server of --kubeconfig authenticates (bearer token through a TokenReview, or a client certificate of its client CA) "+
			"and authorizes for the path (SubjectAccessReview on the non-resource URL, e.g. RBAC nonResourceURLs [\"/metrics\"], verb get). The health probes stay plain HTTP.")
	fs.StringVar(&o.MetricsCertDir, "metrics-cert-dir", o.MetricsCertDir,
		"Folder holding "+CertFileName+" and "+KeyFileName+" (e.g. a mounted kubernetes.io/tls Secret) served with --metrics-secure, reloaded when they change. Empty: a self-signed certificate made at start-up.")
	fs.StringVar(&o.HealthProbeBindAddress, "health-probe-bind-address", o.HealthProbeBindAddress,
		`The address the /healthz and /readyz endpoints bind to, e.g. ":8081"; "0" disables them.`)
}

// Validate reports settings that cannot work together.
func (o *Options) Validate() error {
	if o.MetricsCertDir != "" && !o.MetricsSecure {
		return errors.New("--metrics-cert-dir needs --metrics-secure")
	}
	return nil
}
