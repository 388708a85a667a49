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
