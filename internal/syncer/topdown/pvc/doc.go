// Package pvc is the top-down syncer's PersistentVolumeClaim controller
// (how copies are named and labelled: package dependents). For every virtual PVC marked for this binding it keeps the
// physical copy in step with the virtual claim (restoring it when someone
// deletes it; past creation only a resize can change it), deletes the copy
// and then drops the finalizer when the virtual PVC is deleted, and
// releases the copy once no pod of the binding mounts the claim any more.
// The PV follows through the pv controller. Copies are first made by the
// pod controller through package dependents (dependents.Syncer.EnsurePVC).
package pvc
