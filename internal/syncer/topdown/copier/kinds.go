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

package copier

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/kubeocean/kubeocean/internal/syncer/topdown/dependents"
	"github.com/kubeocean/kubeocean/internal/syncer/topdown/references"
)

// The controllers' names, which name their queues and metrics too.
const (
	ConfigMapsName = "topdown-configmap"
	SecretsName    = "topdown-secret"
	PVCsName       = "topdown-pvc"
	PVsName        = "topdown-pv"
)

// New builds the controllers of the copied kinds and registers their
// event handlers; it starts nothing. What the kinds differ in is the table
// below, one literal per kind, field by field in the same order.
func New(o Options) (*Controllers, error) {
	if err := o.validate(); err != nil {
		return nil, err
	}
	b := &builder{opts: o}
	s := o.Syncer
	configMaps, secrets := o.VirtualConfigMaps.Lister(), o.VirtualSecrets.Lister()
	claims, volumes := o.VirtualPVCs.Lister(), o.VirtualPVs.Lister()
	secretUsers := b.secretUsers(references.KindSecret)
	c := &Controllers{
		ConfigMaps: build(b, kind[*corev1.ConfigMap]{
			name: ConfigMapsName, lifecycle: dependents.KindConfigMap, namespaced: true,
			virtual: o.VirtualConfigMaps.Informer(), physical: o.PhysicalConfigMaps.Informer(),
			get: func(k cache.ObjectName) (*corev1.ConfigMap, error) {
				return configMaps.ConfigMaps(k.Namespace).Get(k.Name)
			},
			users:        b.podUsers(references.KindConfigMap),
			ensure:       dependents.EnsureByKey(s.EnsureConfigMap),
			release:      dependents.ByKey(s.ReleaseConfigMap),
			deleteOrphan: dependents.ByKey(s.DeleteOrphanConfigMap),
		}),
		Secrets: build(b, kind[*corev1.Secret]{
			name: SecretsName, lifecycle: dependents.KindSecret, namespaced: true,
			virtual: o.VirtualSecrets.Informer(), physical: o.PhysicalSecrets.Informer(),
			get: func(k cache.ObjectName) (*corev1.Secret, error) {
				return secrets.Secrets(k.Namespace).Get(k.Name)
			},
			users:        secretUsers,
			ensure:       secretUsers.ensure,
			release:      dependents.ByKey(s.ReleaseSecret),
			deleteOrphan: dependents.ByKey(s.DeleteOrphanSecret),
		}),
		PVCs: build(b, kind[*corev1.PersistentVolumeClaim]{
			name: PVCsName, lifecycle: dependents.KindPVC, namespaced: true,
			virtual: o.VirtualPVCs.Informer(), physical: o.PhysicalPVCs.Informer(),
			get: func(k cache.ObjectName) (*corev1.PersistentVolumeClaim, error) {
				return claims.PersistentVolumeClaims(k.Namespace).Get(k.Name)
			},
			users:        b.podUsers(references.KindPVC),
			ensure:       dependents.EnsureByKey(s.EnsurePVC),
			release:      dependents.ByKey(s.ReleasePVC),
			deleteOrphan: dependents.ByKey(s.DeleteOrphanPVC),
		}),
		PVs: build(b, kind[*corev1.PersistentVolume]{
			name: PVsName, lifecycle: dependents.KindPV, namespaced: false,
			virtual: o.VirtualPVs.Informer(), physical: o.PhysicalPVs.Informer(),
			get: func(k cache.ObjectName) (*corev1.PersistentVolume, error) {
				return volumes.Get(k.Name)
			},
			users:        b.claimUsers(),
			ensure:       ensureByName(s.EnsurePV),
			release:      byName(s.ReleasePV),
			deleteOrphan: byName(s.DeleteOrphanPV),
		}),
	}
	if b.err != nil {
		return nil, b.err
	}
	return c, nil
}
