// Package pv is the top-down syncer's PersistentVolume controller (how
// copies are named and labelled: package dependents). For every virtual PV marked for this binding it keeps the physical
// copy in step with the virtual PV (restoring it when someone deletes it),
// deletes the copy and then drops the finalizer when the virtual PV is
// deleted, and releases the copy once the claim it is bound to is no
// longer copied for the binding, so a PV goes after its PVC. Copies are
// first made with their claim, by dependents.Syncer.EnsurePVC.
package pv
