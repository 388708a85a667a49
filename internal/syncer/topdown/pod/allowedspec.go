package pod

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
)

// specNotAllowed tells why the physical pod of virtual is not created as
// it asks, beyond Pod Security: a runtime class the lender does not allow
// (ResourceLeasingPolicy.spec.allowances.runtimeClassNames), or a projected
// volume source that Kubeocean cannot serve from the virtual cluster. It
// returns the reason and message of ConditionPhysicalPodCreated, or "".
//
// Such a pod is refused, not run without what it asks for: a pod that
// names a sandboxing runtime (gVisor, Kata) counts on it to contain what it
// runs, and a projected source left out would mount less than the pod
// expects. The allowances are read as the cache has them now; the pod is
// tried again when it changes, or when whatever wakes refused pods fires.
func (c *Controller) specNotAllowed(virtual *corev1.Pod) (reason, message string) {
	if name := virtual.Spec.RuntimeClassName; name != nil && *name != "" && !c.allowances.Current().RuntimeClass(*name) {
		return ReasonRuntimeClassNotAllowed, fmt.Sprintf("Runtime class %q is not allowed on this binding's physical cluster: "+
			"its administrator lists the runtime classes pods may use in the ResourceLeasingPolicy's spec.allowances.runtimeClassNames", *name)
	}
	for _, v := range virtual.Spec.Volumes {
		if v.Projected == nil {
			continue
		}
		for _, source := range v.Projected.Sources {
			if kind := unsupportedProjection(source); kind != "" {
				return ReasonVolumeSourceNotSupported, fmt.Sprintf("Volume %q projects a %s source, which pods on virtual nodes cannot use: "+
					"only configMap, secret, downwardAPI and serviceAccountToken sources are served from the virtual cluster", v.Name, kind)
			}
		}
	}
	return "", ""
}

// unsupportedProjection names a projected source other than those the
// translation serves from the virtual cluster, or "" for one of those. A
// source of the physical cluster's (a trust bundle, a certificate its
// signers issue) would tell the pod the physical cluster's secrets; a
// source this version does not know cannot be translated at all.
func unsupportedProjection(source corev1.VolumeProjection) string {
	switch {
	case source.ConfigMap != nil, source.Secret != nil, source.DownwardAPI != nil, source.ServiceAccountToken != nil:
		return ""
	case source.ClusterTrustBundle != nil:
		return "clusterTrustBundle"
	case source.PodCertificate != nil:
		return "podCertificate"
	}
	return "unknown"
}
