package pod

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	psaapi "k8s.io/pod-security-admission/api"
	"k8s.io/pod-security-admission/policy"
)

// podSecurity judges physical pods by the Pod Security Standard that the
// mount namespace enforces (its pod-security.kubernetes.io/enforce and
// enforce-version labels), with the same checks as the physical
// apiserver's Pod Security admission. A pod that breaks the level is never
// sent: the admission would refuse it anyway where it is enabled, and where
// it is not (an older cluster, an exemption for the syncer's user) the
// label still states what the physical cluster's owner allows.
type podSecurity struct {
	evaluator policy.Evaluator
}

func newPodSecurity() (*podSecurity, error) {
	evaluator, err := policy.NewEvaluator(policy.DefaultChecks(), nil)
	if err != nil {
		return nil, fmt.Errorf("building the Pod Security evaluator: %w", err)
	}
	return &podSecurity{evaluator: evaluator}, nil
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

// enforcedLevel is the level the mount namespace enforces; false while the
// namespace is not known (not given, or not cached).
func (c *Controller) enforcedLevel() (psaapi.LevelVersion, bool) {
	if c.mountNamespaces == nil {
		return psaapi.LevelVersion{}, false
	}
	namespace, err := c.mountNamespaces.Get(c.mountNamespace)
	if err != nil {
		return psaapi.LevelVersion{}, false
	}
	return enforced(namespace.Labels), true
}

// violation says which checks of the level pod fails, in the words of the
// admission's own refusal; "" when it passes.
func (s *podSecurity) violation(level psaapi.LevelVersion, pod *corev1.Pod) string {
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
