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

package preflight

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	corev1listers "k8s.io/client-go/listers/core/v1"
	psaapi "k8s.io/pod-security-admission/api"
	"k8s.io/pod-security-admission/policy"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
)

// PodSecurity judges physical pods by the Pod Security Standard that the
// mount namespace enforces (its pod-security.kubernetes.io/enforce and
// enforce-version labels), with the same checks as the physical
// apiserver's Pod Security admission. A pod that breaks the level is never
// sent: the admission would refuse it anyway where it is enabled, and where
// it is not (an older cluster, an exemption for the syncer's user) the
// label still states what the physical cluster's owner allows.
//
// It is the check of ReasonPodSecurityViolation; the pod controller also
// judges ephemeral containers with it (Level, Violation).
type PodSecurity struct {
	evaluator policy.Evaluator
	// namespace is the mount namespace; namespaces, nil when not given,
	// reads its labels.
	namespace  string
	namespaces corev1listers.NamespaceLister
	// claims, with VolumeSources, says which PVs the pod's claims bring.
	claims ClaimVolumes
}

// NewPodSecurity judges pods by the labels of the mount namespace
// namespace as namespaces has them; nil namespaces judges nothing.
// claims may be nil.
func NewPodSecurity(namespace string, namespaces corev1listers.NamespaceLister, claims ClaimVolumes) (*PodSecurity, error) {
	evaluator, err := policy.NewEvaluator(policy.DefaultChecks(), nil)
	if err != nil {
		return nil, fmt.Errorf("building the Pod Security evaluator: %w", err)
	}
	return &PodSecurity{evaluator: evaluator, namespace: namespace, namespaces: namespaces, claims: claims}, nil
}

// Check refuses a pod that breaks the level the mount namespace enforces,
// judged on the volumes the physical node would mount (see
// withEffectiveVolumes). The level is not known while the namespace is not
// cached: the create then meets the physical cluster's own verdict.
func (s *PodSecurity) Check(ctx context.Context, pod *Pod) *Refusal {
	level, ok := s.Level()
	if !ok || level.Level == psaapi.LevelPrivileged {
		// Nothing to check: the pod is not built for nothing.
		return nil
	}
	physical := pod.Physical()
	withEffectiveVolumes(physical, claimsOf(ctx, pod, s.claims).copied)
	if message := s.Violation(level, physical); message != "" {
		return &Refusal{Reason: kubeoceanv1alpha1.ReasonPodSecurityViolation, Message: message}
	}
	return nil
}

// enforced is the level and version the namespace labels enforce. No
// label enforces nothing (privileged), as for the admission's default; a
// label that does not parse enforces restricted at the latest version, as
// the admission reads it.
func enforced(namespaceLabels map[string]string) psaapi.LevelVersion {
	defaults := psaapi.Policy{
		Enforce: psaapi.LevelVersion{Level: psaapi.LevelPrivileged, Version: psaapi.LatestVersion()},
		Audit:   psaapi.LevelVersion{Level: psaapi.LevelPrivileged, Version: psaapi.LatestVersion()},
		Warn:    psaapi.LevelVersion{Level: psaapi.LevelPrivileged, Version: psaapi.LatestVersion()},
	}
	p, _ := psaapi.PolicyToEvaluate(namespaceLabels, defaults)
	return p.Enforce
}

// Level is the level the mount namespace enforces; false while the
// namespace is not known (not given, or not cached).
func (s *PodSecurity) Level() (psaapi.LevelVersion, bool) {
	if s.namespaces == nil {
		return psaapi.LevelVersion{}, false
	}
	namespace, err := s.namespaces.Get(s.namespace)
	if err != nil {
		return psaapi.LevelVersion{}, false
	}
	return enforced(namespace.Labels), true
}

// Violation says which checks of the level pod fails, in the words of the
// admission's own refusal; "" when it passes.
func (s *PodSecurity) Violation(level psaapi.LevelVersion, pod *corev1.Pod) string {
	if level.Level == psaapi.LevelPrivileged {
		return ""
	}
	result := policy.AggregateCheckResults(s.evaluator.EvaluatePod(level, &pod.ObjectMeta, &pod.Spec))
	if result.Allowed {
		return ""
	}
	return fmt.Sprintf("violates PodSecurity %q enforced by the physical mount namespace %s: %s",
		level.String(), pod.Namespace, result.ForbiddenDetail())
}
