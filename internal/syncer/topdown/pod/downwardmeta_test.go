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
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubeocean/kubeocean/internal/syncer/tenantmeta"
	"github.com/kubeocean/kubeocean/internal/syncer/topdown/podidentity"
	"github.com/kubeocean/kubeocean/internal/syncer/topdown/podtest"
)

// podReadingItsMetadata reads its labels and annotations through a
// downward-API volume and its annotation "team" and label "app" in env.
func podReadingItsMetadata() *corev1.Pod {
	pod := podtest.BoundPod()
	pod.Annotations = map[string]string{"team": "a", "k8s.v1.cni.cncf.io/networks": "macvlan"}
	pod.Spec.Containers[0].Env = append(pod.Spec.Containers[0].Env,
		podtest.FieldEnv("TEAM", "metadata.annotations['team']"), podtest.FieldEnv("APP", "metadata.labels['app']"))
	pod.Spec.Volumes = []corev1.Volume{{Name: "podinfo", VolumeSource: corev1.VolumeSource{DownwardAPI: &corev1.DownwardAPIVolumeSource{
		Items: []corev1.DownwardAPIVolumeFile{
			{Path: "labels", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.labels"}},
			{Path: "annotations", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.annotations"}},
			{Path: "app", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.labels['app']"}},
		}}}}}
	return pod
}

func (f *fixture) tokenSecretData() map[string]string {
	f.t.Helper()
	secret, err := f.physicalKube.CoreV1().Secrets(mountNS).Get(context.Background(), podidentity.SecretName(physicalName), metav1.GetOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	out := map[string]string{}
	for k, v := range secret.Data {
		out[k] = string(v)
	}
	return out
}

// TestDownwardAPIServesTheVirtualMetadata: a pod that reads its labels
// and annotations sees the virtual pod's, not the translated ones of its
// physical pod; when they change, the values are patched into its Secret
// (no token is issued), once.
func TestDownwardAPIServesTheVirtualMetadata(t *testing.T) {
	f := newFixture(t, seed{virtualPods: []*corev1.Pod{podReadingItsMetadata()}})
	f.mustReconcile()
	// The Secret is made with the values and their digest: no patch.
	if writes := f.takeWrites(); !slices.Equal(slices.Sorted(slices.Values(writes)),
		[]string{"physical create pods", "physical create secrets"}) {
		t.Errorf("writes = %q, want the Secret and the pod", writes)
	}
	physical, err := f.physicalPod()
	if err != nil {
		t.Fatal(err)
	}
	data := f.tokenSecretData()
	if got, want := data["metadata.labels"], `app="web"`; got != want {
		t.Errorf("labels file = %q, want %q", got, want)
	}
	if got, want := data["metadata.annotations"], `k8s.v1.cni.cncf.io/networks="macvlan"`+"\n"+`team="a"`; got != want {
		t.Errorf("annotations file = %q, want %q", got, want)
	}
	env := map[string]corev1.EnvVar{}
	for _, e := range physical.Spec.Containers[0].Env {
		env[e.Name] = e
	}
	if ref := env["TEAM"].ValueFrom; ref == nil || ref.SecretKeyRef == nil || data[ref.SecretKeyRef.Key] != "a" ||
		ref.SecretKeyRef.Name != podidentity.SecretName(physicalName) {
		t.Errorf("TEAM = %+v, want the token Secret's key holding %q", env["TEAM"], "a")
	}
	if ref := env["APP"].ValueFrom; ref == nil || ref.FieldRef == nil ||
		ref.FieldRef.FieldPath != "metadata.labels['"+tenantmeta.LabelKey("app")+"']" || physical.Labels[tenantmeta.LabelKey("app")] != "web" {
		t.Errorf("APP = %+v, want the translated label, which holds %q", env["APP"], "web")
	}
	sources := physical.Spec.Volumes[0].Projected
	if sources == nil || len(sources.Sources) != 2 || sources.Sources[0].DownwardAPI.Items[0].FieldRef.FieldPath != "metadata.labels['label.kubeocean.io/app']" ||
		len(sources.Sources[1].Secret.Items) != 2 {
		t.Errorf("podinfo volume = %+v, want the label item translated and the two maps from the token Secret", physical.Spec.Volumes[0])
	}

	// The Secret made with the pod records what it serves: the next pass
	// writes nothing.
	f.syncCaches()
	f.takeWrites()
	f.mustReconcile()
	assertWrites(t, f)
	virtual := f.virtualPod()
	virtual.Labels["tier"] = "front"
	virtual.Annotations["team"] = "b"
	if _, err := f.virtualKube.CoreV1().Pods(virtualNS).Update(context.Background(), virtual, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.syncCaches()
	f.takeWrites()
	f.mustReconcile()
	assertWrites(t, f, "physical patch pods", "physical patch secrets")
	data = f.tokenSecretData()
	if got, want := data["metadata.labels"], `app="web"`+"\n"+`tier="front"`; got != want {
		t.Errorf("labels file after the change = %q, want %q", got, want)
	}
	if !strings.Contains(data["metadata.annotations"], `team="b"`) || data[podidentity.SecretKey("metadata.annotations['team']")] != "b" {
		t.Errorf("annotations after the change = %q, %q", data["metadata.annotations"], data[podidentity.SecretKey("metadata.annotations['team']")])
	}
	f.syncCaches()
	f.mustReconcile()
	assertWrites(t, f)
}

// A pod that reads no labels or annotations gets no Secret for them, and
// a label change of a pod with a token Secret costs that Secret nothing.
func TestMetadataChangeWithoutDownwardAPIWritesNoSecret(t *testing.T) {
	virtual := withTokenVolume(podtest.BoundPod())
	f := newFixture(t, seed{virtualPods: []*corev1.Pod{virtual}})
	f.mustReconcile()
	if _, ok := f.tokenSecretData()["metadata.labels"]; ok {
		t.Error("the Secret serves labels nobody reads")
	}
	f.syncCaches()
	f.takeWrites()
	changed := f.virtualPod()
	changed.Labels["tier"] = "front"
	if _, err := f.virtualKube.CoreV1().Pods(virtualNS).Update(context.Background(), changed, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.syncCaches()
	f.takeWrites()
	f.mustReconcile()
	assertWrites(t, f, "physical patch pods")
}
