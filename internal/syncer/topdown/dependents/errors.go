package dependents

import (
	"errors"
	"fmt"
	"time"

	"github.com/kubeocean/kubeocean/pkg/controller"
)

// Kinds, as NotReadyError and ConflictError name them.
const (
	KindConfigMap = "ConfigMap"
	KindSecret    = "Secret"
	KindPVC       = "PersistentVolumeClaim"
	KindPV        = "PersistentVolume"
)

// Reasons of a NotReadyError; they read as a pod's pending reason.
const (
	// ReasonNotFound: the virtual object does not exist (yet). A pod whose
	// reference is optional may go ahead without it.
	ReasonNotFound = "NotFound"
	// ReasonDeleting: the virtual object is being deleted.
	ReasonDeleting = "Deleting"
	// ReasonPVCNotBound: the virtual PVC is not Bound yet.
	ReasonPVCNotBound = "PVCNotBound"
	// ReasonPVCNoVolumeName: the virtual PVC is Bound but names no volume.
	ReasonPVCNoVolumeName = "PVCNoVolumeName"
	// ReasonPVNotBoundToClaim: the virtual PV's claimRef does not name the
	// claim that names it.
	ReasonPVNotBoundToClaim = "PVNotBoundToClaim"
	// ReasonServiceAccountToken: the Secret is a service-account token of
	// the virtual cluster. It is never copied: it would hand virtual-cluster
	// credentials to the physical cluster, whose token controller would
	// delete it anyway.
	ReasonServiceAccountToken = "ServiceAccountToken"
	// ReasonPhysicalNamespaceMissing: a CSI secret's namespace does not
	// exist in the physical cluster; Kubeocean does not create namespaces
	// there.
	ReasonPhysicalNamespaceMissing = "PhysicalNamespaceMissing"
	// ReasonPhysicalCopyTerminating: the physical copy is being deleted
	// (e.g. a PVC held by pvc-protection) and cannot be updated or recreated
	// until it is gone.
	ReasonPhysicalCopyTerminating = "PhysicalCopyTerminating"
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
