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

package kubeletapi

import (
	"errors"
	"net/http"
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
)

// Node stats name the virtual pods of the binding's physical pods on the
// physical node, read from the lister or, when the syncer gives one, from
// PhysicalPodsOn: the same pods either way.
func TestVirtualPodsOn(t *testing.T) {
	physical := func(namespace, name, node, virtual string) *corev1.Pod {
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}, Spec: corev1.PodSpec{NodeName: node}}
		if virtual != "" {
			pod.Annotations = map[string]string{
				kubeoceanv1alpha1.AnnotationVirtualPodNamespace: "app", kubeoceanv1alpha1.AnnotationVirtualPodName: virtual,
				kubeoceanv1alpha1.AnnotationVirtualPodUID: virtual + "-uid"}
		}
		return pod
	}
	pods := []*corev1.Pod{
		physical(testMount, "web-a", "worker-1", "web-a"),
		physical(testMount, "web-b", "worker-2", "web-b"),
		physical(testMount, "stray", "worker-1", ""),
		physical("elsewhere", "other", "worker-1", "other"),
	}
	indexer := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	for _, p := range pods {
		if err := indexer.Add(p); err != nil {
			t.Fatal(err)
		}
	}
	want := map[string]virtualRef{testMount + "/web-a": {Namespace: "app", Name: "web-a", UID: "web-a-uid"}}
	listed := &resolver{physicalPods: corelisters.NewPodLister(indexer), mountNamespace: testMount}
	given := &resolver{mountNamespace: testMount, physicalPodsOn: func(node string) []metav1.Object {
		var on []metav1.Object
		for _, p := range pods {
			if p.Spec.NodeName == node {
				on = append(on, p)
			}
		}
		return on
	}}
	for what, r := range map[string]*resolver{"from the lister": listed, "from PhysicalPodsOn": given} {
		got, err := r.virtualPodsOn("worker-1")
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("%s: %v, %v; want %v", what, got, err, want)
		}
	}
}

// A virtual pod reaches only the physical pod made for it. Mapping
// annotations that name another pod (another tenant's twin, forged by
// whoever may edit the pod) are refused before any physical request, with
// a Warning event on the pod; a physical pod of the right name that
// records another virtual pod (an earlier one of the same name) is not
// this pod's either.
func TestResolveTrustsOnlyWhatThePhysicalPodRecords(t *testing.T) {
	victim := virtualPod("team-b", "db-0", testNode, true)
	forger := virtualPod("team-a", "probe", testNode, false)
	forger.Annotations[kubeoceanv1alpha1.AnnotationPhysicalPodNamespace] = testMount
	forger.Annotations[kubeoceanv1alpha1.AnnotationPhysicalPodName] = kubeoceanv1alpha1.PhysicalName("team-b", "db-0")
	halfForged := virtualPod("team-a", "half", testNode, false)
	halfForged.Annotations[kubeoceanv1alpha1.AnnotationPhysicalPodName] = kubeoceanv1alpha1.PhysicalName("team-b", "db-0")
	reborn := virtualPod("team-a", "web", testNode, true)
	earlier := physicalTwin(reborn)
	earlier.Annotations[kubeoceanv1alpha1.AnnotationVirtualPodUID] = "uid-of-an-earlier-pod"
	impostor := virtualPod("team-a", "impostor", testNode, true)
	misrecorded := physicalTwin(impostor)
	misrecorded.Annotations[kubeoceanv1alpha1.AnnotationVirtualPodName] = "someone-else"

	virtual := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	physical := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	for _, p := range []*corev1.Pod{victim, forger, halfForged, reborn, impostor} {
		if err := virtual.Add(p); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range []*corev1.Pod{physicalTwin(victim), earlier, misrecorded} {
		if err := physical.Add(p); err != nil {
			t.Fatal(err)
		}
	}
	recorder := record.NewFakeRecorder(10)
	r := &resolver{virtualPods: corelisters.NewPodLister(virtual), physicalPods: corelisters.NewPodLister(physical),
		mountNamespace: testMount, recorder: recorder}

	target, err := r.pod(testNode, "team-b", "db-0", "app")
	if err != nil || target.Name != kubeoceanv1alpha1.PhysicalName("team-b", "db-0") || target.Namespace != testMount {
		t.Fatalf("the victim's own pod: %+v, %v", target, err)
	}
	for _, tc := range []struct {
		pod   *corev1.Pod
		event bool
	}{{forger, true}, {halfForged, true}, {reborn, false}, {impostor, false}} {
		target, err := r.pod(testNode, tc.pod.Namespace, tc.pod.Name, "app")
		var re *requestError
		if !errors.As(err, &re) || re.Code != http.StatusNotFound {
			t.Errorf("%s/%s resolved to %+v, %v; want 404", tc.pod.Namespace, tc.pod.Name, target, err)
		}
		select {
		case e := <-recorder.Events:
			if !tc.event {
				t.Errorf("%s/%s: unexpected event %q", tc.pod.Namespace, tc.pod.Name, e)
			} else if !strings.Contains(e, "Warning "+kubeoceanv1alpha1.ReasonPhysicalPodMappingRefused) || !strings.Contains(e, kubeoceanv1alpha1.PhysicalName("team-b", "db-0")) {
				t.Errorf("%s/%s: event %q", tc.pod.Namespace, tc.pod.Name, e)
			}
		default:
			if tc.event {
				t.Errorf("%s/%s: no Warning event", tc.pod.Namespace, tc.pod.Name)
			}
		}
	}
}
