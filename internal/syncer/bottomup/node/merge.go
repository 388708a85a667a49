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

package node

import (
	"encoding/json"
	"slices"

	corev1 "k8s.io/api/core/v1"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
	"github.com/kubeocean/kubeocean/internal/lastapplied"
)

// lastApplied is the metadata Kubeocean last wrote on a virtual node, kept
// in its kubeoceanv1alpha1.AnnotationLastAppliedMetadata so that updates
// replace ours and keep what users or other controllers added.
type lastApplied struct {
	Labels        map[string]string `json:"labels,omitempty"`
	Annotations   map[string]string `json:"annotations,omitempty"`
	Taints        []taintID         `json:"taints,omitempty"`
	Unschedulable bool              `json:"unschedulable,omitempty"`
}

// taintID identifies a taint the way the API does: by key and effect.
type taintID struct {
	Key    string             `json:"key"`
	Effect corev1.TaintEffect `json:"effect"`
}

func idOf(t corev1.Taint) taintID { return taintID{Key: t.Key, Effect: t.Effect} }

func recordOf(d desiredNode) lastApplied {
	r := lastApplied{Labels: d.labels, Annotations: d.annotations, Unschedulable: d.unschedulable}
	for _, t := range d.taints {
		r.Taints = append(r.Taints, idOf(t))
	}
	return r
}

func (r lastApplied) encode() string {
	data, _ := json.Marshal(r) // maps and strings always marshal
	return string(data)
}

// decodeLastApplied reads the record; a missing or damaged record is empty,
// which makes every current value look like a user's and keeps it.
func decodeLastApplied(node *corev1.Node) lastApplied {
	var r lastApplied
	if s, ok := node.Annotations[kubeoceanv1alpha1.AnnotationLastAppliedMetadata]; ok {
		_ = json.Unmarshal([]byte(s), &r)
	}
	return r
}

// mergeMap applies the three-way merge of package lastapplied with every
// key of ours enforced: keys we wrote before and no longer want go, keys we
// want are set, everything else stays. The result is never nil: the
// annotations get the record next.
func mergeMap(current, last, want map[string]string) map[string]string {
	merged := lastapplied.Apply(current, lastapplied.MergeKeys(current, last, want, lastapplied.Always))
	if merged == nil {
		merged = map[string]string{}
	}
	return merged
}

// mergeTaints is mergeMap for taints, keyed by key and effect.
func mergeTaints(current []corev1.Taint, last []taintID, want []corev1.Taint) []corev1.Taint {
	wanted := map[taintID]corev1.Taint{}
	for _, t := range want {
		wanted[idOf(t)] = t
	}
	merged := make([]corev1.Taint, 0, len(current)+len(want))
	for _, t := range current {
		id := idOf(t)
		if w, ok := wanted[id]; ok {
			merged = append(merged, w)
			delete(wanted, id)
			continue
		}
		if !slices.Contains(last, id) {
			merged = append(merged, t) // not ours: keep
		}
	}
	for _, t := range want {
		if _, ok := wanted[idOf(t)]; ok {
			merged = append(merged, t)
		}
	}
	return merged
}

// applyMetadata returns node with Kubeocean's labels, annotations, taints
// and cordon merged in, recording them for the next merge. The result's
// metadata and spec are its own; its status is node's, to be read only.
func applyMetadata(node *corev1.Node, d desiredNode) *corev1.Node {
	last := decodeLastApplied(node)
	out := &corev1.Node{TypeMeta: node.TypeMeta, Status: node.Status}
	node.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	node.Spec.DeepCopyInto(&out.Spec)
	out.Labels = mergeMap(node.Labels, last.Labels, d.labels)
	annotations := mergeMap(node.Annotations, last.Annotations, d.annotations)
	annotations[kubeoceanv1alpha1.AnnotationLastAppliedMetadata] = recordOf(d).encode()
	out.Annotations = annotations
	out.Spec.Taints = mergeTaints(node.Spec.Taints, last.Taints, d.taints)
	if len(out.Spec.Taints) == 0 {
		out.Spec.Taints = nil
	}
	// A cordon follows the physical node, unless a user changed it on the
	// virtual node since we last wrote it.
	if node.Spec.Unschedulable == last.Unschedulable || d.unschedulable != last.Unschedulable {
		out.Spec.Unschedulable = d.unschedulable
	}
	return out
}
