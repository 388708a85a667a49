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
	"time"

	k8sleaderelection "k8s.io/client-go/tools/leaderelection"
)

// HealthzAdaptor is client-go's liveness check for leader election; it has
// Name() and Check(*http.Request), so serving.CheckFrom accepts it.
type HealthzAdaptor = k8sleaderelection.HealthzAdaptor

// DefaultHealthzTimeout is how long past the lease expiry a leader that
// failed to renew is still reported healthy, as in kube-controller-manager.
const DefaultHealthzTimeout = 20 * time.Second

// NewHealthzAdaptor returns a check that stays healthy until Run ties it to
// an elector (pass it in Options.Healthz), and then fails when this process
// holds the lease but has not renewed it for LeaseDuration + timeout.
func NewHealthzAdaptor(timeout time.Duration) *HealthzAdaptor {
	return k8sleaderelection.NewLeaderHealthzAdaptor(timeout)
}
