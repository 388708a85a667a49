package resources

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// PodUsage implements metav1.Object so informers can key, index and hand it
// to typed event handlers. Only namespace, name and resourceVersion are
// kept: the getters of everything else return zero values and its setters
// do nothing.
var _ metav1.Object = &PodUsage{}

func (u *PodUsage) GetNamespace() string                          { return u.Namespace }
func (u *PodUsage) SetNamespace(namespace string)                 { u.Namespace = namespace }
func (u *PodUsage) GetName() string                               { return u.Name }
func (u *PodUsage) SetName(name string)                           { u.Name = name }
func (u *PodUsage) GetResourceVersion() string                    { return u.ResourceVersion }
func (u *PodUsage) SetResourceVersion(version string)             { u.ResourceVersion = version }
func (u *PodUsage) GetGenerateName() string                       { return "" }
func (u *PodUsage) SetGenerateName(string)                        {}
func (u *PodUsage) GetUID() types.UID                             { return "" }
func (u *PodUsage) SetUID(types.UID)                              {}
func (u *PodUsage) GetGeneration() int64                          { return 0 }
func (u *PodUsage) SetGeneration(int64)                           {}
func (u *PodUsage) GetSelfLink() string                           { return "" }
func (u *PodUsage) SetSelfLink(string)                            {}
func (u *PodUsage) GetCreationTimestamp() metav1.Time             { return metav1.Time{} }
func (u *PodUsage) SetCreationTimestamp(metav1.Time)              {}
func (u *PodUsage) GetDeletionTimestamp() *metav1.Time            { return nil }
func (u *PodUsage) SetDeletionTimestamp(*metav1.Time)             {}
func (u *PodUsage) GetDeletionGracePeriodSeconds() *int64         { return nil }
func (u *PodUsage) SetDeletionGracePeriodSeconds(*int64)          {}
func (u *PodUsage) GetLabels() map[string]string                  { return nil }
func (u *PodUsage) SetLabels(map[string]string)                   {}
func (u *PodUsage) GetAnnotations() map[string]string             { return nil }
func (u *PodUsage) SetAnnotations(map[string]string)              {}
func (u *PodUsage) GetFinalizers() []string                       { return nil }
func (u *PodUsage) SetFinalizers([]string)                        {}
func (u *PodUsage) GetOwnerReferences() []metav1.OwnerReference   { return nil }
func (u *PodUsage) SetOwnerReferences([]metav1.OwnerReference)    {}
func (u *PodUsage) GetManagedFields() []metav1.ManagedFieldsEntry { return nil }
func (u *PodUsage) SetManagedFields([]metav1.ManagedFieldsEntry)  {}
