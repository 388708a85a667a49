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

package v1alpha1

import corev1 "k8s.io/api/core/v1"

// The reasons of the conditions and events Kubeocean writes, beside the
// labels and annotations of well_known.go. They are part of the contract:
// users alert on them and tests wait for them.

// Reasons of the events and conditions the syncer and the manager write on
// Kubernetes objects (docs/operations.md §6).
const (
	// ReasonCSINodeConflict (Warning event on a virtual node): a CSINode that
	// is not Kubeocean's holds the virtual node's name, so its drivers cannot
	// be mirrored.
	ReasonCSINodeConflict = "CSINodeConflict"
	// ReasonMissingVirtualPodMapping (Warning event on a physical pod): a
	// managed physical pod without the annotations naming its virtual pod
	// was deleted.
	ReasonMissingVirtualPodMapping = "MissingVirtualPodMapping"
	// ReasonVirtualPodGone (event on a physical pod): the virtual pod it was
	// made for is gone or replaced, so the physical pod was deleted.
	ReasonVirtualPodGone = "VirtualPodGone"
	// ReasonPhysicalPodMappingRefused (Warning event on a virtual pod): its
	// mapping annotations name a physical pod that Kubeocean did not make
	// for it, so a kubelet API request for it was refused.
	ReasonPhysicalPodMappingRefused = "PhysicalPodMappingRefused"
	// ReasonSyncerServingCertificate is the reason of the Approved condition
	// the manager writes on a syncer's serving certificate request.
	ReasonSyncerServingCertificate = "KubeoceanSyncerServingCertificate"
	// ReasonNotSyncerServingCertificate is the reason of the Denied
	// condition the manager writes on a request a syncer made that fails
	// its checks (the message says which).
	ReasonNotSyncerServingCertificate = "NotAKubeoceanSyncerServingCertificate"
	// EventCSRApproved (Normal event on a CertificateSigningRequest): the
	// manager approved it.
	EventCSRApproved = "Approved"
	// EventCSRDenied (Warning event on a CertificateSigningRequest): the
	// manager denied it.
	EventCSRDenied = "Denied"

	// EventConfigurationInvalid (Warning event on a binding): virtual nodes
	// are left as they are because a spec they depend on (the binding's node
	// selector, or a policy that may lend them) cannot be evaluated.
	EventConfigurationInvalid = "ConfigurationInvalid"
	// EventNodeNameCollision (Warning event on a binding): a Node that is not
	// Kubeocean's holds a virtual node's name.
	EventNodeNameCollision = "NodeNameCollision"
	// EventPolicyFinalizerKept (event on a binding): unbinding left the
	// reclaim finalizer on the policies it names, which another binding of
	// the same name may use.
	EventPolicyFinalizerKept = "PolicyFinalizerKept"
	// EventVolumesRetained (event on a binding): unbinding left the physical
	// volumes it lists in place, with their data.
	EventVolumesRetained = "VolumesRetained"

	// ReasonResizing (event, and reason of the Resizing condition, on a
	// virtual PVC): the physical cluster is resizing the claim's volume.
	ReasonResizing = "Resizing"
	// ReasonVolumeResizeFailed (Warning event and condition reason on a
	// virtual PVC): the physical cluster refused or failed the resize; the
	// message says why.
	ReasonVolumeResizeFailed = "VolumeResizeFailed"
	// ReasonVolumeResizeSuccessful (event on a virtual PVC): the volume has
	// the size the claim asks for.
	ReasonVolumeResizeSuccessful = "VolumeResizeSuccessful"

	// ReasonPhysicalNameConflict (Warning event on a virtual ConfigMap,
	// Secret, PVC or PV): its physical name is taken by an object Kubeocean
	// did not make for it, so it is not copied.
	ReasonPhysicalNameConflict = "PhysicalNameConflict"
	// ReasonKubeoceanMarksRestored (Warning event on a virtual object):
	// someone removed its synced-by label and finalizer while pods of the
	// binding use it; they are put back.
	ReasonKubeoceanMarksRestored = "KubeoceanMarksRestored"

	// EventDraining (event on a virtual node): it is being removed; the
	// message says why (binding deleted, physical node gone, no longer
	// selected, no policy lends it).
	EventDraining = "Draining"
	// EventProvisioning (event on a virtual PVC): the claim was made in the
	// physical cluster, on the node the message names.
	EventProvisioning = "Provisioning"
	// EventProvisioningSucceeded (event on a virtual PVC): its volume was
	// provisioned in the physical cluster.
	EventProvisioningSucceeded = "ProvisioningSucceeded"
	// EventSyncerCleanedUp (event on a binding): the syncer's unbinding
	// cleanup is done.
	EventSyncerCleanedUp = "SyncerCleanedUp"
)

// Reasons of the conditions and events on ResourceLeasingPolicies
// (docs/operations.md §5 and §6).
const (
	// ReasonValid (condition Valid, True): the spec can be applied.
	ReasonValid = "Valid"
	// ReasonInvalidSpec (condition Valid of a policy, or Ready of a binding,
	// False): the spec fails the controllers' validation; the message lists
	// the fields.
	ReasonInvalidSpec = "InvalidSpec"
	// ReasonInTimeWindow (condition Active, True): the policy is inside one
	// of its time windows, which the message names.
	ReasonInTimeWindow = "InTimeWindow"
	// ReasonOutsideTimeWindows (condition Active, False): the policy is
	// outside every window; the message says until when.
	ReasonOutsideTimeWindows = "OutsideTimeWindows"
	// ReasonNoTimeWindows (condition Active, True): the policy has no
	// windows, so it always lends.
	ReasonNoTimeWindows = "NoTimeWindows"

	// EventPolicyActivated (event on a policy): it entered a time window (or
	// has none).
	EventPolicyActivated = "Activated"
	// EventPolicyDeactivated (event on a policy): it left its time windows.
	EventPolicyDeactivated = "Deactivated"
	// EventInvalidPolicy (Warning event on a policy): its spec cannot be
	// applied.
	EventInvalidPolicy = "InvalidPolicy"
	// EventPolicyReclaimed (event on a deleted policy): no virtual node is
	// lent by it any more, so its finalizer is removed.
	EventPolicyReclaimed = "Reclaimed"
)

// Reasons of a binding's SyncerReady condition (also Ready's while the
// syncer is not running) and the events the manager records on a binding
// about its syncer (docs/operations.md §4 and §6).
const (
	// ReasonSyncerRunning (True): the syncer runs; in deployment mode an
	// available replica, in-process its caches synced.
	ReasonSyncerRunning = "SyncerRunning"
	// ReasonSyncerStarting: the syncer Deployment is being created, or an
	// in-process syncer waits for its caches.
	ReasonSyncerStarting = "SyncerStarting"
	// ReasonSyncerFailed: an in-process syncer stopped with an error; it is
	// restarted with backoff.
	ReasonSyncerFailed = "SyncerFailed"
	// ReasonSyncerTemplateError: the syncer templates do not render for the
	// binding.
	ReasonSyncerTemplateError = "SyncerTemplateError"
	// ReasonSyncerRollingOut: the syncer Deployment is rolling out.
	ReasonSyncerRollingOut = "SyncerRollingOut"
	// ReasonSyncerUnavailable: the syncer Deployment has no available
	// replica.
	ReasonSyncerUnavailable = "SyncerUnavailable"
	// ReasonSyncerDeploymentFailed: the Deployment does not progress, or an
	// object the templates render is not the binding's.
	ReasonSyncerDeploymentFailed = "SyncerDeploymentFailed"
	// ReasonSyncerDeploymentDeleting: the syncer Deployment is being
	// deleted.
	ReasonSyncerDeploymentDeleting = "SyncerDeploymentDeleting"

	// EventSyncerCreated: a syncer object was created from the templates.
	EventSyncerCreated = "SyncerCreated"
	// EventSyncerUpdated: a syncer object was updated from the templates.
	EventSyncerUpdated = "SyncerUpdated"
	// EventSyncerDeleted: a syncer Deployment was deleted (unbinding, or a
	// leftover after a template renamed it).
	EventSyncerDeleted = "SyncerDeleted"
	// EventSyncerStarted: an in-process syncer started.
	EventSyncerStarted = "SyncerStarted"
	// EventSyncerRestarted: an in-process syncer restarted after a spec or
	// kubeconfig change, or after a failure.
	EventSyncerRestarted = "SyncerRestarted"
	// EventSyncerStopped: an in-process syncer stopped.
	EventSyncerStopped = "SyncerStopped"
	// EventSyncerCrashed (Warning): an in-process syncer failed; the message
	// holds the error.
	EventSyncerCrashed = "SyncerCrashed"
)

// Reasons of a ClusterBinding's Ready and Connected conditions, which the
// manager writes, and the events it records on a binding when it unbinds
// (docs/operations.md §4 and §6). Each time Ready changes the manager also
// records an event with Ready's reason. The config errors of the
// kubeconfig (ReasonKubeconfigSecretNotFound, …) are further down.
const (
	// ReasonPending (Ready, Unknown): first sight; the checks are running.
	ReasonPending = "Pending"
	// ReasonReady (Ready, True): valid, connected, and the syncer runs.
	ReasonReady = "Ready"
	// ReasonConnected (Connected, True): the physical cluster answered and
	// the credentials allow what the syncer needs.
	ReasonConnected = "Connected"
	// ReasonNotChecked (Connected, Unknown): not checked yet, or the spec is
	// invalid so no check was made.
	ReasonNotChecked = "NotChecked"
	// ReasonSyncerNotStarted (SyncerReady): the syncer starts once the
	// binding is valid and connected.
	ReasonSyncerNotStarted = "SyncerNotStarted"
	// ReasonUnbinding (Ready, False): the binding is deleted and its syncer
	// is cleaning up.
	ReasonUnbinding = "Unbinding"
	// ReasonUnbindingBlocked (Ready, False): the binding is deleted but the
	// syncer cannot run to clean up.
	ReasonUnbindingBlocked = "UnbindingBlocked"
	// ReasonInvalidName (Ready, False): the binding's name is too long for
	// the label values it ends up in.
	ReasonInvalidName = "InvalidName"
	// ReasonDuplicateClusterID (Ready, False): an older binding, named in
	// the message, already uses the clusterID.
	ReasonDuplicateClusterID = "DuplicateClusterID"

	// ReasonKubeconfigSecretUnreadable (Ready, Connected, False): reading the
	// kubeconfig Secret, or building clients from it, failed with an error
	// that is no config error.
	ReasonKubeconfigSecretUnreadable = "KubeconfigSecretUnreadable"
	// ReasonUnreachable (Ready, Connected, False): the physical API server
	// did not answer.
	ReasonUnreachable = "Unreachable"
	// ReasonAccessReviewFailed (Ready, Connected, False): the permissions
	// could not be checked.
	ReasonAccessReviewFailed = "AccessReviewFailed"
	// ReasonInsufficientPermissions (Ready, Connected, False): the
	// credentials lack permissions the syncer needs; the message lists them.
	ReasonInsufficientPermissions = "InsufficientPermissions"
	// ReasonPhysicalClusterIdentityUnreadable (Ready, Connected, False): the
	// physical cluster answered but its identity (the kube-system
	// namespace's UID) could not be read.
	ReasonPhysicalClusterIdentityUnreadable = "PhysicalClusterIdentityUnreadable"

	// EventUnbound (event on a binding): the syncer is stopped and the
	// binding released.
	EventUnbound = "Unbound"
	// EventForceUnbind (Warning event on a binding): the binding was released
	// without the syncer's cleanup; the message lists possible leftovers.
	EventForceUnbind = "ForceUnbind"
)

// The conditions the top-down pod controller writes on virtual pods, and
// their reasons and those of its events. The usual pod gets none of these
// conditions: each is written False when something keeps the pod back, and
// True only over a False.
const (
	// PodConditionPhysicalPodCreated tells whether the pod's physical pod
	// could be created. It is written False, with the reason and the
	// physical cluster's own words, when the pod is not created (refused
	// by the physical apiserver, breaking the mount namespace's Pod
	// Security level, a DaemonSet's pod, ...), and True once it is.
	PodConditionPhysicalPodCreated corev1.PodConditionType = "kubeocean.io/PhysicalPodCreated"
	// PodConditionDependenciesReady tells whether the objects the pod uses
	// could be copied to the physical cluster: False while it waits for
	// them, True once they are there.
	PodConditionDependenciesReady corev1.PodConditionType = "kubeocean.io/DependenciesReady"
	// PodConditionEphemeralContainersAllowed tells whether the ephemeral
	// containers added to the pod (kubectl debug) may be added to its
	// physical pod: False, naming each refused container and why, when
	// one would break the mount namespace's Pod Security level.
	PodConditionEphemeralContainersAllowed corev1.PodConditionType = "kubeocean.io/EphemeralContainersAllowed"

	// ReasonPodSecurityViolation (PhysicalPodCreated or
	// EphemeralContainersAllowed, False): the physical pod, or the
	// ephemeral container, would break the Pod Security level the mount
	// namespace enforces; it is not sent.
	ReasonPodSecurityViolation = "PodSecurityViolation"
	// ReasonDaemonSetPodNotSynced (PhysicalPodCreated, False): the pod
	// belongs to a DaemonSet, whose pods the syncer does not run (its
	// --sync-daemonset-pods is off).
	ReasonDaemonSetPodNotSynced = "DaemonSetPodNotSynced"
	// ReasonVolumeSourceNotAllowed (PhysicalPodCreated, False): a claim of
	// the pod is bound to a PersistentVolume whose source the lender does
	// not allow (ResourceLeasingPolicy spec.allowances).
	ReasonVolumeSourceNotAllowed = "VolumeSourceNotAllowed"
	// ReasonHostPortInUse (PhysicalPodCreated, False): a host port the pod
	// asks for is bound on its physical node by a pod the binding does not
	// run; it is not sent until the port is free.
	ReasonHostPortInUse = "HostPortInUse"
	// ReasonPhysicalPodCreated (PhysicalPodCreated, True): created after
	// an earlier refusal.
	ReasonPhysicalPodCreated = "PhysicalPodCreated"
	// ReasonPhysicalPodRejected (PhysicalPodCreated, False, and a Warning
	// event): the physical cluster refused the pod.
	ReasonPhysicalPodRejected = "PhysicalPodRejected"
	// ReasonRuntimeClassNotAllowed (PhysicalPodCreated, False): the pod
	// names a runtime class the lender's allowances do not list.
	ReasonRuntimeClassNotAllowed = "RuntimeClassNotAllowed"
	// ReasonVolumeSourceNotSupported (PhysicalPodCreated, False): a
	// projected volume of the pod has a source other than configMap,
	// secret, downwardAPI and serviceAccountToken.
	ReasonVolumeSourceNotSupported = "VolumeSourceNotSupported"
	// ReasonEphemeralContainersAllowed (EphemeralContainersAllowed, True):
	// no ephemeral container of the pod is refused any more.
	ReasonEphemeralContainersAllowed = "EphemeralContainersAllowed"

	// ReasonDependencyNotReady (DependenciesReady, False): a ConfigMap,
	// Secret or PVC the pod uses cannot be copied yet (missing, being
	// deleted, PVC not bound).
	ReasonDependencyNotReady = "DependencyNotReady"
	// ReasonDependencyConflict (DependenciesReady, False): the physical
	// name of a dependency is taken by an object Kubeocean did not make;
	// someone must remove it.
	ReasonDependencyConflict = "DependencyConflict"
	// ReasonDependenciesReady (DependenciesReady, True): all dependencies
	// are copied.
	ReasonDependenciesReady = "DependenciesReady"

	// ReasonPhysicalPodLost is the virtual pod's status reason once its
	// physical pod is gone while it ran (deleted, evicted, its node
	// removed); the pod is Failed.
	ReasonPhysicalPodLost = "PhysicalPodLost"
	// ReasonPhysicalPodNameTaken (Warning event on a virtual pod): a pod
	// Kubeocean did not make for this virtual pod has the physical name.
	ReasonPhysicalPodNameTaken = "PhysicalPodNameTaken"
	// ReasonPhysicalPodMappingMismatch (Warning event on a virtual pod): its
	// mapping annotations name a physical pod this binding would not
	// have made for it.
	ReasonPhysicalPodMappingMismatch = "PhysicalPodMappingMismatch"
	// ReasonTokenRequestFailed (Warning event on a virtual pod): no
	// service-account token could be issued for the pod.
	ReasonTokenRequestFailed = "TokenRequestFailed"
	// ReasonEphemeralContainersRejected (Warning event on a virtual pod):
	// the physical cluster refused the ephemeral containers added to it
	// (kubectl debug).
	ReasonEphemeralContainersRejected = "EphemeralContainersRejected"
)

// Reasons a dependency of a virtual pod (a ConfigMap, Secret,
// PersistentVolumeClaim or its PersistentVolume) cannot be copied yet. The
// pod waits for it; the DependenciesReady condition (reason
// ReasonDependencyNotReady) names the object and one of these.
const (
	// ReasonDependencyNotFound: the virtual object does not exist (yet). A
	// pod whose reference is optional goes ahead without it.
	ReasonDependencyNotFound = "NotFound"
	// ReasonDependencyDeleting: the virtual object is being deleted.
	ReasonDependencyDeleting = "Deleting"
	// ReasonDependencyPVCNotBound: the virtual claim is not Bound yet.
	ReasonDependencyPVCNotBound = "PVCNotBound"
	// ReasonDependencyPVCNoVolumeName: the virtual claim is Bound but names
	// no volume.
	ReasonDependencyPVCNoVolumeName = "PVCNoVolumeName"
	// ReasonDependencyPVNotBoundToClaim: the virtual volume's claimRef does
	// not name the claim that names it.
	ReasonDependencyPVNotBoundToClaim = "PVNotBoundToClaim"
	// ReasonDependencyServiceAccountToken: the Secret is a service-account
	// token of the virtual cluster. It is never copied: it would hand
	// virtual-cluster credentials to the physical cluster, whose token
	// controller would delete it anyway.
	ReasonDependencyServiceAccountToken = "ServiceAccountToken"
	// ReasonDependencyPhysicalNamespaceMissing: a CSI Secret's namespace does
	// not exist in the physical cluster; Kubeocean creates no namespaces
	// there.
	ReasonDependencyPhysicalNamespaceMissing = "PhysicalNamespaceMissing"
	// ReasonDependencyPhysicalCopyTerminating: the physical copy is being
	// deleted (e.g. a claim held by pvc-protection) and can be neither
	// updated nor made again until it is gone.
	ReasonDependencyPhysicalCopyTerminating = "PhysicalCopyTerminating"
	// ReasonDependencyHolderClaimMissing: the claim's volume was provisioned
	// by this binding, but the holder claim that keeps it in the physical
	// cluster (LabelVolumeHolder) is gone or holds another volume.
	ReasonDependencyHolderClaimMissing = "HolderClaimMissing"
	// ReasonDependencyVolumeOfAnotherCluster: the claim's volume was
	// provisioned in another binding's physical cluster, where it stays.
	ReasonDependencyVolumeOfAnotherCluster = "VolumeOfAnotherCluster"
)

// Reasons a ClusterBinding's kubeconfig Secret cannot be used (the
// Connected condition, and pkg/remotecluster's ConfigError.Reason). Only a
// change to the Secret or to the binding mends them, so nothing retries
// them before.
const (
	// ReasonKubeconfigSecretNotFound: the kubeconfig Secret does not exist.
	ReasonKubeconfigSecretNotFound = "KubeconfigSecretNotFound"
	// ReasonKubeconfigKeyMissing: the Secret has no kubeconfig key, or an
	// empty one.
	ReasonKubeconfigKeyMissing = "KubeconfigKeyMissing"
	// ReasonKubeconfigInvalid: the kubeconfig cannot be parsed or turned
	// into a usable client configuration.
	ReasonKubeconfigInvalid = "KubeconfigInvalid"
	// ReasonKubeconfigNotAllowed: the kubeconfig relies on what a Secret
	// must not carry, such as exec plugins or paths on the local
	// filesystem.
	ReasonKubeconfigNotAllowed = "KubeconfigNotAllowed"
)
