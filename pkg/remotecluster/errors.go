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

package remotecluster

import (
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/types"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
)

// ConfigErrorReason is a machine-readable cause of a ConfigError. The values
// are CamelCase so callers can use them directly as a condition reason.
type ConfigErrorReason string

// The reasons, whose values (and meanings) are declared with the other
// contract names in package v1alpha1.
const (
	// ReasonSecretNotFound: kubeoceanv1alpha1.ReasonKubeconfigSecretNotFound.
	ReasonSecretNotFound ConfigErrorReason = kubeoceanv1alpha1.ReasonKubeconfigSecretNotFound
	// ReasonKubeconfigMissing: kubeoceanv1alpha1.ReasonKubeconfigKeyMissing.
	ReasonKubeconfigMissing ConfigErrorReason = kubeoceanv1alpha1.ReasonKubeconfigKeyMissing
	// ReasonKubeconfigInvalid: kubeoceanv1alpha1.ReasonKubeconfigInvalid.
	ReasonKubeconfigInvalid ConfigErrorReason = kubeoceanv1alpha1.ReasonKubeconfigInvalid
	// ReasonKubeconfigNotAllowed: kubeoceanv1alpha1.ReasonKubeconfigNotAllowed.
	ReasonKubeconfigNotAllowed ConfigErrorReason = kubeoceanv1alpha1.ReasonKubeconfigNotAllowed
)

// ConfigError reports a problem with the user's input (the Secret or the
// kubeconfig in it). Retrying cannot fix it; only a change to the Secret (or
// to the object referencing it) can, so callers report it as a condition and
// wait for that change instead of requeueing.
type ConfigError struct {
	// Secret is the kubeconfig Secret that was being read.
	Secret types.NamespacedName
	// Reason classifies the problem.
	Reason ConfigErrorReason
	// Detail is a human-readable description of the problem.
	Detail string
	// Err is the underlying cause, if any.
	Err error
}

func (e *ConfigError) Error() string {
	msg := fmt.Sprintf("kubeconfig secret %s: %s", e.Secret, e.Detail)
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

func (e *ConfigError) Unwrap() error { return e.Err }

// IsConfigError reports whether err (or anything it wraps) is a ConfigError.
func IsConfigError(err error) bool {
	var configErr *ConfigError
	return errors.As(err, &configErr)
}

func newConfigError(secret types.NamespacedName, reason ConfigErrorReason, detail string, cause error) *ConfigError {
	return &ConfigError{Secret: secret, Reason: reason, Detail: detail, Err: cause}
}
