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
	"errors"
	"fmt"
	"time"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
	"github.com/kubeocean/kubeocean/pkg/controller"
)

// Kinds, as NotReadyError and ConflictError name them.
const (
	KindConfigMap = "ConfigMap"
	KindSecret    = "Secret"
	KindPVC       = "PersistentVolumeClaim"
	KindPV        = "PersistentVolume"
)

// Reasons of a NotReadyError, declared with the other contract names
// (the meaning of each is there).
const (
	ReasonNotFound                 = kubeoceanv1alpha1.ReasonDependencyNotFound
	ReasonDeleting                 = kubeoceanv1alpha1.ReasonDependencyDeleting
	ReasonPVCNotBound              = kubeoceanv1alpha1.ReasonDependencyPVCNotBound
	ReasonPVCNoVolumeName          = kubeoceanv1alpha1.ReasonDependencyPVCNoVolumeName
	ReasonPVNotBoundToClaim        = kubeoceanv1alpha1.ReasonDependencyPVNotBoundToClaim
	ReasonServiceAccountToken      = kubeoceanv1alpha1.ReasonDependencyServiceAccountToken
	ReasonPhysicalNamespaceMissing = kubeoceanv1alpha1.ReasonDependencyPhysicalNamespaceMissing
	ReasonPhysicalCopyTerminating  = kubeoceanv1alpha1.ReasonDependencyPhysicalCopyTerminating
	ReasonHolderMissing            = kubeoceanv1alpha1.ReasonDependencyHolderClaimMissing
	ReasonProvisionedElsewhere     = kubeoceanv1alpha1.ReasonDependencyVolumeOfAnotherCluster
)

// NotReadyError says a dependent object cannot be copied yet; the pod that
// needs it waits, with Reason as its pending reason.
type NotReadyError struct {
	Kind, Namespace, Name, Reason string
}

func (e *NotReadyError) Error() string {
	return fmt.Sprintf("%s %s not ready: %s", e.Kind, objectName(e.Namespace, e.Name), e.Reason)
}

// ConflictError says the physical object at the mapped name belongs to
// someone else, so Kubeocean refuses to overwrite it. An event on the
// virtual object says so too. Retrying does not help until the physical
// object is removed or renamed.
type ConflictError struct {
	Kind, Namespace, Name, PhysicalName string
}

func (e *ConflictError) Error() string {
	return fmt.Sprintf("%s %s: physical %s %s belongs to someone else; not overwriting it",
		e.Kind, objectName(e.Namespace, e.Name), e.Kind, e.PhysicalName)
}

// ConflictRecheck is how long the dependent controllers wait before looking
// again at a conflicting physical object: someone must act, so a hot retry
// would only add load, yet the conflict heals by itself once the foreign
// object is gone.
const ConflictRecheck = 2 * time.Minute

// ResultOf turns the error of an Ensure or Release call into a controller
// result: a conflict is rechecked after ConflictRecheck instead of with
// backoff; a volume source the lender does not allow is not retried (the
// pods that need the volume come back when the policies change);
// everything else is returned as is.
func ResultOf(err error) (controller.Result, error) {
	var conflict *ConflictError
	if errors.As(err, &conflict) {
		return controller.RequeueAfter(ConflictRecheck), nil
	}
	var refused *VolumeSourceError
	if errors.As(err, &refused) {
		return controller.Result{}, controller.Terminal(err)
	}
	return controller.Result{}, err
}

func objectName(namespace, name string) string {
	if namespace == "" {
		return name
	}
	return namespace + "/" + name
}
