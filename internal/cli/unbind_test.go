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

package cli

import (
	"bytes"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	kubefake "k8s.io/client-go/kubernetes/fake"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
	kubeoceanfake "github.com/kubeocean/kubeocean/generated/clientset/versioned/fake"
)

func unbindClients(objects ...*corev1.Event) (*clients, *kubeoceanfake.Clientset) {
	ocean := kubeoceanfake.NewSimpleClientset(&kubeoceanv1alpha1.ClusterBinding{ObjectMeta: metav1.ObjectMeta{Name: "worker-1", UID: "binding-uid"}})
	kube := kubefake.NewClientset()
	for _, e := range objects {
		_ = kube.Tracker().Add(e)
	}
	return &clients{kube: kube, ocean: ocean}, ocean
}

// bindingWrites is the sequence of writes on ClusterBindings, with the
// annotations a patch sets.
func bindingWrites(ocean *kubeoceanfake.Clientset) []string {
	var out []string
	for _, a := range ocean.Actions() {
		switch a.GetVerb() {
		case "patch", "delete":
			entry := a.GetVerb()
			if p, ok := a.(interface{ GetPatch() []byte }); ok {
				entry += " " + string(p.GetPatch())
			}
			out = append(out, entry)
		}
	}
	return out
}

// --delete-volumes sets the annotation the sweep honours before the
// binding is deleted; without it, the binding is only deleted.
func TestUnbindDeleteVolumesAnnotatesFirst(t *testing.T) {
	for _, tc := range []struct {
		opts unbindOptions
		want string
	}{
		{unbindOptions{name: "worker-1"}, "delete"},
		{unbindOptions{name: "worker-1", deleteVolumes: true}, `patch {"metadata":{"annotations":{"kubeocean.io/delete-volumes":"true"}}}, delete`},
		{unbindOptions{name: "worker-1", force: true}, `patch {"metadata":{"annotations":{"kubeocean.io/force-unbind":"true"}}}, delete`},
	} {
		c, ocean := unbindClients()
		if err := tc.opts.run(t.Context(), c, &bytes.Buffer{}); err != nil {
			t.Fatal(err)
		}
		if got := strings.Join(bindingWrites(ocean), ", "); got != tc.want {
			t.Errorf("%+v: writes %s, want %s", tc.opts, got, tc.want)
		}
	}
}

// A forced unbinding cleans up nothing, so it cannot delete volumes: the
// combination is refused before anything is written.
func TestUnbindRefusesForceWithDeleteVolumes(t *testing.T) {
	c, ocean := unbindClients()
	o := unbindOptions{name: "worker-1", force: true, deleteVolumes: true}
	if err := o.run(t.Context(), c, &bytes.Buffer{}); err == nil {
		t.Error("--force --delete-volumes was accepted")
	}
	if w := bindingWrites(ocean); len(w) != 0 {
		t.Errorf("writes %v", w)
	}
}

// Once the binding is gone, unbind prints what its syncer kept: the
// binding's VolumesRetained events, not another binding's.
func TestUnbindPrintsTheVolumesKept(t *testing.T) {
	event := func(name string, uid, reason, message string) *corev1.Event {
		return &corev1.Event{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name},
			InvolvedObject: corev1.ObjectReference{Kind: "ClusterBinding", Name: "worker-1", UID: types.UID(uid)},
			Reason:         reason, Message: message}
	}
	c, _ := unbindClients(
		event("a", "binding-uid", kubeoceanv1alpha1.EventVolumesRetained, "Kept 1 physical volumes with their data: pv-1"),
		event("b", "earlier-uid", kubeoceanv1alpha1.EventVolumesRetained, "Kept 1 physical volumes with their data: pv-old"),
		event("c", "binding-uid", "SyncerCleanedUp", "cleaned"),
	)
	var out bytes.Buffer
	o := unbindOptions{name: "worker-1", wait: 10 * time.Second}
	if err := o.run(t.Context(), c, &out); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "pv-1") || strings.Contains(out.String(), "pv-old") || strings.Contains(out.String(), "cleaned") {
		t.Errorf("output:\n%s\nwant the binding's VolumesRetained event only", out.String())
	}
}
