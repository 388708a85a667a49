package capacity

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// PodUsage implements metav1.Object so informers can key, index and hand it
// to typed event handlers. Only namespace, name and resourceVersion are
// kept; the rest is objectmeta.Unkept.
var _ metav1.Object = &PodUsage{}

func (u *PodUsage) GetNamespace() string              { return u.Namespace }
func (u *PodUsage) SetNamespace(namespace string)     { u.Namespace = namespace }
func (u *PodUsage) GetName() string                   { return u.Name }
func (u *PodUsage) SetName(name string)               { u.Name = name }
func (u *PodUsage) GetResourceVersion() string        { return u.ResourceVersion }
func (u *PodUsage) SetResourceVersion(version string) { u.ResourceVersion = version }
