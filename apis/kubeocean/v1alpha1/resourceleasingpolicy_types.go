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
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ResourceLeasingPolicy says which nodes of a physical cluster are lent to a
// ClusterBinding, how much of each resource, and when. It lives in the
// physical cluster.
//
// +genclient
// +genclient:nonNamespaced
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster,shortName=rlp,categories=kubeocean
// +kubebuilder:printcolumn:name="Cluster",type=string,JSONPath=".spec.cluster"
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=".status.phase"
// +kubebuilder:printcolumn:name="Window Start",type=string,JSONPath=".status.activeTimeWindow.start",description="When the time window the policy is in now opened (HH:MM, in the policy's time zone)"
// +kubebuilder:printcolumn:name="Window End",type=string,JSONPath=".status.activeTimeWindow.end",description="When the time window the policy is in now closes (HH:MM, in the policy's time zone)"
// +kubebuilder:printcolumn:name="Next Transition",type=string,JSONPath=".status.nextTransitionTime",description="When the policy next enters or leaves a window (a date column would print a future time as <invalid>)"
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=".metadata.creationTimestamp"
type ResourceLeasingPolicy struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is what is lent, to whom and when.
	// +required
	Spec ResourceLeasingPolicySpec `json:"spec"`
	// Status is what the syncer observed of the policy.
	// +optional
	Status ResourceLeasingPolicyStatus `json:"status,omitempty"`
}

// ResourceLeasingPolicySpec is what the owner of the physical cluster lends.
type ResourceLeasingPolicySpec struct {
	// Cluster is the name of the ClusterBinding this policy lends to.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Cluster string `json:"cluster"`

	// MountNamespace is the mount namespace of the binding this policy
	// lends to. Since a mount namespace belongs to exactly one binding, a
	// policy that sets it belongs to exactly one binding of one virtual
	// cluster: another virtual cluster's binding of the same name neither
	// uses it nor releases its finalizer. Unset: every binding named
	// spec.cluster uses it (as before).
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:XValidation:rule="self.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?$')",message="mountNamespace must be a valid namespace name: lowercase letters, digits and '-', starting and ending with a letter or digit"
	MountNamespace string `json:"mountNamespace,omitempty"`

	// NodeSelector picks the nodes the policy applies to; empty selects all.
	// +optional
	NodeSelector *corev1.NodeSelector `json:"nodeSelector,omitempty"`

	// TimeWindows are the times at which the nodes are lent; an empty list
	// lends them at all times.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=64
	TimeWindows []TimeWindow `json:"timeWindows,omitempty"`

	// TimeZone is the IANA time zone the windows are read in, such as UTC,
	// Europe/Berlin or Etc/GMT+5 (default UTC). A name that is not a known
	// zone puts the policy in Failed (Valid=False) and leaves the nodes as
	// they were.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:XValidation:rule="self.matches('^[A-Za-z][-+_A-Za-z0-9]*(/[A-Za-z0-9][-+_A-Za-z0-9]*)*$')",message="timeZone must be an IANA time zone name such as UTC, Europe/Berlin or Etc/GMT+5: letters, digits, '-', '+' and '_' in parts separated by '/'"
	TimeZone string `json:"timeZone,omitempty"`

	// ResourceLimits cap what is lent per resource (at most 16, one per
	// resource name); resources not listed are lent at 100% of what is
	// available.
	// +optional
	// +listType=map
	// +listMapKey=resource
	// +kubebuilder:validation:MaxItems=16
	ResourceLimits []ResourceLimit `json:"resourceLimits,omitempty"`

	// ForceReclaim evicts the virtual pods from a node once it is outside its
	// time windows and the graceful reclaim period has passed.
	// +optional
	ForceReclaim bool `json:"forceReclaim,omitempty"`

	// GracefulReclaimPeriodSeconds is how long pods may keep running outside
	// the time windows before a forced reclaim evicts them (0 = at once).
	// +optional
	// +kubebuilder:validation:Minimum=0
	GracefulReclaimPeriodSeconds int32 `json:"gracefulReclaimPeriodSeconds,omitempty"`

	// Allowances are what the borrower's pods may use in this cluster beyond
	// what Kubeocean lets every pod use. Without them (the default), a pod's
	// labels and annotations reach its physical pod only under
	// Kubeocean-translated keys, no runtime class is set, and a
	// PersistentVolume is copied only if the syncer provisioned it. A binding
	// with several policies gets what all of them allow.
	// +optional
	Allowances *WorkloadAllowances `json:"allowances,omitempty"`
}

// WorkloadAllowances list what a lender lets the borrower's pods use in the
// physical cluster. Each is an exception to a default that keeps the
// borrower's tenants from reaching beyond their own pods.
type WorkloadAllowances struct {
	// LabelKeys are the label keys of virtual pods that reach their physical
	// pods as they are, so that the physical cluster's NetworkPolicies,
	// webhooks and controllers may act on them. An entry is a key, or a
	// prefix followed by "/*" for every key under it (e.g. "example.com/*").
	// Keys under kubeocean.io are never passed on.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MaxLength=317
	LabelKeys []string `json:"labelKeys,omitempty"`

	// AnnotationKeys are the annotation keys of virtual pods that reach their
	// physical pods as they are, in the form of LabelKeys.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MaxLength=317
	AnnotationKeys []string `json:"annotationKeys,omitempty"`

	// RuntimeClassNames are the runtime classes a virtual pod may name; any
	// other is refused rather than dropped, since the pod asked for it.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=32
	// +kubebuilder:validation:items:MaxLength=253
	RuntimeClassNames []string `json:"runtimeClassNames,omitempty"`

	// VolumeSources are the in-tree PersistentVolume sources that a virtual
	// PersistentVolume may have and be copied with: hostPath, local, nfs,
	// iscsi or fc. Each reaches a node's file system or a network storage
	// server of the lender's choosing, so none is allowed by default.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=5
	// +kubebuilder:validation:items:Enum=hostPath;local;nfs;iscsi;fc
	VolumeSources []string `json:"volumeSources,omitempty"`

	// CSIDrivers are the CSI drivers whose virtual PersistentVolumes are
	// copied with their volume handle: the handle names a volume of the
	// lender's storage, which any tenant could name otherwise.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=32
	// +kubebuilder:validation:items:MaxLength=63
	CSIDrivers []string `json:"csiDrivers,omitempty"`
}

// TimeWindow is a daily period, in the policy's time zone. A window whose end
// is before its start crosses midnight and belongs to the day it starts on;
// a window whose end equals its start lasts a whole day.
type TimeWindow struct {
	// Start is the local time the window opens, as HH:MM (00:00 to 23:59).
	// +required
	// +kubebuilder:validation:MaxLength=5
	// +kubebuilder:validation:XValidation:rule="self.matches('^([01][0-9]|2[0-3]):[0-5][0-9]$')",message="start must be a time of day HH:MM between 00:00 and 23:59"
	Start string `json:"start"`
	// End is the local time the window closes, as HH:MM (00:00 to 23:59).
	// +required
	// +kubebuilder:validation:MaxLength=5
	// +kubebuilder:validation:XValidation:rule="self.matches('^([01][0-9]|2[0-3]):[0-5][0-9]$')",message="end must be a time of day HH:MM between 00:00 and 23:59"
	End string `json:"end"`
	// Days the window opens on, as English day names in any case (monday,
	// Monday, MONDAY); empty means every day.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=7
	Days []DayOfWeek `json:"days,omitempty"`
}

// DayOfWeek is an English day name, read in any case; the constants below
// are its lowercase spellings.
// +kubebuilder:validation:MaxLength=9
// +kubebuilder:validation:XValidation:rule="self.lowerAscii() in ['monday', 'tuesday', 'wednesday', 'thursday', 'friday', 'saturday', 'sunday']",message="days must be English day names (monday to sunday, in any case)"
type DayOfWeek string

// The days of the week.
const (
	Monday    DayOfWeek = "monday"
	Tuesday   DayOfWeek = "tuesday"
	Wednesday DayOfWeek = "wednesday"
	Thursday  DayOfWeek = "thursday"
	Friday    DayOfWeek = "friday"
	Saturday  DayOfWeek = "saturday"
	Sunday    DayOfWeek = "sunday"
)

// ResourceLimit caps how much of one resource is lent. When both are set,
// the smaller of Quantity and Percent (of what is available) wins.
//
// +kubebuilder:validation:XValidation:rule="has(self.quantity) || has(self.percent)",message="each resource limit needs a quantity or a percent"
type ResourceLimit struct {
	// Resource is the resource name, such as cpu, memory or nvidia.com/gpu.
	// +required
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Resource corev1.ResourceName `json:"resource"`

	// The rule on Quantity reads its sign rather than parsing it: the CEL
	// cost of anything done with the string grows with its size, which the
	// apiserver cannot bound for an int-or-string (it assumes 3 MiB), and
	// the cost of quantity() would allow only a handful of limits; even
	// this rule is why a policy has at most 16 (one per resource name). It
	// also refuses "-0", which the Go side reads as 0.

	// Quantity is the most that is lent per node; it may not be negative.
	// +optional
	// +kubebuilder:validation:XValidation:rule="!string(self).startsWith('-')",message="quantity must not be negative"
	Quantity *resource.Quantity `json:"quantity,omitempty"`
	// Percent is the most that is lent per node, as a share (0 to 100) of
	// what is available there.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100
	Percent *int32 `json:"percent,omitempty"`
}

// ResourceLeasingPolicyPhase summarises the state of a policy.
// +kubebuilder:validation:Enum=Active;Inactive;Failed
type ResourceLeasingPolicyPhase string

const (
	// ResourceLeasingPolicyActive: valid and inside a time window.
	ResourceLeasingPolicyActive ResourceLeasingPolicyPhase = "Active"
	// ResourceLeasingPolicyInactive: valid and outside every time window.
	ResourceLeasingPolicyInactive ResourceLeasingPolicyPhase = "Inactive"
	// ResourceLeasingPolicyFailed: the spec cannot be applied.
	ResourceLeasingPolicyFailed ResourceLeasingPolicyPhase = "Failed"
)

// Condition types of a ResourceLeasingPolicy.
const (
	// ResourceLeasingPolicyConditionValid is True when the spec can be applied.
	ResourceLeasingPolicyConditionValid = "Valid"
	// ResourceLeasingPolicyConditionActive is True inside a time window.
	ResourceLeasingPolicyConditionActive = "Active"
)

// ResourceLeasingPolicyStatus is what the syncer observed.
type ResourceLeasingPolicyStatus struct {
	// Phase summarises the policy: Active (valid and inside a time window),
	// Inactive (valid and outside every window) or Failed (the spec cannot
	// be applied; see the Valid condition).
	// +optional
	Phase ResourceLeasingPolicyPhase `json:"phase,omitempty"`
	// Conditions are the policy's detailed state: Valid (the spec can be
	// applied; when False its message says what to fix) and Active (inside
	// a time window).
	// +optional
	// +listType=map
	// +listMapKey=type
	// +patchStrategy=merge
	// +patchMergeKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty" patchStrategy:"merge" patchMergeKey:"type"`
	// ActiveTimeWindow is the window the policy is in now, if any.
	// +optional
	ActiveTimeWindow *TimeWindow `json:"activeTimeWindow,omitempty"`
	// NextTransitionTime is when the policy next enters or leaves a window.
	// +optional
	NextTransitionTime *metav1.Time `json:"nextTransitionTime,omitempty"`
	// ObservedGeneration is the spec generation the status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
}

// ResourceLeasingPolicyList is a list of ResourceLeasingPolicies.
//
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
type ResourceLeasingPolicyList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ResourceLeasingPolicy `json:"items"`
}
