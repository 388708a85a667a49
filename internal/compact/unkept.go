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

package compact

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Unkept is the object metadata a record does not keep (see the package
// doc): its getters return zero values and its setters do nothing. A type
// embeds it and defines the methods of what it does keep, which take
// precedence. It has no size; embed it as the first field, where it adds no
// padding.
type Unkept struct{}

func (Unkept) GetNamespace() string                          { return "" }
func (Unkept) SetNamespace(string)                           {}
func (Unkept) GetName() string                               { return "" }
func (Unkept) SetName(string)                                {}
func (Unkept) GetGenerateName() string                       { return "" }
func (Unkept) SetGenerateName(string)                        {}
func (Unkept) GetUID() types.UID                             { return "" }
func (Unkept) SetUID(types.UID)                              {}
func (Unkept) GetResourceVersion() string                    { return "" }
func (Unkept) SetResourceVersion(string)                     {}
func (Unkept) GetGeneration() int64                          { return 0 }
func (Unkept) SetGeneration(int64)                           {}
func (Unkept) GetSelfLink() string                           { return "" }
func (Unkept) SetSelfLink(string)                            {}
func (Unkept) GetCreationTimestamp() metav1.Time             { return metav1.Time{} }
func (Unkept) SetCreationTimestamp(metav1.Time)              {}
func (Unkept) GetDeletionTimestamp() *metav1.Time            { return nil }
func (Unkept) SetDeletionTimestamp(*metav1.Time)             {}
func (Unkept) GetDeletionGracePeriodSeconds() *int64         { return nil }
func (Unkept) SetDeletionGracePeriodSeconds(*int64)          {}
func (Unkept) GetLabels() map[string]string                  { return nil }
func (Unkept) SetLabels(map[string]string)                   {}
func (Unkept) GetAnnotations() map[string]string             { return nil }
func (Unkept) SetAnnotations(map[string]string)              {}
func (Unkept) GetFinalizers() []string                       { return nil }
func (Unkept) SetFinalizers([]string)                        {}
func (Unkept) GetOwnerReferences() []metav1.OwnerReference   { return nil }
func (Unkept) SetOwnerReferences([]metav1.OwnerReference)    {}
func (Unkept) GetManagedFields() []metav1.ManagedFieldsEntry { return nil }
func (Unkept) SetManagedFields([]metav1.ManagedFieldsEntry)  {}

var _ metav1.Object = Unkept{}
