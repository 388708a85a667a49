package serving

import "github.com/spf13/pflag"

const (
	// DefaultMetricsBindAddress is where /metrics is served unless overridden.
	DefaultMetricsBindAddress = ":8080"
	// DefaultHealthProbeBindAddress is where /healthz and /readyz are served unless overridden.
	DefaultHealthProbeBindAddress = ":8081"
)

// Options are the bind addresses of the two servers. "0" or "" disables a server.
type Options struct {
	MetricsBindAddress     string
	HealthProbeBindAddress string
}

// NewOptions returns the defaults.
func NewOptions() Options {
	return Options{
		MetricsBindAddress:     DefaultMetricsBindAddress,
		HealthProbeBindAddress: DefaultHealthProbeBindAddress,
	}
}

// AddFlags registers --metrics-bind-address and --health-probe-bind-address,
// defaulting to the current values of o.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.MetricsBindAddress, "metrics-bind-address", o.MetricsBindAddress,
		`The address the /metrics endpoint binds to, e.g. ":8080"; "0" disables it.`)
	fs.StringVar(&o.HealthProbeBindAddress, "health-probe-bind-address", o.HealthProbeBindAddress,
		`The address the /healthz and /readyz endpoints bind to, e.g. ":8081"; "0" disables them.`)
}
