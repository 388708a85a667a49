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

// Labels, annotations, taints and finalizers Kubeocean puts on objects. They
// are part of the contract: users select on them and tests assert them.
const (
	// LabelManagedBy marks objects Kubeocean created, with value ManagedByKubeocean.
	LabelManagedBy = "kubeocean.io/managed-by"
	// ManagedByKubeocean is the value of LabelManagedBy.
	ManagedByKubeocean = "kubeocean"

	// LabelSyncedByPrefix + clusterID marks a virtual object synced to that
	// physical cluster; see SyncedByLabel.
	LabelSyncedByPrefix = "kubeocean.io/synced-by-"
	// LabelUsedByPV marks a virtual Secret that a PersistentVolume refers to.
	LabelUsedByPV = "kubeocean.io/used-by-pv"
	// FinalizerPrefix + clusterID is the finalizer on virtual dependents; see
	// Finalizer.
	FinalizerPrefix = "kubeocean.io/finalizer-"

	// Virtual node labels: which binding and physical node a virtual node
	// stands for.
	LabelClusterBinding   = "kubeocean.io/cluster-binding"
	LabelClusterID        = "kubeocean.io/cluster-id"
	LabelPhysicalNodeName = "kubeocean.io/physical-node-name"
	// AnnotationPhysicalNodeName on a virtual node (and its CSINode) holds
	// the physical node's name, which may be longer than a label value; the
	// label of the same key is set only when the name fits one. Read both
	// through PhysicalNodeNameOf.
	AnnotationPhysicalNodeName = "kubeocean.io/physical-node-name"

	// LabelBindingUID on every object a syncer creates in the physical
	// cluster carries the UID of the ClusterBinding it serves, next to
	// LabelClusterID. The cluster ID is unique only within one virtual
	// cluster (the manager checks that); two virtual clusters may each
	// bind the same physical cluster under the same cluster ID and mount
	// namespace. The binding's UID is unique across them, so a syncer
	// selects, keeps in step and deletes only objects with its own UID.
	LabelBindingUID = "kubeocean.io/binding-uid"

	// AnnotationResourceLeasingPolicy on a virtual node names the policy
	// that lends it; a deleted policy keeps its finalizer until no virtual
	// node names it any more.
	AnnotationResourceLeasingPolicy = "kubeocean.io/resource-leasing-policy"

	// AnnotationKubeletPort on a virtual node records the port of its
	// kubelet API listener in the syncer, so that the node keeps its port
	// across syncer restarts.
	AnnotationKubeletPort = "kubeocean.io/kubelet-port"

	// Pod mapping annotations on the virtual pod.
	AnnotationPhysicalPodNamespace = "kubeocean.io/physical-pod-namespace"
	AnnotationPhysicalPodName      = "kubeocean.io/physical-pod-name"
	AnnotationPhysicalPodUID       = "kubeocean.io/physical-pod-uid"
	AnnotationLastSyncTime         = "kubeocean.io/last-sync-time"
	// Pod mapping annotations on the physical pod.
	AnnotationVirtualPodNamespace = "kubeocean.io/virtual-pod-namespace"
	AnnotationVirtualPodName      = "kubeocean.io/virtual-pod-name"
	AnnotationVirtualPodUID       = "kubeocean.io/virtual-pod-uid"
	// AnnotationLastApplied on a physical pod holds what the syncer last
	// wrote of the fields it keeps in step with the virtual pod (JSON), so
	// that what webhooks or people set on the physical side stays until
	// the virtual pod itself changes that key, as with kubectl apply.
	AnnotationLastApplied = "kubeocean.io/last-applied"
	// LabelVirtualNamespace on a physical pod is the namespace of its
	// virtual pod (a namespace name always fits a label value). With
	// LabelBindingUID it selects one binding's pods of one virtual
	// namespace, which a tenant's own labels never can: they reach
	// physical pods only translated (see package tenantmeta).
	LabelVirtualNamespace = "kubeocean.io/virtual-namespace"

	// LabelPodToken marks the token Secret of a physical pod (value
	// "true"): the virtual cluster's service-account tokens, CA and the
	// identity fields the pod reads, which the physical pod mounts.
	LabelPodToken = "kubeocean.io/pod-token"
	// AnnotationTokenRefreshAt on a token Secret is when its tokens are
	// due for renewal (RFC 3339).
	AnnotationTokenRefreshAt = "kubeocean.io/token-refresh-at"
	// AnnotationMetadataDigest on a token Secret is the digest of the
	// virtual pod's label and annotation values it serves to the pod's
	// downward API; the Secret is patched when it changes.
	AnnotationMetadataDigest = "kubeocean.io/metadata-digest"

	// Dependent-object mapping annotations (ConfigMaps, Secrets, PVCs, PVs).
	AnnotationPhysicalName      = "kubeocean.io/physical-name"
	AnnotationPhysicalNamespace = "kubeocean.io/physical-namespace"
	AnnotationVirtualName       = "kubeocean.io/virtual-name"
	AnnotationVirtualNamespace  = "kubeocean.io/virtual-namespace"

	// TaintVirtualNode keeps pods without a toleration off virtual nodes
	// (effect NoSchedule) unless the binding disables it.
	TaintVirtualNode = "kubeocean.io/vnode"

	// AnnotationLastAppliedMetadata records on each virtual node the
	// metadata Kubeocean last wrote (labels, annotations, taints, cordon).
	// Comparing it with the node tells Kubeocean's own from what users or
	// other controllers added, so updates replace ours and keep theirs.
	AnnotationLastAppliedMetadata = "kubeocean.io/last-applied-metadata"

	// AnnotationSyncerRenderHash on each object the manager renders for a
	// syncer is the hash of the rendering. The object is updated when a new
	// rendering hashes differently; edits by hand stay until then (delete
	// the object to get a fresh one at once).
	AnnotationSyncerRenderHash = "kubeocean.io/syncer-render-hash"
	// LabelCredential marks the Secrets in a mount namespace that
	// `kubeocean bind` binds the syncer's tokens to, with the value of the
	// ServiceAccount's name: deleting such a Secret revokes its token.
	LabelCredential = "kubeocean.io/credential"
	// AnnotationConnectBackoff on a binding keeps the backoff of its failing
	// connection across manager restarts, as JSON: consecutive failures,
	// when the next attempt is due, and the inputs (spec generation and
	// kubeconfig) they were counted for. It is removed once the binding
	// connects.
	AnnotationConnectBackoff = "kubeocean.io/connect-backoff"
	// TaintOutOfTimeWindows marks a virtual node outside its policy's time
	// windows: NoSchedule, then NoExecute once a forced reclaim is due.
	TaintOutOfTimeWindows = "kubeocean.io/out-of-time-windows"
	// TaintVirtualNodeDeleting marks a virtual node being drained before
	// deletion.
	TaintVirtualNodeDeleting = "kubeocean.io/vnode-deleting"
	// TaintPhysicalUnreachable (NoSchedule) marks a virtual node whose
	// physical apiserver does not answer: its pods keep running as last
	// seen, and nothing new is placed where it could not be created.
	TaintPhysicalUnreachable = "kubeocean.io/physical-unreachable"
	// NodeConditionPhysicalClusterReachable is the virtual node condition
	// that says whether the syncer hears from the physical apiserver; False
	// while it does not, with reason ReasonPhysicalAPIServerUnreachable.
	NodeConditionPhysicalClusterReachable = "kubeocean.io/PhysicalClusterReachable"
	// ReasonPhysicalAPIServerUnreachable and ReasonPhysicalAPIServerAnswers
	// are the reasons of that condition and of the events on the virtual
	// node when it changes.
	ReasonPhysicalAPIServerUnreachable = "PhysicalAPIServerUnreachable"
	ReasonPhysicalAPIServerAnswers     = "PhysicalAPIServerAnswers"

	// FinalizerClusterBindingManager holds a ClusterBinding until the
	// manager has stopped its syncer; FinalizerClusterBindingSyncer until
	// the syncer has removed what it created for the binding (virtual
	// nodes, physical objects, finalizers and labels on virtual objects).
	// The manager keeps the syncer running while the syncer's finalizer is
	// there, then drops its own.
	FinalizerClusterBindingManager = "kubeocean.io/manager"
	FinalizerClusterBindingSyncer  = "kubeocean.io/syncer"
	// AnnotationForceUnbind set to "true" on a ClusterBinding being deleted
	// lets the manager finish unbinding without the syncer's cleanup, for
	// a physical cluster that is gone or unreachable.
	AnnotationForceUnbind = "kubeocean.io/force-unbind"
	// AnnotationDeleteVolumes set to "true" on a ClusterBinding lets its
	// unbinding delete the physical volumes it provisioned, by their
	// class's reclaim policy. Without it, unbinding sets their reclaim
	// policy to Retain and leaves them in place, with their data.
	AnnotationDeleteVolumes = "kubeocean.io/delete-volumes"
	// AnnotationAcceptPhysicalCluster on a ClusterBinding set to the UID of
	// a physical cluster's kube-system namespace accepts that cluster in
	// place of the one in status.physicalClusterUID: the operator's
	// deliberate answer to ReasonPhysicalClusterChanged.
	AnnotationAcceptPhysicalCluster = "kubeocean.io/accept-physical-cluster"
	// AnnotationConfirmNodeRemoval on a ClusterBinding set to the token in
	// its NodeRemovalHeld condition lets a configuration change remove the
	// virtual nodes it holds (by eviction, never by deleting pods).
	AnnotationConfirmNodeRemoval = "kubeocean.io/confirm-node-removal"
	// ReasonPhysicalClusterChanged: the binding's kubeconfig reaches a
	// physical cluster other than the one it is bound to; the manager stops
	// acting on it (Connected=False) and the syncer freezes every node.
	ReasonPhysicalClusterChanged = "PhysicalClusterChanged"
	// ClusterBindingConditionNodeRemovalHeld is True while a configuration
	// change would remove virtual nodes that run pods, or more than the
	// syncer's --max-node-removal-fraction of them, and the syncer holds
	// them until AnnotationConfirmNodeRemoval carries the condition's
	// token; reason ReasonNodeRemovalUnconfirmed. The syncer writes it.
	ClusterBindingConditionNodeRemovalHeld = "NodeRemovalHeld"
	ReasonNodeRemovalUnconfirmed           = "NodeRemovalUnconfirmed"
	ReasonNoNodeRemovalHeld                = "NoNodeRemovalHeld"

	// ClusterBindingConditionPhysicalNamesTaken is True while pods of the
	// binding cannot be created because their physical names are taken by
	// objects the binding does not own and cannot prove its predecessor's
	// (ReasonPhysicalNameTakenByOther; the message names pods and what
	// holds each), False otherwise. The syncer writes it.
	ClusterBindingConditionPhysicalNamesTaken = "PhysicalNamesTaken"
	ReasonPhysicalNameTakenByOther            = "PhysicalNameTakenByOther"
	ReasonNoPhysicalNameTaken                 = "NoPhysicalNameTaken"

	// MountNamespaceClaim is the ConfigMap in a mount namespace that records
	// the one binding the namespace belongs to, written at the binding's
	// first connection and deleted by its unbinding. Its data keys are the
	// ClaimKey constants. A binding of another name or another virtual
	// cluster that names the namespace is refused (Connected=False, reason
	// ReasonMountNamespaceTaken); a binding recreated under the same name
	// in the same virtual cluster takes the claim over.
	MountNamespaceClaim = "kubeocean-binding"
	// ClaimKeyVirtualCluster: the UID of the virtual cluster's kube-system
	// namespace, which identifies the virtual cluster.
	ClaimKeyVirtualCluster = "virtualCluster"
	// ClaimKeyBinding, ClaimKeyBindingUID, ClaimKeyClusterID: the
	// ClusterBinding's name, UID and spec.clusterID.
	ClaimKeyBinding    = "binding"
	ClaimKeyBindingUID = "bindingUID"
	ClaimKeyClusterID  = "clusterID"
	// ReasonMountNamespaceTaken: the binding's mount namespace is claimed
	// by another binding (MountNamespaceClaim); nothing is run for the
	// binding until that binding releases it or the binding names another.
	ReasonMountNamespaceTaken = "MountNamespaceTaken"

	// FinalizerResourceLeasingPolicy holds a policy until the nodes it lent
	// are reclaimed.
	FinalizerResourceLeasingPolicy = "kubeocean.io/policy-reclaim"

	// Service mirrors (docs/networking.md). A mirror is a Service in the
	// mount namespace, named PhysicalName(namespace, name) of its
	// virtual Service, carrying the binding's identity labels and the
	// annotations AnnotationVirtualName and AnnotationVirtualNamespace.
	// The EndpointSlices the syncer writes for a mirror whose virtual
	// Service has no selector carry the binding's identity labels,
	// kubernetes.io/service-name=<mirror name>, the same two annotations
	// (naming the virtual Service) and
	// endpointslice.kubernetes.io/managed-by=EndpointSliceManagedBySyncer,
	// so that the physical cluster's EndpointSlice controllers leave them.
	// (A label value has no "/": the name kubeocean.io/syncer cannot be.)
	EndpointSliceManagedBySyncer = "syncer.kubeocean.io"
	// ReasonServiceMirrorNameTaken is the reason of the warning event on a
	// virtual Service whose mirror's name is taken in the mount namespace
	// by a Service that is not the binding's: it is left alone, and the
	// virtual Service has no mirror.
	ReasonServiceMirrorNameTaken = "MirrorNameTaken"
	// ReasonEndpointsInOtherClusters is the reason of the warning event a
	// binding's syncer records on a virtual Service it mirrors when some
	// of the Service's ready endpoints run where the binding's pods cannot
	// reach them (pods on another binding's virtual nodes or on the
	// virtual cluster's own nodes, whose networks the binding does not
	// declare joined in spec.network): the message says how many and
	// where. It is recorded once each time that set changes.
	ReasonEndpointsInOtherClusters = "EndpointsInOtherClusters"
	// EndpointSliceJoinedSuffix ends the name of the EndpointSlices a
	// syncer writes for a mirror of a Service with a selector, holding the
	// ready endpoints of the pods of bindings declared joined
	// (ClusterBinding spec.network), which the physical EndpointSlice
	// controller cannot see: <mirror>-joined-<n>. They carry what the
	// mirror's other syncer-written slices carry.
	EndpointSliceJoinedSuffix = "-joined"

	// DNSName names the objects of a binding's DNS server (kubeocean-dns)
	// in its mount namespace: the Deployment, the Service whose ClusterIP
	// is the nameserver of the binding's pods, the PodDisruptionBudget, the
	// ServiceAccount, and the Role and RoleBinding that let it read the
	// mount namespace's Services and EndpointSlices. All carry the
	// binding's identity labels; the DNS pods do not (they are no pods of
	// the binding's workloads).
	DNSName = "kubeocean-dns"
	// ClusterBindingConditionDNSReady is True once the binding's DNS
	// Service has a ClusterIP and its Deployment is available
	// (ReasonDNSAvailable). False says what pods get meanwhile:
	// ReasonDNSServiceMissing, no ClusterIP yet: pods created now keep the
	// physical cluster's DNS (their dnsPolicy as it is) until they are
	// recreated; ReasonDNSUnavailable, a ClusterIP but no available
	// replica: pods are pointed at it and their lookups fail until a
	// replica answers; ReasonDNSNameTaken: objects named DNSName in the
	// mount namespace are not the binding's, which are left alone (pods
	// keep the physical cluster's DNS). The syncer writes it.
	ClusterBindingConditionDNSReady = "DNSReady"
	ReasonDNSAvailable              = "DNSAvailable"
	ReasonDNSServiceMissing         = "DNSServiceMissing"
	ReasonDNSUnavailable            = "DNSUnavailable"
	ReasonDNSNameTaken              = "DNSNameTaken"
)

// SyncedByLabel is the label marking a virtual object synced to clusterID.
func SyncedByLabel(clusterID string) string { return LabelSyncedByPrefix + clusterID }

// Finalizer is the finalizer the syncer of clusterID puts on virtual dependents.
func Finalizer(clusterID string) string { return FinalizerPrefix + clusterID }

// Events of the physical cluster recorded on virtual pods and nodes
// (docs/events.md).
const (
	// EventComponentPrefix + the physical reporting component (kubelet,
	// default-scheduler, …) is the source component and reporting
	// controller of an event the syncer recorded on a virtual pod or node
	// from one in the physical cluster, so `kubectl describe` says that it
	// came through Kubeocean and from whom.
	EventComponentPrefix = "kubeocean-syncer/"
	// MetricEventsDropped counts the occurrences of physical events that
	// were not recorded on their virtual object, by binding and reason
	// (EventDropObjectRateLimit, EventDropBindingRateLimit).
	MetricEventsDropped = "kubeocean_syncer_events_dropped_total"
	// EventDropObjectRateLimit: a new virtual event found the per-object
	// token bucket (--event-qps-per-object) empty.
	EventDropObjectRateLimit = "object-rate-limit"
	// EventDropBindingRateLimit: a new virtual event found the binding's
	// token bucket (--event-qps) empty.
	EventDropBindingRateLimit = "binding-rate-limit"
)

// Kubeocean's marks on the volumes it provisions for virtual claims of a
// binding's StorageClasses, and on the physical claims that hold them.
const (
	// ParameterPhysicalStorageClass, a parameter of a virtual StorageClass,
	// names the physical class it stands for.
	ParameterPhysicalStorageClass = GroupName + "/physical-storage-class"
	// LabelVolumeHolder marks a physical claim in the mount namespace that
	// holds a provisioned volume.
	LabelVolumeHolder = GroupName + "/volume-holder"
	// AnnotationVirtualClaimNamespace, AnnotationVirtualClaimName and
	// AnnotationVirtualClaimUID, on a holder claim, name the virtual claim
	// it was made for.
	AnnotationVirtualClaimNamespace = GroupName + "/virtual-claim-namespace"
	AnnotationVirtualClaimName      = GroupName + "/virtual-claim-name"
	AnnotationVirtualClaimUID       = GroupName + "/virtual-claim-uid"
	// AnnotationHolderClaim, on a provisioned virtual PV, names its holder
	// claim in the mount namespace; AnnotationPhysicalVolume the physical PV.
	AnnotationHolderClaim    = GroupName + "/holder-claim"
	AnnotationPhysicalVolume = GroupName + "/physical-volume"
)

// The manager's mark on the syncer objects it renders and keeps per
// binding (Deployment, ServiceAccount, RBAC, …). It is Kubernetes'
// recommended label, not LabelManagedBy (kubeocean.io/managed-by), which
// marks the objects the syncer copies and mirrors.
const (
	// LabelAppManagedBy is app.kubernetes.io/managed-by; with value
	// AppManagedByManager it selects what the manager keeps.
	LabelAppManagedBy   = "app.kubernetes.io/managed-by"
	AppManagedByManager = "kubeocean-manager"
)

// How a tenant's pod labels and annotations reach the physical pod: keys
// under kubeocean.io are renamed so that a tenant cannot set what the
// physical cluster (or Kubeocean) reads there, and the originals are kept
// in two annotations.
const (
	// LabelDomain is the prefix of a tenant's label keys translated
	// readably.
	LabelDomain = "label." + GroupName
	// HashedLabelDomain is the prefix of a tenant's label keys too long to
	// translate readably; the name is a hash of the original key.
	HashedLabelDomain = "label-hash." + GroupName
	// AnnotationVirtualLabels on a physical pod holds the virtual pod's
	// labels, as a JSON object, under their original keys.
	AnnotationVirtualLabels = GroupName + "/virtual-labels"
	// AnnotationVirtualAnnotations on a physical pod holds the virtual
	// pod's annotations (but the mapping Kubeocean records on it), as a
	// JSON object, under their original keys.
	AnnotationVirtualAnnotations = GroupName + "/virtual-annotations"
)
