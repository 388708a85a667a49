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
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
)

// Without get nodes/proxy in the physical cluster (the default: it is the
// physical administrator's opt-in), node stats answer 503 and name the
// missing grant; a physical kubelet that serves no stats answers 404, and
// says so; another failure of the physical call stays a 502.
func TestNodeStatsWithoutTheGrant(t *testing.T) {
	for _, tc := range []struct {
		physicalCode int
		want         int
	}{
		{http.StatusForbidden, http.StatusServiceUnavailable},
		{http.StatusInternalServerError, http.StatusBadGateway},
		// The physical kubelet serves no stats (kwok without metrics).
		{http.StatusNotFound, http.StatusNotFound},
	} {
		physicalAPI := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(tc.physicalCode)
			_, _ = w.Write([]byte(`{"kind":"Status","apiVersion":"v1","status":"Failure","code":` + strconv.Itoa(tc.physicalCode) + `}`))
		}))
		s, _ := newTestNodeServer(t, nil)
		s.statsEnabled = true
		s.physical = kubernetes.NewForConfigOrDie(&rest.Config{Host: physicalAPI.URL})
		nodes := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
		_ = nodes.Add(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: testNode,
			Labels: map[string]string{kubeoceanv1alpha1.LabelPhysicalNodeName: "node-a"}}})
		s.virtualNodes = corelisters.NewNodeLister(nodes)

		err := s.serveStats(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/stats/summary", nil), "stats/summary")
		physicalAPI.Close()
		var re *requestError
		if !errors.As(err, &re) || re.Code != tc.want {
			t.Errorf("physical %d: serveStats = %v, want %d", tc.physicalCode, err, tc.want)
			continue
		}
		if tc.want == http.StatusServiceUnavailable && re.Message != NodeStatsNotGranted {
			t.Errorf("physical %d: message %q", tc.physicalCode, re.Message)
		}
		if tc.want == http.StatusNotFound && !strings.Contains(re.Message, "physical node node-a does not serve stats/summary") {
			t.Errorf("physical %d: message %q does not say what the physical node lacks", tc.physicalCode, re.Message)
		}
	}
}

// A physical node name over 63 characters fits no label value, so the
// virtual node carries it in its annotation only; kubectl top node asks
// the physical node of that name all the same.
func TestNodeStatsOfALongPhysicalNodeName(t *testing.T) {
	long := strings.Repeat("n", 70) + ".compute.internal"
	var asked string
	physicalAPI := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		asked = r.URL.Path
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusForbidden)
		_, _ = w.Write([]byte(`{"kind":"Status","apiVersion":"v1","status":"Failure","code":403}`))
	}))
	defer physicalAPI.Close()
	s, _ := newTestNodeServer(t, nil)
	s.statsEnabled = true
	s.physical = kubernetes.NewForConfigOrDie(&rest.Config{Host: physicalAPI.URL})
	nodes := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	_ = nodes.Add(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: testNode,
		Annotations: map[string]string{kubeoceanv1alpha1.AnnotationPhysicalNodeName: long}}})
	s.virtualNodes = corelisters.NewNodeLister(nodes)

	_ = s.serveStats(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/stats/summary", nil), "stats/summary")
	if want := "/api/v1/nodes/" + long + "/proxy/stats/summary"; asked != want {
		t.Errorf("asked the physical apiserver for %q, want %q", asked, want)
	}
}
