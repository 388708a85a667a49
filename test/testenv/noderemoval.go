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

package testenv

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
)

// ConfirmNodeRemoval waits until the binding holds a node removal that a
// configuration change asked for (NodeRemovalHeld=True) under a token
// other than previous, confirms it as an operator does (the annotation
// kubeocean.io/confirm-node-removal), and returns the token.
func (w *SyncerWorld) ConfirmNodeRemoval(t *testing.T, previous string) string {
	t.Helper()
	var token string
	WaitFor(t, 30*time.Second, "the binding holds a new node removal", func(ctx context.Context) (bool, error) {
		b, err := w.VirtualOcean.KubeoceanV1alpha1().ClusterBindings().Get(ctx, w.Binding, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		held := meta.FindStatusCondition(b.Status.Conditions, kubeoceanv1alpha1.ClusterBindingConditionNodeRemovalHeld)
		if held == nil || held.Status != metav1.ConditionTrue || !strings.Contains(held.Message, " --overwrite") {
			return false, fmt.Errorf("condition %+v", held)
		}
		token = held.Message[strings.LastIndex(held.Message, "=")+1 : strings.LastIndex(held.Message, " --overwrite")]
		return token != previous, fmt.Errorf("token %q", token)
	})
	w.UpdateBinding(t, func(b *kubeoceanv1alpha1.ClusterBinding) {
		if b.Annotations == nil {
			b.Annotations = map[string]string{}
		}
		b.Annotations[kubeoceanv1alpha1.AnnotationConfirmNodeRemoval] = token
	})
	return token
}

// UpdateBinding changes the world's ClusterBinding with mutate, on the
// latest version: the syncer writes its status meanwhile.
func (w *SyncerWorld) UpdateBinding(t *testing.T, mutate func(*kubeoceanv1alpha1.ClusterBinding)) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		b, err := w.VirtualOcean.KubeoceanV1alpha1().ClusterBindings().Get(t.Context(), w.Binding, metav1.GetOptions{})
		if err != nil {
			return err
		}
		mutate(b)
		_, err = w.VirtualOcean.KubeoceanV1alpha1().ClusterBindings().Update(t.Context(), b, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}
