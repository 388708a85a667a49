// Package podstatus is the bottom-up syncer's physical pod controller. For
// every pod Kubeocean created in the binding's mount namespace it copies the
// physical pod's status to the virtual pod it stands for, records the
// physical pod's UID on the virtual pod, and deletes physical pods whose
// virtual pod is gone, so nothing is left running for a pod nobody owns.
package podstatus
