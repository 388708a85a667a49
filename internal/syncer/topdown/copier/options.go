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
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	corev1informers "k8s.io/client-go/informers/core/v1"
	"k8s.io/utils/clock"

	"github.com/kubeocean/kubeocean/internal/syncer/topdown/dependents"
	"github.com/kubeocean/kubeocean/pkg/controller"
)

// Options are the dependencies of the controllers. All but PhysicalPods,
// GracePeriod, Metrics and Clock are required.
type Options struct {
	// ClusterID and MountNamespace are the binding's.
	ClusterID, MountNamespace string
	// BindingUID is the binding's; with ClusterID, the identity of its
	// physical objects.
	BindingUID types.UID
	// Syncer makes and removes the copies.
	Syncer *dependents.Syncer

	// The Virtual* informers of the copied kinds are scoped to the label
	// kubeocean.io/synced-by-<clusterID>: the objects marked for this
	// binding. The Physical* ones are scoped to the binding's copies (label
	// kubeocean.io/managed-by=kubeocean and its identity; the namespaced
	// ones to MountNamespace). CSI Secret copies outside the mount
	// namespace are not watched; they are read live.
	VirtualConfigMaps, PhysicalConfigMaps corev1informers.ConfigMapInformer
	VirtualSecrets, PhysicalSecrets       corev1informers.SecretInformer
	VirtualPVCs, PhysicalPVCs             corev1informers.PersistentVolumeClaimInformer
	VirtualPVs, PhysicalPVs               corev1informers.PersistentVolumeInformer

	// VirtualPods are all virtual pods the binding may run; the references
	// index is added to the informer unless it has it.
	VirtualPods corev1informers.PodInformer
	// VirtualNodes are the binding's virtual nodes, which tell its pods.
	VirtualNodes corev1informers.NodeInformer
	// PhysicalPods are the binding's physical pods; a virtual pod whose
	// virtual node is gone still counts while one of them was made for
	// it. Optional: without them such pods never count.
	PhysicalPods corev1informers.PodInformer

	// GracePeriod is how long a copy stays after its last user went; 0
	// means dependents.DefaultGracePeriod.
	GracePeriod time.Duration
	// Metrics receives reconcile and queue metrics; nil records none.
	Metrics *controller.Metrics
	// Clock times the grace period; default the real clock.
	Clock clock.PassiveClock
}

// Controllers are the controllers of the copied kinds, keyed by
// namespace/name (PVs by name).
type Controllers struct {
	ConfigMaps *dependents.Controller[*corev1.ConfigMap]
	Secrets    *dependents.Controller[*corev1.Secret]
	PVCs       *dependents.Controller[*corev1.PersistentVolumeClaim]
	PVs        *dependents.Controller[*corev1.PersistentVolume]
}

// RetryFailing retries at once the keys every controller is backing off.
func (c *Controllers) RetryFailing() {
	c.ConfigMaps.RetryFailing()
	c.Secrets.RetryFailing()
	c.PVCs.RetryFailing()
	c.PVs.RetryFailing()
}

func (o Options) validate() error {
	var errs []error
	if o.ClusterID == "" || o.MountNamespace == "" {
		errs = append(errs, errors.New("ClusterID and MountNamespace are required"))
	}
	if o.Syncer == nil {
		errs = append(errs, errors.New("Syncer is required"))
	}
	if o.VirtualConfigMaps == nil || o.PhysicalConfigMaps == nil || o.VirtualSecrets == nil || o.PhysicalSecrets == nil ||
		o.VirtualPVCs == nil || o.PhysicalPVCs == nil || o.VirtualPVs == nil || o.PhysicalPVs == nil {
		errs = append(errs, errors.New("the virtual and physical informers of ConfigMaps, Secrets, PVCs and PVs are required"))
	}
	if o.VirtualPods == nil || o.VirtualNodes == nil {
		errs = append(errs, errors.New("VirtualPods and VirtualNodes informers are required"))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("copier: %w", err)
	}
	return nil
}
