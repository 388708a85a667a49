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

package connectivity

import (
	"context"
	"errors"
	"fmt"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
	"github.com/kubeocean/kubeocean/pkg/remotecluster"
)

// DefaultTimeout bounds one whole check, so an unreachable cluster costs a
// worker at most this long.
const DefaultTimeout = 30 * time.Second

// Failure is why a check failed.
type Failure struct {
	// Reason classifies the failure: a reason of the Connected condition
	// in kubeoceanv1alpha1, or a remotecluster.ConfigErrorReason.
	Reason string
	// Message tells the user what is wrong, naming the Secret or server.
	Message string
	// Permanent failures are the user's input (Secret, kubeconfig):
	// retrying cannot fix them until the binding or the Secret changes.
	Permanent bool
	// Err is the underlying error.
	Err error
}

func (f *Failure) Error() string { return f.Message }
func (f *Failure) Unwrap() error { return f.Err }

// Options configure a Checker.
type Options struct {
	// QPS and Burst limit the checks' requests to one physical cluster.
	QPS   float32
	Burst int
	// UserAgent identifies the manager to the physical API servers.
	UserAgent string
	// Timeout bounds one check; zero means DefaultTimeout.
	Timeout time.Duration
	// AllowExternalCredentials accepts kubeconfigs with exec plugins or
	// file paths; see remotecluster.Options.
	AllowExternalCredentials bool
	// Build makes the client of one cluster; nil means
	// remotecluster.NewKubeClientset. Tests return fake clientsets.
	Build remotecluster.BuildFunc[kubernetes.Interface]
	// Clock ages the cached clients; nil means the real clock.
	Clock clock.PassiveClock
}

// Checker checks bindings' physical clusters. It is safe for concurrent use.
type Checker struct {
	cache   *remotecluster.Cache[kubernetes.Interface]
	timeout time.Duration
}

// New returns a Checker reading kubeconfig Secrets through secrets.
func New(secrets remotecluster.SecretGetter, opts Options) *Checker {
	build := opts.Build
	if build == nil {
		build = remotecluster.NewKubeClientset
	}
	timeout := opts.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	cache := remotecluster.NewCache(secrets, build, remotecluster.Options{
		QPS: opts.QPS, Burst: opts.Burst, UserAgent: opts.UserAgent, Timeout: timeout,
		AllowExternalCredentials: opts.AllowExternalCredentials, Clock: opts.Clock,
	})
	return &Checker{cache: cache, timeout: timeout}
}

// probeTimeout bounds Answers.
const probeTimeout = 3 * time.Second

// Answers asks the physical API server for its version, through the cached
// client of the binding's kubeconfig, and says whether it answered.
func (c *Checker) Answers(ctx context.Context, spec *kubeoceanv1alpha1.ClusterBindingSpec) bool {
	entry, err := c.cache.Get(ctx, spec.SecretRef.Namespace, spec.SecretRef.Name)
	if err != nil {
		return false
	}
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	return remotecluster.Probe(ctx, entry.Clients) == nil
}

// Check reads the binding's kubeconfig, asks the physical cluster for its
// version and reviews the syncer's permissions there. It returns nil when
// everything is in order.
func (c *Checker) Check(ctx context.Context, spec *kubeoceanv1alpha1.ClusterBindingSpec) *Failure {
	ref := spec.SecretRef
	entry, err := c.cache.Get(ctx, ref.Namespace, ref.Name)
	if err != nil {
		var configErr *remotecluster.ConfigError
		if errors.As(err, &configErr) {
			return &Failure{Reason: string(configErr.Reason), Message: configErr.Error(), Permanent: true, Err: err}
		}
		return &Failure{Reason: kubeoceanv1alpha1.ReasonKubeconfigSecretUnreadable, Message: err.Error(), Err: err}
	}
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	if err := remotecluster.Probe(ctx, entry.Clients); err != nil {
		return &Failure{
			Reason:  kubeoceanv1alpha1.ReasonUnreachable,
			Message: fmt.Sprintf("the physical cluster at %s (kubeconfig secret %s/%s) did not answer: %v", entry.Config.Host, ref.Namespace, ref.Name, err),
			Err:     err,
		}
	}
	missing, err := MissingAccess(ctx, entry.Clients.AuthorizationV1(), spec.MountNamespace)
	if err != nil {
		return &Failure{
			Reason:  kubeoceanv1alpha1.ReasonAccessReviewFailed,
			Message: fmt.Sprintf("could not review the permissions of kubeconfig secret %s/%s in the physical cluster: %v", ref.Namespace, ref.Name, err),
			Err:     err,
		}
	}
	if len(missing) > 0 {
		return &Failure{
			Reason: kubeoceanv1alpha1.ReasonInsufficientPermissions,
			Message: fmt.Sprintf("the credentials in kubeconfig secret %s/%s lack permissions the syncer needs in the physical cluster: %s",
				ref.Namespace, ref.Name, DescribeMissing(missing)),
		}
	}
	klog.FromContext(ctx).V(4).Info("Physical cluster checked", "host", entry.Config.Host)
	return nil
}

// Forget drops the cached clients of a Secret no binding refers to any more.
func (c *Checker) Forget(namespace, name string) {
	c.cache.Forget(namespace, name)
}
