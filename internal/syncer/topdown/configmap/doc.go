// Package configmap is the top-down syncer's ConfigMap controller (how
// copies are named and labelled: package dependents). For every virtual ConfigMap marked for this binding it keeps the
// physical copy in step with the virtual object (restoring it when someone
// deletes or edits it), deletes the copy and then drops the finalizer when
// the virtual ConfigMap is deleted, and releases the copy once no pod of
// the binding refers to the ConfigMap any more. Copies are first made by
// the pod controller through package dependents.
package configmap
