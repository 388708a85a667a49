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
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	k8sleaderelection "k8s.io/client-go/tools/leaderelection"
)

// leaderStatus uses the metric name of the Kubernetes components so existing
// dashboards and alerts work unchanged.
var leaderStatus = prometheus.NewGaugeVec(prometheus.GaugeOpts{
	Name: "leader_election_master_status",
	Help: "1 if this process is the leader of the named lease, 0 if it is a standby.",
}, []string{"name"})

var setProviderOnce sync.Once

// RegisterMetrics exports whether this process leads each lease. Call it
// before the first Run: client-go reads the provider, without
// synchronisation, when it creates an elector. It may be called for several
// registries; all of them see the same gauge.
func RegisterMetrics(registerer prometheus.Registerer) error {
	setProviderOnce.Do(func() { k8sleaderelection.SetProvider(leaderMetricsProvider{}) })
	return registerer.Register(leaderStatus)
}

type leaderMetricsProvider struct{}

func (leaderMetricsProvider) NewLeaderMetric() k8sleaderelection.LeaderMetric {
	return leaderMetricsProvider{}
}

func (leaderMetricsProvider) On(name string)           { leaderStatus.WithLabelValues(name).Set(1) }
func (leaderMetricsProvider) Off(name string)          { leaderStatus.WithLabelValues(name).Set(0) }
func (leaderMetricsProvider) SlowpathExercised(string) {}
