// Package secret is the top-down syncer's Secret controller (how copies
// are named and labelled: package dependents). For every virtual Secret marked for this binding it keeps the physical
// copies in step with the virtual object — the copy pods use, in the mount
// namespace, and the copy a PV's CSI driver uses on node publish, under
// the Secret's own name and namespace — deletes them and then drops the
// finalizer when the virtual Secret is deleted, and releases them once no
// pod and no copied PV of the binding uses the Secret any more. Copies are
// first made by the pod controller through package dependents.
package secret
