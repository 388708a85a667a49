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

package topdown

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
	"github.com/kubeocean/kubeocean/test/testenv"
)

// TestServiceEndpointsElsewhere: a Service whose pods run on two bindings.
// Isolated (the default), binding A's mirror leaves B's pod out and the
// virtual Service gets the EndpointsInOtherClusters event from A's syncer,
// naming binding B. Once A declares its network joined with B's, A's
// syncer writes an EndpointSlice for its mirror that holds B's pod with
// its real IP (the virtual pod's status.podIP), and not A's own pod, which
// the physical EndpointSlice controller lists.
func TestServiceEndpointsElsewhere(t *testing.T) {
	a := lendNodeFrom(t, virtualCluster, "svc-ea", "svcea")
	b := lendNodeFrom(t, virtualCluster, "svc-eb", "svceb")
	ctx := t.Context()
	const ns = "svc-spread"
	testenv.CreateNamespace(t, a.Virtual, ns)
	createService(t, a, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "api"},
		Spec: corev1.ServiceSpec{
			Selector: map[string]string{"app": "api"},
			Ports:    []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromInt32(8080)}},
		},
	})
	ips := map[string]string{}
	for _, w := range []*testenv.SyncerWorld{a, b} {
		name := "api-" + w.ClusterID
		pod := workload(ns, name, w.ClusterID, func(p *corev1.Pod) {
			p.Labels["app"] = "api"
			p.Spec.AutomountServiceAccountToken = ptr.To(false)
		})
		if _, err := a.Virtual.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		testenv.WaitFor(t, 60*time.Second, "virtual pod "+name+" ready with an IP", func(ctx context.Context) (bool, error) {
			p, err := a.Virtual.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			ips[w.ClusterID] = p.Status.PodIP
			for _, c := range p.Status.Conditions {
				if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
					return p.Status.PodIP != "", fmt.Errorf("no IP")
				}
			}
			return false, fmt.Errorf("not ready: %v", p.Status.Conditions)
		})
	}
	if ips[a.ClusterID] == ips[b.ClusterID] {
		t.Fatalf("both pods have IP %s: the test could not tell them apart", ips[a.ClusterID])
	}

	// Isolated: A's syncer says that one ready endpoint is on binding B.
	testenv.WaitFor(t, 60*time.Second, "the EndpointsInOtherClusters event of binding "+a.Binding, func(ctx context.Context) (bool, error) {
		events, err := a.Virtual.CoreV1().Events(ns).List(ctx, metav1.ListOptions{
			FieldSelector: "involvedObject.name=api,reason=" + kubeoceanv1alpha1.ReasonEndpointsInOtherClusters})
		if err != nil {
			return false, err
		}
		var seen []string
		for _, e := range events.Items {
			if e.Type == corev1.EventTypeWarning && strings.Contains(e.Message, "pods of binding "+a.Binding+" cannot") &&
				strings.Contains(e.Message, "1 ready endpoint(s)") && strings.Contains(e.Message, "1 on binding "+b.Binding) {
				return true, nil
			}
			seen = append(seen, e.Message)
		}
		return false, fmt.Errorf("events %q", seen)
	})
	mirror := kubeoceanv1alpha1.PhysicalName(ns, "api")
	if slices := joinedSlices(ctx, t, a, mirror); len(slices) > 0 {
		t.Fatalf("an isolated binding's mirror has joined slices: %+v", slices)
	}

	// Joined with B: A's mirror holds B's pod by its IP.
	a.UpdateBinding(t, func(binding *kubeoceanv1alpha1.ClusterBinding) {
		binding.Spec.Network = &kubeoceanv1alpha1.ClusterBindingNetwork{JoinedWith: []string{b.Binding}}
	})
	testenv.WaitFor(t, 30*time.Second, "A's joined EndpointSlice holding B's pod's IP "+ips[b.ClusterID], func(ctx context.Context) (bool, error) {
		slices := joinedSlices(ctx, t, a, mirror)
		if len(slices) != 1 {
			return false, fmt.Errorf("%d joined slices", len(slices))
		}
		s := slices[0]
		var addresses []string
		for _, e := range s.Endpoints {
			addresses = append(addresses, e.Addresses...)
		}
		ok := len(addresses) == 1 && addresses[0] == ips[b.ClusterID] && *s.Endpoints[0].Conditions.Ready &&
			*s.Ports[0].Port == 8080 && s.Labels[kubeoceanv1alpha1.LabelBindingUID] == a.BindingUID(ctx)
		return ok, fmt.Errorf("slice %s: addresses %v, ports %+v, labels %v", s.Name, addresses, s.Ports, s.Labels)
	})
}

// joinedSlices lists the EndpointSlices the syncer of w wrote for mirror.
func joinedSlices(ctx context.Context, t *testing.T, w *testenv.SyncerWorld, mirror string) []discoveryv1.EndpointSlice {
	t.Helper()
	list, err := w.Physical.DiscoveryV1().EndpointSlices(w.Mount).List(ctx, metav1.ListOptions{
		LabelSelector: discoveryv1.LabelServiceName + "=" + mirror + "," + discoveryv1.LabelManagedBy + "=" + kubeoceanv1alpha1.EndpointSliceManagedBySyncer})
	if err != nil {
		t.Fatal(err)
	}
	var out []discoveryv1.EndpointSlice
	for _, s := range list.Items {
		if strings.HasPrefix(s.Name, mirror+kubeoceanv1alpha1.EndpointSliceJoinedSuffix) {
			out = append(out, s)
		}
	}
	return out
}
