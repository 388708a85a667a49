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

package ownership

import (
	"context"
	"errors"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
)

func TestPredecessors(t *testing.T) {
	ours := Owner{ClusterID: "cls-1", BindingUID: "uid-new"}
	earlier := Owner{ClusterID: "cls-1", BindingUID: "uid-old"}
	deleting := Owner{ClusterID: "cls-1", BindingUID: "uid-deleting"}
	elsewhere := Owner{ClusterID: "cls-2", BindingUID: "uid-elsewhere"}
	asked := map[types.UID]int{}
	p := NewPredecessors(ours, func(_ context.Context, uid types.UID) (bool, error) {
		asked[uid]++
		return uid == deleting.BindingUID, nil
	})
	obj := func(labels map[string]string) *metav1.ObjectMeta { return &metav1.ObjectMeta{Labels: labels} }
	ctx := context.Background()

	if p.Proven(obj(earlier.Stamp(nil))) {
		t.Fatal("a predecessor is proven before any pod proves it")
	}
	for _, tc := range []struct {
		name   string
		labels map[string]string
		want   bool
	}{
		{"earlier binding, gone", earlier.Stamp(nil), true},
		{"earlier binding still deleting", deleting.Stamp(nil), false},
		{"another cluster ID", elsewhere.Stamp(nil), false},
		{"ours", ours.Stamp(nil), false},
		{"legacy", map[string]string{kubeoceanv1alpha1.LabelManagedBy: kubeoceanv1alpha1.ManagedByKubeocean}, false},
		{"not Kubeocean's", map[string]string{kubeoceanv1alpha1.LabelClusterID: "cls-1", kubeoceanv1alpha1.LabelBindingUID: "uid-old"}, false},
	} {
		got, err := p.ProveByTwin(ctx, obj(tc.labels))
		if err != nil || got != tc.want {
			t.Errorf("%s: ProveByTwin = %v, %v; want %v", tc.name, got, err, tc.want)
		}
		if got := p.Proven(obj(tc.labels)); got != tc.want {
			t.Errorf("%s: Proven = %v, want %v", tc.name, got, tc.want)
		}
	}
	// A proof holds: UIDs never come back, so liveness is asked once.
	if _, err := p.ProveByTwin(ctx, obj(earlier.Stamp(nil))); err != nil || asked[earlier.BindingUID] != 1 {
		t.Errorf("liveness of a proven predecessor asked %d times, err %v", asked[earlier.BindingUID], err)
	}
	// A proven predecessor's UID under another cluster ID proves nothing.
	if p.Proven(obj(Owner{ClusterID: "cls-2", BindingUID: "uid-old"}.Stamp(nil))) {
		t.Error("a proven UID under another cluster ID is proven")
	}

	failing := NewPredecessors(ours, func(context.Context, types.UID) (bool, error) { return false, errors.New("forbidden") })
	if ok, err := failing.ProveByTwin(ctx, obj(earlier.Stamp(nil))); ok || err == nil {
		t.Errorf("ProveByTwin without liveness = %v, %v; want an error and no proof", ok, err)
	}
	var none *Predecessors
	if ok, err := none.ProveByTwin(ctx, obj(earlier.Stamp(nil))); ok || err != nil || none.Proven(obj(earlier.Stamp(nil))) {
		t.Error("nil Predecessors proves something")
	}
}
