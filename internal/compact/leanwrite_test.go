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

package compact

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// TestWholeObjectInJSON: an API server that cannot convert its answer to
// metadata sends the whole object in JSON, whose metadata is taken.
func TestWholeObjectInJSON(t *testing.T) {
	var accept string
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		accept = r.Header.Get("Accept")
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		_ = json.NewEncoder(w).Encode(&corev1.Pod{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
			ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns", UID: "stored", ResourceVersion: "7"},
			Spec:       corev1.PodSpec{NodeName: "defaulted"},
		})
	}))
	defer server.Close()
	kube := kubernetes.NewForConfigOrDie(&rest.Config{Host: server.URL})

	sent := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns"}, Spec: corev1.PodSpec{NodeName: "node-1"}}
	created, err := LeanWrites(kube.CoreV1()).Pods("ns").Create(t.Context(), sent, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if created.UID != "stored" || created.ResourceVersion != "7" || created.Spec.NodeName != "node-1" {
		t.Errorf("created = uid %q rv %q node %q; want the stored metadata and the spec sent", created.UID, created.ResourceVersion, created.Spec.NodeName)
	}
	if !strings.HasPrefix(accept, "application/vnd.kubernetes.protobuf;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,") {
		t.Errorf("Accept = %q, want metadata first", accept)
	}
}
