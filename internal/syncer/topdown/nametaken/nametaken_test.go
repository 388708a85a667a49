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

package nametaken

import (
	"fmt"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
)

// The condition names the first pods in order, says how many more there
// are, and turns False once none is blocked; only a change asks for a
// write.
func TestCondition(t *testing.T) {
	c := New("worker-1", nil)
	for i := range maxBlockedListed + 2 {
		key := cache.ObjectName{Namespace: "team-a", Name: fmt.Sprintf("web-%d", i)}
		if !c.set(key, "physical pod mount/x") {
			t.Fatalf("a new blocked pod %s asks for no write", key)
		}
	}
	if !c.set(cache.ObjectName{Namespace: "team-a", Name: "web-0"}, "physical pod mount/x") {
		t.Error("before the condition was ever written, the same blocker again asks for no write")
	}
	c.markSynced()
	if c.set(cache.ObjectName{Namespace: "team-a", Name: "web-0"}, "physical pod mount/x") {
		t.Error("once written, the same blocker again asks for a write")
	}
	status, reason, message := c.condition()
	if status != metav1.ConditionTrue || reason != kubeoceanv1alpha1.ReasonPhysicalNameTakenByOther ||
		!strings.HasPrefix(message, "7 pods cannot be created") || !strings.Contains(message, "team-a/web-0: physical pod mount/x") ||
		!strings.Contains(message, "and 2 more") || strings.Contains(message, "web-6:") {
		t.Errorf("condition = %s %s %q", status, reason, message)
	}
	for i := range maxBlockedListed + 2 {
		c.set(cache.ObjectName{Namespace: "team-a", Name: fmt.Sprintf("web-%d", i)}, "")
	}
	if status, reason, _ := c.condition(); status != metav1.ConditionFalse || reason != kubeoceanv1alpha1.ReasonNoPhysicalNameTaken {
		t.Errorf("with no pod blocked: %s %s", status, reason)
	}
}
