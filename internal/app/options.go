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

package app

import (
	"fmt"
	"os"
	"path/filepath"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	cliflag "k8s.io/component-base/cli/flag"
	logsapi "k8s.io/component-base/logs/api/v1"
	// Registers --logging-format=json.
	_ "k8s.io/component-base/logs/json/register"

	"github.com/kubeocean/kubeocean/internal/leaderelection"
	"github.com/kubeocean/kubeocean/internal/serving"
)

// Options are the flags every Kubeocean binary shares (docs/operations.md
// §1, "Shared flags"); their names and defaults are part of the contract.
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
	// Logging is the format and verbosity of the logs (component-base).
	Logging *logsapi.LoggingConfiguration
}

// NewOptions returns the defaults for component.
func NewOptions(component string) *Options {
	return &Options{
		Component:    component,
		KubeAPIQPS:   50,
		KubeAPIBurst: 100,
		Serving:      serving.NewOptions(),
		GC:           GCOptions{Percent: DefaultGCPercent},
		Logging:      logsapi.NewLoggingConfiguration(),
		Election: leaderelection.Options{
			LeaseName:      component,
			LeaseNamespace: "kubeocean-system",
		},
	}
}

// Sections of --help that every binary shares, in the order they show.
const (
	SectionGeneric  = "Generic"
	SectionServing  = "Metrics, health and profiling"
	SectionElection = "Leader election"
	SectionLogging  = "Logging"
)

// AddFlags registers the shared flags in their sections of fss.
func (o *Options) AddFlags(fss *cliflag.NamedFlagSets) {
	fs := fss.FlagSet(SectionGeneric)
	fs.StringVar(&o.Kubeconfig, "kubeconfig", o.Kubeconfig,
		"Path to a kubeconfig of the cluster this component runs in. Empty means the files that $KUBECONFIG lists when it is set, else the in-cluster configuration.")
	PositiveFloat32Var(fs, &o.KubeAPIQPS, "kube-api-qps", "Queries per second to the API server.")
	IntVar(fs, &o.KubeAPIBurst, "kube-api-burst", 1, "Burst of queries to the API server.")
	o.GC.AddFlags(fs)
	serving := fss.FlagSet(SectionServing)
	o.Serving.AddFlags(serving)
	serving.BoolVar(&o.Profiling, "profiling", o.Profiling, "Serve Go profiles under /debug/pprof on the metrics address.")
	o.Election.AddFlags(fss.FlagSet(SectionElection))
	logsapi.AddFlags(o.Logging, fss.FlagSet(SectionLogging))
}

// RESTConfig builds the client configuration for the component's own
// cluster, with its user agent and rate limits.
func (o *Options) RESTConfig() (*rest.Config, error) {
	config, err := loadConfig(o.Kubeconfig, os.Getenv("KUBECONFIG"))
	if err != nil {
		return nil, err
	}
	config.UserAgent = o.Component
	config.QPS = o.KubeAPIQPS
	config.Burst = o.KubeAPIBurst
	return config, nil
}

// loadConfig reads the kubeconfig at path; without one, the files that the
// KUBECONFIG variable (env) lists, as kubectl does; without either, the
// in-cluster configuration.
func loadConfig(path, env string) (*rest.Config, error) {
	switch {
	case path != "":
		config, err := clientcmd.BuildConfigFromFlags("", path)
		if err != nil {
			return nil, fmt.Errorf("loading the kubeconfig %q: %w", path, err)
		}
		return config, nil
	case env != "":
		rules := &clientcmd.ClientConfigLoadingRules{Precedence: filepath.SplitList(env)}
		config, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).ClientConfig()
		if err != nil {
			return nil, fmt.Errorf("loading the kubeconfig from $KUBECONFIG (%s): %w", env, err)
		}
		return config, nil
	default:
		config, err := rest.InClusterConfig()
		if err != nil {
			return nil, fmt.Errorf("no --kubeconfig, no $KUBECONFIG, and not in a cluster: %w", err)
		}
		return config, nil
	}
}
