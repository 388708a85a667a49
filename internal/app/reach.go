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
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/version"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"

	kubeoceanversion "github.com/kubeocean/kubeocean/internal/version"
)

// Waits between attempts to reach the API server at start-up (variables
// for tests).
var (
	reachFirstRetry = time.Second
	reachMaxRetry   = 30 * time.Second
	reachTimeout    = 10 * time.Second
)

// waitForAPIServer asks the API server for its version until it answers,
// logging every failure at the default verbosity: an unreachable or
// refusing apiserver is the most common start-up problem, and the informers
// alone would only say that their caches are not synced yet. It returns
// false when ctx ends first.
func waitForAPIServer(ctx context.Context, client rest.Interface, host string) bool {
	logger := klog.FromContext(ctx)
	retry := reachFirstRetry
	for attempt := 1; ; attempt++ {
		v, err := serverVersion(ctx, client)
		if err == nil {
			logger.Info("Connected to the API server", "host", host, "serverVersion", v.GitVersion)
			return true
		}
		if ctx.Err() != nil {
			return false
		}
		logger.Error(err, "Cannot reach the API server; retrying", "host", host, "attempt", attempt, "retryIn", retry)
		select {
		case <-ctx.Done():
			return false
		case <-time.After(retry):
		}
		retry = min(2*retry, reachMaxRetry)
	}
}

func serverVersion(ctx context.Context, client rest.Interface) (*version.Info, error) {
	ctx, cancel := context.WithTimeout(ctx, reachTimeout)
	defer cancel()
	body, err := client.Get().AbsPath("/version").Do(ctx).Raw()
	if err != nil {
		return nil, err
	}
	var v version.Info
	if err := json.Unmarshal(body, &v); err != nil {
		return nil, fmt.Errorf("decoding /version: %w", err)
	}
	return &v, nil
}

// registerBuildInfo exports kubeocean_build_info: always 1, its labels
// name the build, so dashboards can tell which version runs where.
func registerBuildInfo(registry prometheus.Registerer, component string) error {
	v := kubeoceanversion.Get()
	info := prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "kubeocean_build_info",
		Help: "The build of this process: always 1, with its version, commit and Go version as labels.",
	}, []string{"component", "version", "commit", "go_version"})
	info.WithLabelValues(component, v.GitVersion, v.GitCommit, v.GoVersion).Set(1)
	return registry.Register(info)
}
