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

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ClusterBinding binds one physical (worker) cluster to the virtual cluster.
// It lives in the virtual cluster; the manager validates it, tests the
// connection through the referenced kubeconfig Secret and runs one syncer
// for it.
//
// +genclient
// +genclient:nonNamespaced
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster,shortName=cb,categories=kubeocean
// +kubebuilder:printcolumn:name="ClusterID",type=string,JSONPath=".spec.clusterID"
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=".status.phase"
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`,description="Why the binding is or is not Ready"
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=".metadata.creationTimestamp"
// +kubebuilder:validation:XValidation:rule="self.metadata.name.size() <= 63",message="metadata.name must be at most 63 characters: the syncer puts the binding's name in label values"
// +kubebuilder:validation:XValidation:rule="!has(self.spec.network) || !has(self.spec.network.joinedWith) || !(self.metadata.name in self.spec.network.joinedWith)",message="spec.network.joinedWith must not name the binding itself"
type ClusterBinding struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the physical cluster to bind and how.
	// +required
	Spec ClusterBindingSpec `json:"spec"`
	// Status is what the manager observed of the binding.
	// +optional
	Status ClusterBindingStatus `json:"status,omitempty"`
}

// ClusterBindingSpec is what the user asks for.
type ClusterBindingSpec struct {
	// ClusterID identifies the physical cluster in every name, label and
	// finalizer Kubeocean derives from it, so it may never change.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=24
	// +kubebuilder:validation:XValidation:rule="self.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?$')",message="clusterID must be a DNS label: lowercase letters, digits and '-', starting and ending with a letter or digit"
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="clusterID is immutable"
	ClusterID string `json:"clusterID"`

	// SecretRef names the Secret, in the virtual cluster, whose key
	// "kubeconfig" holds the kubeconfig of the physical cluster.
	// +required
	SecretRef SecretReference `json:"secretRef"`

	// NodeSelector picks the physical nodes to lend; empty selects all nodes.
	// +optional
	NodeSelector *corev1.NodeSelector `json:"nodeSelector,omitempty"`

	// MountNamespace is the namespace in the physical cluster where the pods
	// and their dependents are created. It may never change: the pods and
	// copies already made there would no longer be where the syncer looks,
	// so they could neither be kept in step nor cleaned up. Bind again (a
	// new binding) to move to another namespace.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:XValidation:rule="self.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?$')",message="mountNamespace must be a valid namespace name: lowercase letters, digits and '-', starting and ending with a letter or digit"
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="mountNamespace is immutable"
	MountNamespace string `json:"mountNamespace"`

	// ServiceNamespaces are virtual-cluster namespaces whose services the
	// synced pods may reach.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=256
	// +kubebuilder:validation:items:MinLength=1
	// +kubebuilder:validation:items:MaxLength=63
	// +kubebuilder:validation:XValidation:rule="self.all(ns, ns != '')",message="serviceNamespaces must not contain empty names"
	ServiceNamespaces []string `json:"serviceNamespaces,omitempty"`

	// DisableNodeDefaultTaint leaves out the kubeocean.io/vnode:NoSchedule
	// taint that otherwise keeps ordinary pods off virtual nodes.
	// +optional
	DisableNodeDefaultTaint bool `json:"disableNodeDefaultTaint,omitempty"`

	// Network declares which other pod networks the binding's pods reach
	// directly (docs/networking.md, "Several clusters"). Without it the
	// binding's network is isolated: its Service mirrors hold only the
	// endpoints its physical cluster reaches.
	// +optional
	Network *ClusterBindingNetwork `json:"network,omitempty"`
}

// ClusterBindingNetwork declares the pod networks joined (flat, routable
// both ways without NAT) with the binding's physical cluster. Kubeocean
// cannot check it: the administrators of the clusters make it true.
type ClusterBindingNetwork struct {
	// JoinedWith names other ClusterBindings whose physical clusters' pod
	// IPs the binding's pods reach as they are. The binding's Service
	// mirrors then hold the ready endpoints of those bindings' pods too,
	// with their pod IPs, in an EndpointSlice the syncer writes.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MinLength=1
	// +kubebuilder:validation:items:MaxLength=63
	// +kubebuilder:validation:XValidation:rule="self.all(n, n != '')",message="joinedWith must not contain empty names"
	JoinedWith []string `json:"joinedWith,omitempty"`
	// IncludeVirtualNodes declares the pod network of the virtual
	// cluster's own nodes (those that are not Kubeocean's virtual nodes)
	// joined too: their pods' endpoints are held the same way.
	// +optional
	IncludeVirtualNodes bool `json:"includeVirtualNodes,omitempty"`
}

// SecretReference names a Secret in a given namespace.
type SecretReference struct {
	// Name is the name of the Secret.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
	// Namespace is the namespace of the Secret, in the virtual cluster.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	Namespace string `json:"namespace"`
}

// ClusterBindingPhase summarises the state of a binding.
// +kubebuilder:validation:Enum=Pending;Ready;Failed
type ClusterBindingPhase string

const (
	// ClusterBindingPending: accepted, not yet validated or connected.
	ClusterBindingPending ClusterBindingPhase = "Pending"
	// ClusterBindingReady: valid, connected and its syncer runs.
	ClusterBindingReady ClusterBindingPhase = "Ready"
	// ClusterBindingFailed: invalid, unreachable, or its syncer cannot run.
	ClusterBindingFailed ClusterBindingPhase = "Failed"
)

// Condition types of a ClusterBinding.
const (
	// ClusterBindingConditionReady is True when the binding is fully working.
	ClusterBindingConditionReady = "Ready"
	// ClusterBindingConditionConnected is True when the physical cluster
	// answered through the referenced kubeconfig.
	ClusterBindingConditionConnected = "Connected"
	// ClusterBindingConditionSyncerReady is True when the binding's syncer runs.
	ClusterBindingConditionSyncerReady = "SyncerReady"
)

// ClusterBindingStatus is what the manager observed.
type ClusterBindingStatus struct {
	// Phase summarises the binding: Pending (accepted, not yet validated or
	// connected), Ready (valid, connected and its syncer runs) or Failed
	// (invalid, unreachable, or its syncer cannot run; see the conditions).
	// +optional
	Phase ClusterBindingPhase `json:"phase,omitempty"`
	// Conditions are the binding's detailed state: Ready (fully working),
	// Connected (the physical cluster answered through the kubeconfig) and
	// SyncerReady (the binding's syncer runs). A False condition's reason
	// and message say what to fix.
	// +optional
	// +listType=map
	// +listMapKey=type
	// +patchStrategy=merge
	// +patchMergeKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty" patchStrategy:"merge" patchMergeKey:"type"`
	// ObservedGeneration is the spec generation the status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// LastSyncTime is when the manager last reconciled the binding successfully.
	// +optional
	LastSyncTime *metav1.Time `json:"lastSyncTime,omitempty"`
	// PhysicalClusterUID identifies the physical cluster the binding is
	// bound to: the UID of its kube-system namespace, recorded by the
	// manager at the first successful connection. A kubeconfig that
	// reaches another cluster leaves everything as it is (condition
	// Connected=False, reason PhysicalClusterChanged) until the operator
	// accepts the new cluster with the annotation
	// kubeocean.io/accept-physical-cluster=<its UID>.
	// +optional
	PhysicalClusterUID string `json:"physicalClusterUID,omitempty"`
}

// ClusterBindingList is a list of ClusterBindings.
//
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
type ClusterBindingList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ClusterBinding `json:"items"`
}
