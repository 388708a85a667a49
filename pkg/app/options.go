// Package app wires a Kubeocean binary in the order every one of them
// follows: flags → config → clients → metrics and health servers → leader
// election → the binary's controllers, started and stopped together. The
// binaries in cmd/ stay trivial: they parse flags and call Run with the
// function that builds their controllers.
package app

import (
	"flag"
	"fmt"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kubeocean/kubeocean/pkg/leaderelection"
	"github.com/kubeocean/kubeocean/pkg/serving"
)

// Options are the flags every Kubeocean binary shares (design.md §2).
type Options struct {
	// Component names the binary in user agents, events and the lease.
	Component string
	// Kubeconfig of the cluster the binary lives in; "" means in-cluster.
	Kubeconfig   string
	KubeAPIQPS   float32
	KubeAPIBurst int
	Serving      serving.Options
	Election     leaderelection.Options
	// Profiling serves Go's pprof handlers under /debug/pprof on the
	// metrics address.
	Profiling bool
	GC        GCOptions
}

// NewOptions returns the defaults for component.
func NewOptions(component string) *Options {
	return &Options{
		Component:    component,
		KubeAPIQPS:   50,
		KubeAPIBurst: 100,
		Serving:      serving.NewOptions(),
		GC:           GCOptions{Percent: DefaultGCPercent},
		Election: leaderelection.Options{
			LeaseName:      component,
			LeaseNamespace: "kubeocean-system",
		},
	}
}

// AddFlags registers the shared flags on fs.
func (o *Options) AddFlags(fs *flag.FlagSet) {
	fs.StringVar(&o.Kubeconfig, "kubeconfig", o.Kubeconfig,
		"Path to a kubeconfig of the cluster this component runs in. Empty means the in-cluster configuration.")
	fs.Func("kube-api-qps", fmt.Sprintf("Queries per second to the API server (default %v).", o.KubeAPIQPS), func(s string) error {
		var v float32
		if _, err := fmt.Sscan(s, &v); err != nil || v <= 0 {
			return fmt.Errorf("must be a positive number")
		}
		o.KubeAPIQPS = v
		return nil
	})
	fs.IntVar(&o.KubeAPIBurst, "kube-api-burst", o.KubeAPIBurst, "Burst of queries to the API server.")
	fs.BoolVar(&o.Profiling, "profiling", o.Profiling, "Serve Go profiles under /debug/pprof on the metrics address.")
	o.Serving.AddFlags(fs)
	o.Election.AddFlags(fs)
	o.GC.AddFlags(fs)
}

// RESTConfig builds the client configuration for the component's own
// cluster, with its user agent and rate limits.
func (o *Options) RESTConfig() (*rest.Config, error) {
	var config *rest.Config
	var err error
	if o.Kubeconfig == "" {
		config, err = rest.InClusterConfig()
	} else {
		config, err = clientcmd.BuildConfigFromFlags("", o.Kubeconfig)
	}
	if err != nil {
		return nil, fmt.Errorf("loading the kubeconfig %q: %w", o.Kubeconfig, err)
	}
	config.UserAgent = o.Component
	config.QPS = o.KubeAPIQPS
	config.Burst = o.KubeAPIBurst
	return config, nil
}
