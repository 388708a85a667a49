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
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/tools/cache"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
	"github.com/kubeocean/kubeocean/internal/compact"
	"github.com/kubeocean/kubeocean/internal/ownership"
	"github.com/kubeocean/kubeocean/internal/syncer/topdown/podidentity"
	"github.com/kubeocean/kubeocean/pkg/informers"
)

// The scopes of the syncer's informers. Everything cached from the physical
// cluster is either the binding's own (its pods and copies in the mount
// namespace, by its identity labels; policies), or selected like the binding selects (nodes, where a label
// selector can say it) and slimmed to what the controllers read (nodes,
// foreign pods), so memory follows what Kubeocean manages rather than the
// cluster's size.

// transforms are the informer transforms of the syncer's pods and of the
// objects it owns or makes. The values of the annotations that tie an
// object to its twin (names, UIDs) or time its renewal are each object's
// own and stay as decoded; docs/caches.md says what each cache keeps.
var transforms = compact.NewTransforms(
	kubeoceanv1alpha1.AnnotationPhysicalPodName, kubeoceanv1alpha1.AnnotationPhysicalPodUID,
	kubeoceanv1alpha1.AnnotationVirtualPodName, kubeoceanv1alpha1.AnnotationVirtualPodUID,
	kubeoceanv1alpha1.AnnotationPhysicalName, kubeoceanv1alpha1.AnnotationVirtualName,
	kubeoceanv1alpha1.AnnotationLastSyncTime, kubeoceanv1alpha1.AnnotationTokenRefreshAt,
)

// virtualPodScope selects the virtual pods this binding may run: those
// bound to a node named like its virtual nodes (kubeoceanv1alpha1.VirtualNodeNamePrefix),
// kept whole. Every other pod of the virtual cluster (pending, on the
// cluster's own nodes, on another binding's virtual nodes) is dropped as
// it is decoded, so a syncer's memory does not grow with them. A pod comes
// into the cache when it is bound to one of these nodes; spec.nodeName
// never changes after that, so a pod kept stays kept until it is deleted.
// Whether the node is really one of the binding's is for the controllers
// to check, as before (a node of cluster ID "a-b" has the prefix of "a").
// The pods kept share their repeating strings, and the status parts copied
// from their physical twins with those (compact.Transforms.VirtualPods;
// twins nil: not shared).
func virtualPodScope(clusterID string, twins *compact.TwinStatuses) informers.Scope {
	prefix := kubeoceanv1alpha1.VirtualNodeNamePrefix(clusterID)
	return informers.Scope{
		KeepPod:     func(p *corev1.Pod) bool { return strings.HasPrefix(p.Spec.NodeName, prefix) },
		KeepPodName: "on-" + prefix + "*",
		Slim:        transforms.VirtualPods(twins),
		SlimName:    "shared-strings",
	}
}

func bindingScope(bindingName string) informers.Scope {
	return informers.Scope{FieldSelector: "metadata.name=" + bindingName}
}

// ownedScope selects the virtual objects this binding's syncer owns:
// virtual nodes, their Leases and CSINodes, kept whole but with what
// repeats across them shared (compact.Transforms.Owned).
func ownedScope(clusterID, namespace string) informers.Scope {
	return informers.Scope{
		Namespace:     namespace,
		LabelSelector: fmt.Sprintf("%s=%s,%s=%s", kubeoceanv1alpha1.LabelManagedBy, kubeoceanv1alpha1.ManagedByKubeocean, kubeoceanv1alpha1.LabelClusterID, clusterID),
		Slim:          transforms.Owned,
		SlimName:      "owned",
	}
}

// boundScope selects what this binding made in the physical cluster's mount
// namespace (pods, copies, token Secrets): its identity, not merely
// managed-by, so that another binding sharing the namespace (of this or of
// another virtual cluster) is not even cached, let alone acted on. Its
// pods keep only what the controllers read of their spec, and its objects
// share their repeating strings (compact.Transforms.Physical).
func boundScope(owner ownership.Owner, mountNamespace string) informers.Scope {
	return informers.Scope{Namespace: mountNamespace, LabelSelector: owner.Selector(), Slim: transforms.Physical, SlimName: "physical"}
}

// physicalPodRecords is the informer of the binding's physical pods, which
// holds them as compact.PhysicalPod records; physicalPods reads them as
// Pods.
func (e *syncerEnv) physicalPodRecords() cache.SharedIndexInformer {
	return e.physicalInformers.Kube(boundScope(ownership.Of(e.binding), e.binding.Spec.MountNamespace)).Core().V1().Pods().Informer()
}

// physicalPods is the informer of the binding's physical pods as the
// controllers read them, as Pods; see compact.PhysicalPods.
func (e *syncerEnv) physicalPods() coreinformers.PodInformer {
	return compact.PhysicalPods(e.physicalPodRecords())
}

// boundSecretsScope is boundScope for Secrets other than the pods' token
// Secrets: the copies of the virtual Secrets the pods use.
func boundSecretsScope(owner ownership.Owner, mountNamespace string) informers.Scope {
	scope := boundScope(owner, mountNamespace)
	scope.LabelSelector += "," + kubeoceanv1alpha1.LabelPodToken + "!=true"
	return scope
}

// tokenSecretsScope selects the binding's token Secrets, one per synced
// pod, and keeps each as the pod controller's compact record of it
// (podidentity.CompactTokenSecret): whose it is, when it is due, which keys it
// has. Their values (a token, the virtual CA, identity fields: a few KiB
// per pod) stay out of the cache; the pod controller renews a Secret by
// writing every value anew.
func tokenSecretsScope(owner ownership.Owner, mountNamespace string) informers.Scope {
	return informers.Scope{
		Namespace:     mountNamespace,
		LabelSelector: owner.Selector() + "," + kubeoceanv1alpha1.LabelPodToken + "=true",
		Slim:          podidentity.CompactTokenSecret,
		SlimName:      "token-record",
	}
}

// foreignPodScope: the pods that hold resources on a node and are not the
// binding's own, stored compactly as *compact.PodUsage (so only the
// informer, never its typed lister, may be used). That is every pod without
// the binding's UID: a pod Kubeocean does not run, and also a pod of
// another binding (of this virtual cluster or of another) on a node both
// lend, which runs on what its own binding was lent and so is not this
// binding's to lend. A `!=` requirement matches the pods without the label,
// so the API server sends exactly those; the binding's own pods, which run
// on what it lends and must not reduce it, stay out of this cache (they
// are in boundScope's, slimmed apart) and never count: from its creation
// on a pod carries its binding's UID. Finished pods leave the watch (a
// delete event), which is when they free their node's resources.
func foreignPodScope(owner ownership.Owner) informers.Scope {
	return informers.Scope{
		LabelSelector: kubeoceanv1alpha1.LabelBindingUID + "!=" + string(owner.BindingUID),
		FieldSelector: "spec.nodeName!=,status.phase!=" + string(corev1.PodSucceeded) + ",status.phase!=" + string(corev1.PodFailed),
		Slim:          compact.ForeignPod(owner),
		SlimName:      "capacity",
	}
}

// foreignPods is the informer of the pods that are not the binding's own
// (foreignPodScope), which the node controller sums and the host port
// tracker reads.
func (e *syncerEnv) foreignPods() cache.SharedIndexInformer {
	return e.physicalInformers.PodsWithoutIndexes(foreignPodScope(ownership.Of(e.binding)))
}

// physicalNodeScope: the physical nodes the binding's node selector may
// select, kept only in what the node and lease controllers read
// (compact.PhysicalNode). The API server filters by the selector when a
// label selector can express it; otherwise every node is cached and the
// controllers alone apply the selector.
func physicalNodeScope(selector *corev1.NodeSelector) informers.Scope {
	labelSelector, _ := nodeLabelSelector(selector)
	return informers.Scope{LabelSelector: labelSelector, Slim: compact.PhysicalNode, SlimName: "node"}
}

// nodeLabelSelector is the label selector that selects what selector does,
// when there is one: no selector, or a single term of label expressions
// (In, NotIn, Exists, DoesNotExist). Several terms (OR), field expressions
// and Gt/Lt have none; ok is false and the selector is empty.
func nodeLabelSelector(selector *corev1.NodeSelector) (labelSelector string, ok bool) {
	if selector == nil || len(selector.NodeSelectorTerms) == 0 {
		return "", true
	}
	if len(selector.NodeSelectorTerms) > 1 || len(selector.NodeSelectorTerms[0].MatchFields) > 0 {
		return "", false
	}
	operators := map[corev1.NodeSelectorOperator]selection.Operator{
		corev1.NodeSelectorOpIn: selection.In, corev1.NodeSelectorOpNotIn: selection.NotIn,
		corev1.NodeSelectorOpExists: selection.Exists, corev1.NodeSelectorOpDoesNotExist: selection.DoesNotExist,
	}
	parsed := labels.NewSelector()
	for _, expr := range selector.NodeSelectorTerms[0].MatchExpressions {
		op, known := operators[expr.Operator]
		if !known {
			return "", false
		}
		requirement, err := labels.NewRequirement(expr.Key, op, expr.Values)
		if err != nil {
			return "", false
		}
		parsed = parsed.Add(*requirement)
	}
	return parsed.String(), true
}
