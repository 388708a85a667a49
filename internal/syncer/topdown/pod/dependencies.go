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

package pod

import (
	"context"
	"errors"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/tools/cache"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
	"github.com/kubeocean/kubeocean/internal/syncer/topdown/dependents"
	"github.com/kubeocean/kubeocean/internal/syncer/topdown/podspec"
	"github.com/kubeocean/kubeocean/internal/syncer/topdown/references"
)

// Dependents copies the objects a pod refers to into the physical cluster
// and returns their physical names; *dependents.Syncer implements it. A
// *dependents.NotReadyError makes the pod wait, a *dependents.ConflictError
// stops it until the user acts.
type Dependents interface {
	EnsureConfigMap(ctx context.Context, namespace, name string) (string, error)
	EnsureSecret(ctx context.Context, namespace, name string) (string, error)
	EnsurePVC(ctx context.Context, namespace, name string) (string, error)
}

var _ Dependents = (*dependents.Syncer)(nil)

// conflictRecheck is how long a pod blocked by a name conflict waits
// before it is tried again: someone must act, and nothing tells us when.
const conflictRecheck = dependents.ConflictRecheck

// dependencyProblem is why a pod cannot be created yet, as its
// DependenciesReady condition shows it.
type dependencyProblem struct {
	reason, message string
	// conflict: a physical name is taken by an object Kubeocean did not
	// make; retrying does not help until someone removes it.
	conflict bool
	err      error
}

// resolveDependencies copies every object the pod uses, all of them even
// when one fails so that the pod's condition lists every problem at once,
// and returns their physical names. An optional reference to an object that
// does not exist does not hold the pod back: the kubelet tolerates it.
func (c *Controller) resolveDependencies(ctx context.Context, virtual *corev1.Pod) (podspec.Names, *dependencyProblem) {
	refs := dependencyReferences(virtual)
	required := requiredReferences(virtual)
	names := podspec.Names{
		Namespace:  virtual.Namespace,
		ConfigMaps: make(map[string]string, len(refs.ConfigMaps)),
		Secrets:    make(map[string]string, len(refs.Secrets)),
		PVCs:       make(map[string]string, len(refs.PVCs)),
	}
	var notReady, conflicts []string
	var waiting []dependency
	var errs []error
	ensure := func(ensureFn func(context.Context, string, string) (string, error), list []string, requiredNames sets.Set[string], into map[string]string) {
		for _, name := range list {
			physical, err := ensureFn(ctx, virtual.Namespace, name)
			var notReadyErr *dependents.NotReadyError
			var conflictErr *dependents.ConflictError
			switch {
			case err == nil:
				into[name] = physical
			case errors.As(err, &notReadyErr) && notReadyErr.Reason == dependents.ReasonNotFound && !requiredNames.Has(name):
				// Optional and missing: the physical name is never
				// filled, which the kubelet accepts for optional ones.
			case errors.As(err, &notReadyErr):
				notReady = append(notReady, err.Error())
				waiting = append(waiting, waitedFor(notReadyErr))
			case errors.As(err, &conflictErr):
				conflicts = append(conflicts, err.Error())
			default:
				errs = append(errs, err)
			}
		}
	}
	ensure(c.dependents.EnsureConfigMap, refs.ConfigMaps, required.configMaps, names.ConfigMaps)
	ensure(c.dependents.EnsureSecret, refs.Secrets, required.secrets, names.Secrets)
	ensure(c.dependents.EnsurePVC, refs.PVCs, required.pvcs, names.PVCs)
	c.waiters.set(cache.MetaObjectToName(virtual), waiting)

	switch {
	case len(conflicts) > 0:
		message := strings.Join(conflicts, "; ")
		return names, &dependencyProblem{reason: kubeoceanv1alpha1.ReasonDependencyConflict, message: message, conflict: true, err: errors.New(message)}
	case len(notReady) > 0:
		message := strings.Join(notReady, "; ")
		return names, &dependencyProblem{reason: kubeoceanv1alpha1.ReasonDependencyNotReady, message: message, err: errors.New(message)}
	case len(errs) > 0:
		// Failures to reach a cluster are no news for the user: no
		// condition, just a retry.
		return names, &dependencyProblem{err: fmt.Errorf("copying the pod's dependencies: %w", errors.Join(errs...))}
	}
	return names, nil
}

// dependencyReferences are the objects to copy for the pod (see
// references.Copied).
func dependencyReferences(pod *corev1.Pod) references.References {
	return references.Copied(pod)
}

// referenceSets are names of each kind.
type referenceSets struct {
	configMaps, secrets, pvcs sets.Set[string]
}

// requiredReferences are the names the pod cannot start without: used at
// least once without optional: true. Image pull secrets are never
// required: the kubelet pulls without a missing one.
func requiredReferences(pod *corev1.Pod) referenceSets {
	r := referenceSets{configMaps: sets.New[string](), secrets: sets.New[string](), pvcs: sets.New[string]()}
	required := func(optional *bool) bool { return optional == nil || !*optional }
	for _, v := range pod.Spec.Volumes {
		switch {
		case v.ConfigMap != nil && required(v.ConfigMap.Optional):
			r.configMaps.Insert(v.ConfigMap.Name)
		case v.Secret != nil && required(v.Secret.Optional):
			r.secrets.Insert(v.Secret.SecretName)
		case v.PersistentVolumeClaim != nil:
			r.pvcs.Insert(v.PersistentVolumeClaim.ClaimName)
		case v.Projected != nil:
			for _, source := range v.Projected.Sources {
				if source.ConfigMap != nil && required(source.ConfigMap.Optional) {
					r.configMaps.Insert(source.ConfigMap.Name)
				}
				if source.Secret != nil && required(source.Secret.Optional) {
					r.secrets.Insert(source.Secret.Name)
				}
			}
		default:
			// A volume plugin's Secret cannot be optional: the plugin
			// fails the mount without it.
			if ref := references.VolumeSecret(&v.VolumeSource); ref != nil && *ref != "" {
				r.secrets.Insert(*ref)
			}
		}
	}
	for _, c := range references.AllContainers(&pod.Spec) {
		for _, env := range c.Env {
			if env.ValueFrom == nil {
				continue
			}
			if ref := env.ValueFrom.ConfigMapKeyRef; ref != nil && required(ref.Optional) {
				r.configMaps.Insert(ref.Name)
			}
			if ref := env.ValueFrom.SecretKeyRef; ref != nil && required(ref.Optional) {
				r.secrets.Insert(ref.Name)
			}
		}
		for _, from := range c.EnvFrom {
			if from.ConfigMapRef != nil && required(from.ConfigMapRef.Optional) {
				r.configMaps.Insert(from.ConfigMapRef.Name)
			}
			if from.SecretRef != nil && required(from.SecretRef.Optional) {
				r.secrets.Insert(from.SecretRef.Name)
			}
		}
	}
	return r
}
