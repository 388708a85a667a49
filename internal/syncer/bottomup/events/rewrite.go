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

package events

import (
	"crypto/sha256"
	"encoding/hex"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
)

// maxMessage bounds the message of a virtual event, as the events API
// bounds a note; longer physical messages are cut.
const maxMessage = 1024

// aggregateOf is the identity of the physical events that make one virtual
// event, as tools/record's EventLogger aggregates them: the same involved
// object, type, reason, message and reporter. Ten Event objects with one
// message about one pod, or one with a count of ten, both count ten.
func aggregateOf(e *corev1.Event) string {
	o := e.InvolvedObject
	parts := []string{o.Kind, o.Namespace, o.Name, string(o.UID), o.FieldPath, e.Type, e.Reason, e.Message, reporterOf(e), e.Source.Host}
	sum := sha256.Sum256([]byte(strings.Join(parts, "\x00")))
	return hex.EncodeToString(sum[:12])
}

// reporterOf is the component that reported a physical event.
func reporterOf(e *corev1.Event) string {
	if e.Source.Component != "" {
		return e.Source.Component
	}
	return e.ReportingController
}

// occurrences is how many times a physical event happened: the count
// tools/record keeps, or the series count of the events API, at least 1.
func occurrences(e *corev1.Event) int32 {
	n := e.Count
	if e.Series != nil && e.Series.Count > n {
		n = e.Series.Count
	}
	return max(n, 1)
}

// firstSeen and lastSeen are when a physical event first and last
// happened, from whichever of the two APIs' fields it has.
func firstSeen(e *corev1.Event) time.Time {
	switch {
	case !e.FirstTimestamp.IsZero():
		return e.FirstTimestamp.Time
	case !e.EventTime.IsZero():
		return e.EventTime.Time
	}
	return e.CreationTimestamp.Time
}

func lastSeen(e *corev1.Event) time.Time {
	last := firstSeen(e)
	if !e.LastTimestamp.IsZero() && e.LastTimestamp.After(last) {
		last = e.LastTimestamp.Time
	}
	if e.Series != nil && e.Series.LastObservedTime.After(last) {
		last = e.Series.LastObservedTime.Time
	}
	return last
}

// target is the virtual object the events of one physical object are
// recorded on, and the physical names to hide in their messages.
type target struct {
	ref corev1.ObjectReference
	// names maps physical names (pod, namespace/pod, node, namespace) to
	// the virtual ones.
	names map[string]string
	// hosts maps the physical node the event reports from to its virtual
	// node; an event from any other host shows none.
	hosts map[string]string
}

// virtualEvent is the virtual event that records events, which all have
// one aggregate, on t: the same type and reason, the message with the
// physical names rewritten, the sum of their counts, the first and last
// time they happened.
func (t target) virtualEvent(clusterID string, events []*corev1.Event) *corev1.Event {
	sort.Slice(events, func(i, j int) bool { return firstSeen(events[i]).Before(firstSeen(events[j])) })
	first := events[0]
	var count int32
	var last time.Time
	for _, e := range events {
		count += occurrences(e)
		if seen := lastSeen(e); seen.After(last) {
			last = seen
		}
	}
	component := kubeoceanv1alpha1.EventComponentPrefix + reporterOf(first)
	ref := t.ref
	ref.FieldPath = first.InvolvedObject.FieldPath
	message := rewrite(first.Message, t.names)
	if len(message) > maxMessage {
		message = message[:maxMessage]
	}
	host := t.hosts[first.Source.Host]
	namespace := ref.Namespace
	if namespace == "" {
		// Events of cluster-scoped objects live in default, as
		// tools/record writes them.
		namespace = metav1.NamespaceDefault
	}
	return &corev1.Event{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: namespace,
			Name:      virtualEventName(ref, aggregateOf(first)),
			Labels: map[string]string{
				kubeoceanv1alpha1.LabelManagedBy: kubeoceanv1alpha1.ManagedByKubeocean,
				kubeoceanv1alpha1.LabelClusterID: clusterID,
			},
		},
		InvolvedObject:      ref,
		Type:                first.Type,
		Reason:              first.Reason,
		Message:             message,
		Source:              corev1.EventSource{Component: component, Host: host},
		ReportingController: component,
		ReportingInstance:   host,
		FirstTimestamp:      metav1.NewTime(firstSeen(first)),
		LastTimestamp:       metav1.NewTime(last),
		Count:               count,
	}
}

// virtualEventName names the virtual event of an aggregate on ref, the
// same in every run of the syncer, so that a restarted syncer finds what
// it wrote before rather than recording it again. Like tools/record's
// names it starts with the object's name.
func virtualEventName(ref corev1.ObjectReference, aggregate string) string {
	sum := sha256.Sum256([]byte(aggregate + "/" + string(ref.UID)))
	suffix := "." + hex.EncodeToString(sum[:8])
	name := ref.Name
	if limit := 253 - len(suffix); len(name) > limit {
		name = name[:limit]
	}
	return name + suffix
}

// podRef is the reference of a virtual pod.
func podRef(namespace, name string, uid types.UID) corev1.ObjectReference {
	return corev1.ObjectReference{Kind: "Pod", APIVersion: "v1", Namespace: namespace, Name: name, UID: uid}
}

// rewrite replaces in message every name of names that stands alone (not
// part of a longer name: the characters around it are not letters, digits
// or '-'), in one pass, so a virtual name that contains a physical one
// (vnode-<id>-<node> contains <node>) is not replaced again. Longer names
// win, so namespace/pod is replaced whole.
func rewrite(message string, names map[string]string) string {
	keys := make([]string, 0, len(names))
	for k := range names {
		if k != "" {
			keys = append(keys, k)
		}
	}
	sort.Slice(keys, func(i, j int) bool { return len(keys[i]) > len(keys[j]) })
	var out strings.Builder
	for i := 0; i < len(message); {
		replaced := false
		if i == 0 || !nameChar(message[i-1]) {
			for _, k := range keys {
				end := i + len(k)
				if strings.HasPrefix(message[i:], k) && (end == len(message) || !nameChar(message[end])) {
					out.WriteString(names[k])
					i = end
					replaced = true
					break
				}
			}
		}
		if !replaced {
			out.WriteByte(message[i])
			i++
		}
	}
	return out.String()
}

// nameChar tells the characters that continue a Kubernetes name. A '.'
// does not: it ends sentences more often than it joins names here.
func nameChar(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_'
}
