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

package policy

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
)

// patchFinalizers sets the policy's finalizer list with a merge patch of
// metadata.finalizers alone, never an update of the whole object: the
// syncer's physical identity holds no update on policies, and the shipped
// admission policy (manifests/admission-physical) refuses it any change of
// a policy but its own finalizer. The resourceVersion guards the list, so
// a finalizer someone else added meanwhile is never lost.
func (c *Controller) patchFinalizers(ctx context.Context, policy *kubeoceanv1alpha1.ResourceLeasingPolicy, finalizers []string) error {
	if finalizers == nil {
		finalizers = []string{}
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{
		"resourceVersion": policy.ResourceVersion, "finalizers": finalizers,
	}})
	if err != nil {
		return fmt.Errorf("encoding the finalizers of %s: %w", policy.Name, err)
	}
	_, err = c.client.ResourceLeasingPolicies().Patch(ctx, policy.Name, types.MergePatchType, patch, metav1.PatchOptions{})
	return err
}

// withoutOurFinalizer is the policy's finalizer list less this syncer's.
func withoutOurFinalizer(policy *kubeoceanv1alpha1.ResourceLeasingPolicy) []string {
	return slices.DeleteFunc(slices.Clone(policy.Finalizers), func(f string) bool { return f == finalizer })
}
