package dependents

import (
	"context"

	corev1 "k8s.io/api/core/v1"
)

// ReleaseStaleClaimRef lets the external tests reach the step on its own,
// for copies that the ensure path would refuse before it.
func (s *Syncer) ReleaseStaleClaimRef(ctx context.Context, virtual *corev1.PersistentVolume) error {
	return s.releaseStaleClaimRef(ctx, virtual)
}
