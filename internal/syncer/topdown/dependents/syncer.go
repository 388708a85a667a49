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

package dependents

import (
	"context"
	"errors"
	"fmt"
	"time"

	"golang.org/x/sync/singleflight"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	corev1listers "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"
	"k8s.io/utils/lru"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
	"github.com/kubeocean/kubeocean/internal/ownership"
	"github.com/kubeocean/kubeocean/internal/syncer/allowances"
)

// Options are the dependencies of a Syncer; all are required.
type Options struct {
	// ClusterID names the binding in marks and finalizers.
	ClusterID string
	// BindingUID, with ClusterID, is the identity every copy carries (see
	// package ownership); only copies with it are updated or deleted.
	BindingUID types.UID
	// MountNamespace is the physical namespace copies live in.
	MountNamespace string
	// VirtualClient marks and unmarks virtual objects; only CoreV1 is used.
	VirtualClient kubernetes.Interface
	// PhysicalClient writes the copies; only CoreV1 is used.
	PhysicalClient kubernetes.Interface

	// The virtual listers hold the objects marked for this binding (label
	// kubeocean.io/synced-by-<clusterID>); an object not there yet is read
	// live. They must be the caches whose events drive the controllers of
	// copies, so that a change that wakes a controller is also what it
	// reads.
	VirtualConfigMaps corev1listers.ConfigMapLister
	VirtualSecrets    corev1listers.SecretLister
	VirtualPVCs       corev1listers.PersistentVolumeClaimLister
	VirtualPVs        corev1listers.PersistentVolumeLister

	// ProvisionedPVs, optional, hold the virtual PVs the binding
	// provisioned (package provision), looked up after VirtualPVs: they
	// are never marked, and without them each would be read live.
	ProvisionedPVs corev1listers.PersistentVolumeLister

	// Predecessors, optional, are the earlier bindings of this one proven
	// by their pods (see ownership.Predecessors): their copies are adopted.
	// Without them a predecessor's copy is a conflict.
	Predecessors *ownership.Predecessors

	// The physical listers hold the copies: the mount namespace and the
	// binding's identity labels (PVs: the labels only), so that copies of
	// other bindings are not even cached.
	PhysicalConfigMaps corev1listers.ConfigMapLister
	PhysicalSecrets    corev1listers.SecretLister
	PhysicalPVCs       corev1listers.PersistentVolumeClaimLister
	PhysicalPVs        corev1listers.PersistentVolumeLister

	// Allowances say which PersistentVolume sources the lender lets the
	// binding copy (ResourceLeasingPolicy.spec.allowances). Optional:
	// without them none beyond the defaults.
	Allowances *allowances.Source

	// Recorder records events on virtual objects, so it must write to the
	// virtual cluster.
	Recorder record.EventRecorder
	// Clock, optional, tells the time (the real clock when nil).
	Clock clock.PassiveClock
}

func (o Options) now() func() time.Time {
	if o.Clock == nil {
		return time.Now
	}
	return o.Clock.Now
}

// Syncer copies dependent objects of one binding. It is safe for
// concurrent use: every write is guarded by a resourceVersion or a UID
// precondition, and a lost race is resolved from a live read.
type Syncer struct {
	clusterID      string
	owner          ownership.Owner
	predecessors   *ownership.Predecessors
	mountNamespace string
	recorder       record.EventRecorder
	// allowances: nil allows nothing beyond the defaults.
	allowances *allowances.Source

	configMaps *kind[*corev1.ConfigMap]
	secrets    *kind[*corev1.Secret]
	// csiSecrets are the same virtual Secrets copied for a PV, under their
	// own name and namespace, which no physical informer watches.
	csiSecrets *kind[*corev1.Secret]
	pvcs       *kind[*corev1.PersistentVolumeClaim]
	pvs        *kind[*corev1.PersistentVolume]

	// inflight joins concurrent ensures of one object (see ensure).
	inflight singleflight.Group
	// inSync holds, per ensure, the versions of the virtual object and of
	// its copy that the ensure last found as they should be (see
	// ensureOnce); the oldest are dropped past inSyncEntries.
	inSync *lru.Cache
	now    func() time.Time
}

// New builds a Syncer.
func New(opts Options) (*Syncer, error) {
	if err := opts.validate(); err != nil {
		return nil, err
	}
	v, p := opts.VirtualClient.CoreV1(), opts.PhysicalClient.CoreV1()
	virtualSecrets := side[*corev1.Secret]{
		cache:  func(ns string) getter[*corev1.Secret] { return opts.VirtualSecrets.Secrets(ns) },
		client: func(ns string) client[*corev1.Secret] { return v.Secrets(ns) },
	}
	physicalSecrets := func(ns string) client[*corev1.Secret] { return p.Secrets(ns) }
	return &Syncer{
		clusterID: opts.ClusterID, mountNamespace: opts.MountNamespace, recorder: opts.Recorder, allowances: opts.Allowances,
		owner:        ownership.Owner{ClusterID: opts.ClusterID, BindingUID: opts.BindingUID},
		predecessors: opts.Predecessors,
		configMaps:   remembering(configMapKind(opts, v, p), opts.Clock),
		now:          opts.now(),
		secrets: remembering(&kind[*corev1.Secret]{
			name: KindSecret, content: secretContent, virtual: virtualSecrets,
			physical: side[*corev1.Secret]{
				cache:  func(ns string) getter[*corev1.Secret] { return opts.PhysicalSecrets.Secrets(ns) },
				client: physicalSecrets,
			},
		}, opts.Clock),
		csiSecrets: &kind[*corev1.Secret]{
			name: KindSecret, content: secretContent, virtual: virtualSecrets,
			physical: side[*corev1.Secret]{client: physicalSecrets},
		},
		pvcs:   remembering(pvcKind(opts, v, p), opts.Clock),
		pvs:    remembering(pvKind(opts, v, p), opts.Clock),
		inSync: lru.New(inSyncEntries),
	}, nil
}

func configMapKind(opts Options, v, p corev1client.CoreV1Interface) *kind[*corev1.ConfigMap] {
	return &kind[*corev1.ConfigMap]{
		name: KindConfigMap, content: configMapContent,
		virtual: side[*corev1.ConfigMap]{
			cache:  func(ns string) getter[*corev1.ConfigMap] { return opts.VirtualConfigMaps.ConfigMaps(ns) },
			client: func(ns string) client[*corev1.ConfigMap] { return v.ConfigMaps(ns) },
		},
		physical: side[*corev1.ConfigMap]{
			cache:  func(ns string) getter[*corev1.ConfigMap] { return opts.PhysicalConfigMaps.ConfigMaps(ns) },
			client: func(ns string) client[*corev1.ConfigMap] { return p.ConfigMaps(ns) },
		},
	}
}

func pvcKind(opts Options, v, p corev1client.CoreV1Interface) *kind[*corev1.PersistentVolumeClaim] {
	type pvc = *corev1.PersistentVolumeClaim
	return &kind[pvc]{
		name: KindPVC, content: pvcContent,
		virtual: side[pvc]{
			cache:  func(ns string) getter[pvc] { return opts.VirtualPVCs.PersistentVolumeClaims(ns) },
			client: func(ns string) client[pvc] { return v.PersistentVolumeClaims(ns) },
		},
		physical: side[pvc]{
			cache:  func(ns string) getter[pvc] { return opts.PhysicalPVCs.PersistentVolumeClaims(ns) },
			client: func(ns string) client[pvc] { return p.PersistentVolumeClaims(ns) },
		},
	}
}

// pvKind: PVs are cluster-scoped, so the namespace is ignored.
func pvKind(opts Options, v, p corev1client.CoreV1Interface) *kind[*corev1.PersistentVolume] {
	type pv = *corev1.PersistentVolume
	return &kind[pv]{
		name: KindPV, content: pvContent(opts.MountNamespace),
		virtual: side[pv]{
			cache: func(string) getter[pv] {
				if opts.ProvisionedPVs == nil {
					return opts.VirtualPVs
				}
				return firstOf[pv]{opts.VirtualPVs, opts.ProvisionedPVs}
			},
			client: func(string) client[pv] { return v.PersistentVolumes() },
		},
		physical: side[pv]{
			cache:  func(string) getter[pv] { return opts.PhysicalPVs },
			client: func(string) client[pv] { return p.PersistentVolumes() },
		},
	}
}

// firstOf looks an object up in each getter in turn.
type firstOf[T any] []getter[T]

func (g firstOf[T]) Get(name string) (T, error) {
	var obj T
	var err error
	for _, each := range g {
		if obj, err = each.Get(name); !apierrors.IsNotFound(err) {
			return obj, err
		}
	}
	return obj, err
}

func (o Options) validate() error {
	var errs []error
	if o.ClusterID == "" || o.BindingUID == "" || o.MountNamespace == "" {
		errs = append(errs, errors.New("ClusterID, BindingUID and MountNamespace are required"))
	}
	if o.VirtualClient == nil || o.PhysicalClient == nil {
		errs = append(errs, errors.New("VirtualClient and PhysicalClient are required"))
	}
	if o.VirtualConfigMaps == nil || o.VirtualSecrets == nil || o.VirtualPVCs == nil || o.VirtualPVs == nil {
		errs = append(errs, errors.New("the four virtual listers are required"))
	}
	if o.PhysicalConfigMaps == nil || o.PhysicalSecrets == nil || o.PhysicalPVCs == nil || o.PhysicalPVs == nil {
		errs = append(errs, errors.New("the four physical listers are required"))
	}
	if o.Recorder == nil {
		errs = append(errs, errors.New("Recorder is required"))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("dependents: %w", err)
	}
	return nil
}

// EnsureConfigMap makes the physical copy of the virtual ConfigMap
// namespace/name exist and match, marking the virtual object first, and
// returns the copy's name.
func (s *Syncer) EnsureConfigMap(ctx context.Context, namespace, name string) (string, error) {
	at := location{namespace: s.mountNamespace, name: kubeoceanv1alpha1.PhysicalName(namespace, name)}
	return at.name, ensure(ctx, s, s.configMaps, namespace, name, at, false)
}

// EnsureSecret makes the physical copy of the virtual Secret
// namespace/name exist and match, marking the virtual object first, and
// returns the copy's name. Service-account token Secrets are refused with
// a NotReadyError (ReasonServiceAccountToken).
func (s *Syncer) EnsureSecret(ctx context.Context, namespace, name string) (string, error) {
	at := location{namespace: s.mountNamespace, name: kubeoceanv1alpha1.PhysicalName(namespace, name)}
	return at.name, ensure(ctx, s, s.secrets, namespace, name, at, false)
}

// EnsureCSISecret copies the virtual Secret namespace/name that a PV's CSI
// driver gets on node publish, under the same name and namespace, and
// labels the virtual Secret kubeocean.io/used-by-pv=true. The namespace
// must exist in the physical cluster.
func (s *Syncer) EnsureCSISecret(ctx context.Context, namespace, name string) error {
	return ensure(ctx, s, s.csiSecrets, namespace, name, location{namespace: namespace, name: name}, true)
}

// ensure marks the virtual object and then makes its copy at at. Calls for
// the same object while one is under way share its answer: a burst of new
// pods using one ConfigMap would otherwise race to create its copy before
// the cache shows it, each meeting AlreadyExists (an HTTP 409) and a live
// read.
func ensure[T object](ctx context.Context, s *Syncer, k *kind[T], namespace, name string, at location, usedByPV bool) error {
	key := fmt.Sprintf("%s %s/%s %s/%s %v", k.name, namespace, name, at.namespace, at.name, usedByPV)
	_, err, _ := s.inflight.Do(key, func() (any, error) {
		return nil, ensureOnce(ctx, s, k, key, namespace, name, at, usedByPV)
	})
	return err
}

// inSyncEntries bounds Syncer.inSync: a few bytes each, and one per object
// that pods use (a dropped entry costs one full ensure).
const inSyncEntries = 4096

// versions are the resourceVersions of a virtual object and of its copy.
type versions struct{ virtual, physical string }

// ensureOnce marks the virtual object and makes its copy match. Every pod
// of a workload ensures the same objects, which are nearly always as they
// should be already: while the caches show both at the versions an ensure
// last found in sync, and nothing was written then, there is nothing to
// compare or copy (a resourceVersion changes with every write of an
// object, and what the copy should be depends on nothing else).
func ensureOnce[T object](ctx context.Context, s *Syncer, k *kind[T], key, namespace, name string, at location, usedByPV bool) error {
	obj, err := virtualObject(ctx, k, namespace, name)
	if err != nil {
		return err
	}
	seen, known := cachedVersions(k, obj, at)
	if last, ok := s.inSync.Get(key); known && ok && last == seen {
		return nil
	}
	wasMarked := IsMarked(obj, s.clusterID)
	marked, err := ensureMarked(ctx, s, k, obj, at, usedByPV)
	if err != nil {
		return err
	}
	if !wasMarked && hasOurCopy(s, k, namespace, name, at) {
		// Our copy is there, so the object was marked once: someone took
		// the marks off (a replace with the user's own manifest).
		s.recorder.Eventf(marked, corev1.EventTypeWarning, kubeoceanv1alpha1.ReasonKubeoceanMarksRestored,
			"Kubeocean's label and finalizer were removed while pods of cluster %s use this %s; they were put back", s.clusterID, k.name)
	}
	matched, err := ensureCopy(ctx, s, k, marked, at)
	if err == nil && matched && known && any(marked) == any(obj) {
		s.inSync.Add(key, seen)
	}
	return err
}

// cachedVersions returns the versions of virtual and of its copy at at in
// the physical cache; false when one is not known: the copy is not cached
// (yet), or an object has no resourceVersion (as fake clients make them).
func cachedVersions[T object](k *kind[T], virtual T, at location) (versions, bool) {
	if k.physical.cache == nil || virtual.GetResourceVersion() == "" {
		return versions{}, false
	}
	actual, err := k.physical.cached(at.namespace, at.name)
	if err != nil || actual.GetResourceVersion() == "" {
		return versions{}, false
	}
	return versions{virtual: virtual.GetResourceVersion(), physical: actual.GetResourceVersion()}, true
}

// hasOurCopy tells whether the cache holds this binding's copy of
// namespace/name at at.
func hasOurCopy[T object](s *Syncer, k *kind[T], namespace, name string, at location) bool {
	if k.physical.cache == nil {
		return false
	}
	actual, err := k.physical.cached(at.namespace, at.name)
	return err == nil && s.owns(actual, namespace, name)
}

// ReleaseConfigMap deletes the physical copy of the virtual ConfigMap
// namespace/name and then removes our marks (finalizer included) from it.
func (s *Syncer) ReleaseConfigMap(ctx context.Context, namespace, name string) error {
	at := location{namespace: s.mountNamespace, name: kubeoceanv1alpha1.PhysicalName(namespace, name)}
	if err := deleteCopy(ctx, s, s.configMaps, namespace, name, at); err != nil {
		return err
	}
	if err := deleteCopyElsewhere(ctx, s, s.configMaps, namespace, name, at); err != nil {
		return err
	}
	return unmarkVirtual(ctx, s, s.configMaps, namespace, name)
}

// ReleaseSecret deletes the physical copies of the virtual Secret
// namespace/name (the pod copy, and the CSI copy if it is used by a PV)
// and then removes our marks from it.
func (s *Syncer) ReleaseSecret(ctx context.Context, namespace, name string) error {
	at := location{namespace: s.mountNamespace, name: kubeoceanv1alpha1.PhysicalName(namespace, name)}
	if err := deleteCopy(ctx, s, s.secrets, namespace, name, at); err != nil {
		return err
	}
	if err := deleteCopyElsewhere(ctx, s, s.secrets, namespace, name, at); err != nil {
		return err
	}
	virtual, err := s.secrets.virtual.fresh(ctx, namespace, name)
	switch {
	case apierrors.IsNotFound(err):
		return nil
	case err != nil:
		return fmt.Errorf("reading virtual Secret %s/%s: %w", namespace, name, err)
	}
	// Only a Secret labelled used-by-pv can have a CSI copy; others cost no
	// extra read of the physical cluster.
	if virtual.Labels[kubeoceanv1alpha1.LabelUsedByPV] == markValue {
		if err := deleteCopy(ctx, s, s.csiSecrets, namespace, name, location{namespace: namespace, name: name}); err != nil {
			return err
		}
	}
	return unmarkVirtual(ctx, s, s.secrets, namespace, name)
}

// DeleteOrphanConfigMap deletes the physical copy of the virtual ConfigMap
// namespace/name if the virtual object is gone or no longer marked by us.
func (s *Syncer) DeleteOrphanConfigMap(ctx context.Context, namespace, name string) error {
	at := location{namespace: s.mountNamespace, name: kubeoceanv1alpha1.PhysicalName(namespace, name)}
	return deleteOrphan(ctx, s, s.configMaps, namespace, name, at)
}

// DeleteOrphanSecret deletes the physical copy (in the mount namespace) of
// the virtual Secret namespace/name if the virtual object is gone or no
// longer marked by us.
func (s *Syncer) DeleteOrphanSecret(ctx context.Context, namespace, name string) error {
	at := location{namespace: s.mountNamespace, name: kubeoceanv1alpha1.PhysicalName(namespace, name)}
	return deleteOrphan(ctx, s, s.secrets, namespace, name, at)
}
