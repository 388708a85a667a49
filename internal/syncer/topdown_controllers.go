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

package syncer

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
	"github.com/kubeocean/kubeocean/internal/app"
	"github.com/kubeocean/kubeocean/internal/clusterhealth"
	"github.com/kubeocean/kubeocean/internal/compact"
	"github.com/kubeocean/kubeocean/internal/ownership"
	"github.com/kubeocean/kubeocean/internal/syncer/allowances"
	"github.com/kubeocean/kubeocean/internal/syncer/topdown/copier"
	"github.com/kubeocean/kubeocean/internal/syncer/topdown/dependents"
	"github.com/kubeocean/kubeocean/internal/syncer/topdown/pod"
	"github.com/kubeocean/kubeocean/internal/syncer/topdown/provision"
	"github.com/kubeocean/kubeocean/internal/syncer/topdown/references"
	"github.com/kubeocean/kubeocean/pkg/controller"
	"github.com/kubeocean/kubeocean/pkg/informers"
)

// markedScope selects the virtual objects the top-down side copied for
// this binding (dependents it marked with its synced-by label).
func markedScope(clusterID string) informers.Scope {
	return informers.Scope{LabelSelector: kubeoceanv1alpha1.SyncedByLabel(clusterID)}
}

// physicalPVScope selects the PersistentVolumes this binding copied.
func physicalPVScope(owner ownership.Owner) informers.Scope {
	return informers.Scope{LabelSelector: owner.Selector()}
}

// rootCAScope selects the kube-root-ca.crt ConfigMap of every virtual
// namespace, whose CA the pods' token Secrets hold: one small object per
// namespace, read from the cache rather than once per pod.
func rootCAScope() informers.Scope {
	return informers.Scope{FieldSelector: "metadata.name=" + references.RootCAConfigMap}
}

// mountNamespaceScope selects the mount namespace itself, whose Pod
// Security labels the pod controller reads.
func mountNamespaceScope(mount string) informers.Scope {
	return informers.Scope{FieldSelector: "metadata.name=" + mount}
}

// topDownControllers builds the virtual → physical controllers: pods and
// the ConfigMaps, Secrets, PVCs and PVs they use.
func topDownControllers(e *syncerEnv) ([]app.Runnable, error) {
	clusterID, mount := e.binding.Spec.ClusterID, e.binding.Spec.MountNamespace
	owner, uid := ownership.Of(e.binding), e.binding.UID
	p := e.process
	v, ph := e.virtualInformers, e.physicalInformers

	marked := v.Kube(markedScope(clusterID)).Core().V1()
	copies := ph.Kube(boundScope(owner, mount)).Core().V1()
	physicalSecrets := ph.Kube(boundSecretsScope(owner, mount)).Core().V1().Secrets()
	tokenSecrets := ph.Kube(tokenSecretsScope(owner, mount)).Core().V1().Secrets()
	physicalPVs := ph.Kube(physicalPVScope(owner)).Core().V1().PersistentVolumes()
	virtualPods := v.Kube(e.virtualPodScope()).Core().V1().Pods()
	virtualNodes := v.Kube(ownedScope(clusterID, "")).Core().V1().Nodes()

	hostPorts, err := e.hostPorts()
	if err != nil {
		return nil, err
	}
	// Every virtual claim, which the provisioner watches, and the volumes
	// it made.
	virtualClaims := v.Kube(informers.Scope{}).Core().V1().PersistentVolumeClaims()
	// What the lender allows the binding's pods beyond the defaults, from
	// the policies the bottom-up side watches too.
	policies := ph.Kubeocean(informers.Scope{}).Kubeocean().V1alpha1().ResourceLeasingPolicies()
	allowed := allowances.NewSource(policies.Lister(), e.binding.Name, mount)
	provisionedPVs := v.Kube(ownedScope(clusterID, "")).Core().V1().PersistentVolumes()
	// An earlier binding of this name, proven by its pods, hands its
	// objects over (package ownership).
	predecessors := ownership.NewPredecessors(owner, ownership.BindingsLive(e.virtual.Kubeocean.KubeoceanV1alpha1().ClusterBindings()))
	deps, err := dependents.New(dependents.Options{
		ClusterID: clusterID, BindingUID: uid, MountNamespace: mount,
		VirtualClient: e.virtual.Kube, PhysicalClient: e.physical.Kube,
		VirtualConfigMaps: marked.ConfigMaps().Lister(), VirtualSecrets: marked.Secrets().Lister(),
		VirtualPVCs: marked.PersistentVolumeClaims().Lister(), VirtualPVs: marked.PersistentVolumes().Lister(),
		ProvisionedPVs:     provisionedPVs.Lister(),
		PhysicalConfigMaps: copies.ConfigMaps().Lister(), PhysicalSecrets: physicalSecrets.Lister(),
		PhysicalPVCs: copies.PersistentVolumeClaims().Lister(), PhysicalPVs: physicalPVs.Lister(),
		Allowances: allowed, Recorder: p.Recorder, Predecessors: predecessors,
	})
	if err != nil {
		return nil, err
	}
	network, networkRunnables, err := e.networkControllers()
	if err != nil {
		return nil, err
	}
	pods, err := pod.New(pod.Options{
		ClusterID: clusterID, BindingUID: uid, MountNamespace: mount, VirtualAPIServer: e.opts.VirtualAPIServer,
		// Its writes need only the metadata of the objects written.
		VirtualClient: compact.LeanWrites(e.virtual.Kube.CoreV1()), PhysicalClient: compact.LeanWrites(e.physical.Kube.CoreV1()),
		VirtualPods: virtualPods, VirtualNodes: virtualNodes,
		PhysicalPods: e.physicalPods(), PhysicalSecrets: tokenSecrets,
		VirtualRootCAs: v.Kube(rootCAScope()).Core().V1().ConfigMaps(),
		Dependents:     deps, DependencyEvents: e.dependencyEvents(), Recorder: p.Recorder, Metrics: p.Metrics,
		MountNamespaces:   ph.Kube(mountNamespaceScope(mount)).Core().V1().Namespaces(),
		ResourceQuotas:    ph.Kube(informers.Scope{Namespace: mount}).Core().V1().ResourceQuotas(),
		SyncDaemonSetPods: e.opts.SyncDaemonSetPods,
		HostPorts:         hostPorts,
		Allowances:        allowed, AllowancesSynced: policies.Informer().HasSynced, Policies: policies.Informer(),
		Predecessors: predecessors, BindingName: e.binding.Name, BindingStatus: e.virtual.Kubeocean.KubeoceanV1alpha1(),
		Network: network,
	})
	if err != nil {
		return nil, err
	}
	copied, err := copier.New(copier.Options{
		ClusterID: clusterID, BindingUID: uid, MountNamespace: mount, Syncer: deps, PhysicalPods: e.physicalPods(),
		VirtualConfigMaps: marked.ConfigMaps(), PhysicalConfigMaps: copies.ConfigMaps(),
		VirtualSecrets: marked.Secrets(), PhysicalSecrets: physicalSecrets,
		VirtualPVCs: marked.PersistentVolumeClaims(), PhysicalPVCs: copies.PersistentVolumeClaims(),
		VirtualPVs: marked.PersistentVolumes(), PhysicalPVs: physicalPVs,
		VirtualPods: virtualPods, VirtualNodes: virtualNodes, Metrics: p.Metrics,
	})
	if err != nil {
		return nil, err
	}
	provisioner, err := provision.New(provision.Options{
		ClusterID: clusterID, BindingUID: uid, MountNamespace: mount,
		VirtualClient: e.virtual.Kube, PhysicalClient: e.physical.Kube,
		PhysicalClasses: ph.Kube(informers.Scope{}).Storage().V1().StorageClasses(),
		VirtualClasses:  v.Kube(ownedScope(clusterID, "")).Storage().V1().StorageClasses(),
		VirtualVolumes:  provisionedPVs,
		VirtualClaims:   virtualClaims,
		VirtualNodes:    virtualNodes, Holders: copies.PersistentVolumeClaims(),
		Recorder: p.Recorder, Metrics: p.Metrics,
	})
	if err != nil {
		return nil, err
	}
	// Keys that failed while a cluster did not answer are retried at once
	// when it answers again, whatever backoff the outage grew.
	retryFailing := func() {
		pods.RetryFailing()
		copied.RetryFailing()
		provisioner.RetryFailing()
	}
	e.onPhysicalAnswers = append(e.onPhysicalAnswers, retryFailing)
	virtualHealth := clusterhealth.NewProber(clusterhealth.ProberOptions{
		Name: "virtual", Client: e.virtual.Kube.Discovery().RESTClient(),
		OnChange: func(answers bool) {
			if answers {
				retryFailing()
			}
		},
	})

	resync := resyncRunnable(TopDownResyncPeriod, clock.RealClock{},
		resyncTarget{name: pod.Name, enqueue: pods.Enqueue, sources: []resyncSource{
			sourceOf(virtualPods.Informer(), func(p *corev1.Pod) []cache.ObjectName {
				if p.Spec.NodeName == "" {
					return nil
				}
				if _, err := virtualNodes.Lister().Get(p.Spec.NodeName); err != nil {
					return nil
				}
				return []cache.ObjectName{cache.MetaObjectToName(p)}
			}),
			// Physical pod records, read as they are cached.
			sourceOf(e.physicalPodRecords(), func(p metav1.Object) []cache.ObjectName {
				annotations := p.GetAnnotations()
				namespace, name := annotations[kubeoceanv1alpha1.AnnotationVirtualPodNamespace], annotations[kubeoceanv1alpha1.AnnotationVirtualPodName]
				if name == "" {
					return nil
				}
				return []cache.ObjectName{{Namespace: namespace, Name: name}}
			}),
		}},
		copiesTarget(copier.ConfigMapsName, copied.ConfigMaps.Enqueue, marked.ConfigMaps().Informer(), copies.ConfigMaps().Informer(), dependents.CopyKeys[*corev1.ConfigMap](true)),
		copiesTarget(copier.SecretsName, copied.Secrets.Enqueue, marked.Secrets().Informer(), physicalSecrets.Informer(), dependents.CopyKeys[*corev1.Secret](true)),
		copiesTarget(copier.PVCsName, copied.PVCs.Enqueue, marked.PersistentVolumeClaims().Informer(), copies.PersistentVolumeClaims().Informer(), dependents.CopyKeys[*corev1.PersistentVolumeClaim](true)),
		copiesTarget(copier.PVsName, copied.PVs.Enqueue, marked.PersistentVolumes().Informer(), physicalPVs.Informer(), dependents.CopyKeys[*corev1.PersistentVolume](false)),
	)

	workers := e.opts.Workers
	return append(networkRunnables,
		app.ControllerRunnable(pods.Controller, e.opts.PodWorkers),
		app.ControllerRunnable(copied.ConfigMaps.Controller, workers),
		app.ControllerRunnable(copied.Secrets.Controller, workers),
		app.ControllerRunnable(copied.PVCs.Controller, workers),
		app.ControllerRunnable(copied.PVs.Controller, workers),
		app.ControllerRunnable(provisioner.Controller, workers),
		app.Runnable{Name: "virtual-prober", Run: virtualHealth.Run},
		resync,
	), nil
}

// copiesTarget resyncs a controller of copies: its marked virtual objects
// and the objects its copies were made for (orphans included).
func copiesTarget[T metav1.Object](name string, enqueue func(cache.ObjectName), virtual, physical cache.SharedIndexInformer, copyKeys func(T) []cache.ObjectName) resyncTarget {
	return resyncTarget{name: name, enqueue: enqueue, sources: []resyncSource{
		sourceOf(virtual, controller.ObjectKeys[T]),
		sourceOf(physical, copyKeys),
	}}
}

// dependencyEvents are metadata-only informers on every ConfigMap, Secret
// and PersistentVolumeClaim of the virtual cluster, which wake the pods
// waiting for one; only names and versions are kept.
func (e *syncerEnv) dependencyEvents() map[string]cache.SharedIndexInformer {
	resources := map[string]string{
		dependents.KindConfigMap: "configmaps",
		dependents.KindSecret:    "secrets",
		dependents.KindPVC:       "persistentvolumeclaims",
	}
	out := make(map[string]cache.SharedIndexInformer, len(resources))
	for kind, resource := range resources {
		informer := e.virtualMetadata.ForResource(corev1.SchemeGroupVersion.WithResource(resource)).Informer()
		// Cannot fail before the informer starts.
		_ = informer.SetTransform(nameAndVersionOnly)
		out[kind] = informer
	}
	return out
}

// nameAndVersionOnly keeps what telling objects apart and their changes
// needs.
func nameAndVersionOnly(obj any) (any, error) {
	m, ok := obj.(*metav1.PartialObjectMetadata)
	if !ok {
		return obj, nil
	}
	return &metav1.PartialObjectMetadata{TypeMeta: m.TypeMeta, ObjectMeta: metav1.ObjectMeta{
		Namespace: m.Namespace, Name: m.Name, UID: m.UID, ResourceVersion: m.ResourceVersion,
	}}, nil
}
