// Package v1alpha1 holds the kubeocean.io/v1alpha1 API: ClusterBinding, which
// binds a physical (worker) cluster to the virtual cluster, and
// ResourceLeasingPolicy, which says how much of a physical cluster's idle
// capacity is lent to the virtual cluster, and when.
//
// +k8s:deepcopy-gen=package
// +groupName=kubeocean.io
package v1alpha1
