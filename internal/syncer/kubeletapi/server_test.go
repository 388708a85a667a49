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
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/client-go/kubernetes/fake"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/rest"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
)

const (
	testNode  = "vnode-c1-n1"
	testMount = "mount"
)

// testAuth knows the bearer tokens "admin" (allowed everything) and
// "nobody" (allowed nothing), and records what it authorized.
func testAuth(seen *[]authorizer.Attributes) *Auth {
	return &Auth{
		Authenticator: authenticator.RequestFunc(func(r *http.Request) (*authenticator.Response, bool, error) {
			token := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
			if token != "admin" && token != "nobody" {
				return nil, false, nil
			}
			return &authenticator.Response{User: &user.DefaultInfo{Name: token}}, true, nil
		}),
		Authorizer: authorizer.AuthorizerFunc(func(_ context.Context, a authorizer.Attributes) (authorizer.Decision, string, error) {
			*seen = append(*seen, a)
			if a.GetUser().GetName() == "admin" {
				return authorizer.DecisionAllow, "", nil
			}
			return authorizer.DecisionDeny, "not allowed", nil
		}),
	}
}

func virtualPod(ns, name, node string, mapped bool) *corev1.Pod {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID(ns + "-" + name + "-uid"), Annotations: map[string]string{}},
		Spec:       corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "app"}}},
	}
	if mapped {
		pod.Annotations[kubeoceanv1alpha1.AnnotationPhysicalPodNamespace] = testMount
		pod.Annotations[kubeoceanv1alpha1.AnnotationPhysicalPodName] = kubeoceanv1alpha1.PhysicalName(ns, name)
	}
	return pod
}

// physicalTwin is the physical pod the syncer makes for virtual: named by
// the physical name rule, recording the virtual pod it was made for.
func physicalTwin(virtual *corev1.Pod) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{
		Namespace: testMount, Name: kubeoceanv1alpha1.PhysicalName(virtual.Namespace, virtual.Name),
		Annotations: map[string]string{
			kubeoceanv1alpha1.AnnotationVirtualPodNamespace: virtual.Namespace,
			kubeoceanv1alpha1.AnnotationVirtualPodName:      virtual.Name,
			kubeoceanv1alpha1.AnnotationVirtualPodUID:       string(virtual.UID),
		},
	}}
}

func newTestNodeServer(t *testing.T, seen *[]authorizer.Attributes, pods ...*corev1.Pod) (*nodeServer, *fake.Clientset) {
	t.Helper()
	indexer := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	physicalPods := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	for _, p := range pods {
		if err := indexer.Add(p); err != nil {
			t.Fatal(err)
		}
		// Pods named "created-*" are mapped but not in the physical cache.
		if name := p.Annotations[kubeoceanv1alpha1.AnnotationPhysicalPodName]; name != "" && !strings.HasPrefix(p.Name, "created-") {
			_ = physicalPods.Add(physicalTwin(p))
		}
	}
	metrics, err := NewMetrics(prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	physical := fake.NewClientset()
	return &nodeServer{
		node: testNode, auth: testAuth(seen), physical: physical, metrics: metrics, sessions: newSessions(0, metrics),
		resolver: &resolver{virtualPods: corelisters.NewPodLister(indexer), physicalPods: corelisters.NewPodLister(physicalPods), mountNamespace: testMount},
	}, physical
}

func get(t *testing.T, url, token string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

func TestContainerLogs(t *testing.T) {
	var seen []authorizer.Attributes
	s, physical := newTestNodeServer(t, &seen,
		virtualPod("a", "web", testNode, true),
		virtualPod("a", "pending", testNode, false),
		virtualPod("a", "created-not-yet", testNode, true),
		virtualPod("a", "elsewhere", "vnode-c2-n1", true),
	)
	server := httptest.NewServer(s.handler())
	defer server.Close()

	for _, tc := range []struct {
		name, path, token string
		code              int
		body              string
	}{
		{"anonymous", "/containerLogs/a/web/app", "", http.StatusUnauthorized, "Unauthorized"},
		{"not allowed", "/containerLogs/a/web/app", "nobody", http.StatusForbidden, "subresource=proxy"},
		{"unknown pod", "/containerLogs/a/nope/app", "admin", http.StatusNotFound, "pod a/nope not found on node "},
		{"another node", "/containerLogs/a/elsewhere/app", "admin", http.StatusNotFound, "does not run on node " + testNode},
		{"not created yet", "/containerLogs/a/pending/app", "admin", http.StatusNotFound, "not been created in the physical cluster yet"},
		{"mapped, not in the physical cache", "/containerLogs/a/created-not-yet/app", "admin", http.StatusNotFound, "not been created in the physical cluster yet"},
		{"unknown container", "/containerLogs/a/web/db", "admin", http.StatusNotFound, "container db is not valid for pod a/web"},
		{"bad options", "/containerLogs/a/web/app?tailLines=x", "admin", http.StatusBadRequest, "invalid log options"},
		{"logs", "/containerLogs/a/web/app?follow=true&tailLines=10&timestamps=true", "admin", http.StatusOK, "fake logs"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			physical.ClearActions()
			code, body := get(t, server.URL+tc.path, tc.token)
			if code != tc.code || !strings.Contains(body, tc.body) {
				t.Fatalf("got %d %q, want %d containing %q", code, body, tc.code, tc.body)
			}
			if tc.code != http.StatusOK && len(physical.Actions()) != 0 {
				t.Fatalf("a refused request reached the physical cluster: %v", physical.Actions())
			}
		})
	}
	// The fake records the options the physical call was made with.
	code, _ := get(t, server.URL+"/containerLogs/a/web/app?follow=true&tailLines=10&previous=true", "admin")
	if code != http.StatusOK {
		t.Fatalf("logs: %d", code)
	}
	actions := physical.Actions()
	got := actions[len(actions)-1]
	if got.GetNamespace() != testMount || got.GetSubresource() != "log" {
		t.Fatalf("physical call %v, want pods/log in %s", got, testMount)
	}
	opts, ok := got.(clienttesting.GenericAction).GetValue().(*corev1.PodLogOptions)
	if !ok || !opts.Follow || !opts.Previous || opts.TailLines == nil || *opts.TailLines != 10 || opts.Container != "app" {
		t.Fatalf("physical log options %+v", got)
	}
}

func TestRequestAttributes(t *testing.T) {
	for path, want := range map[string]string{
		"/containerLogs/a/b/c": "proxy",
		"/exec/a/b/c":          "proxy",
		"/portForward/a/b":     "proxy",
		"/stats/summary":       "stats",
		"/stats":               "stats",
		"/statsx":              "proxy",
		"/metrics/resource":    "metrics",
		"/logs/":               "log",
		"/healthz":             "proxy",
	} {
		r := httptest.NewRequest(http.MethodPost, path, nil)
		attrs := requestAttributes(&user.DefaultInfo{Name: "u"}, r, testNode, opLogs)
		if attrs.Subresource != want || attrs.Resource != "nodes" || attrs.Name != testNode || attrs.Verb != "create" {
			t.Errorf("%s: got %s/%s %s %s, want nodes/%s create", path, attrs.Resource, attrs.Subresource, attrs.Name, attrs.Verb, want)
		}
	}
}

// TestAuthorizationOfEachRoute sends every method to every path and checks
// what was authorized: exec, attach and port-forward as create on
// nodes/proxy whatever the method, only GET and POST (others 405, before
// any review); the other paths with the verb of the method.
func TestAuthorizationOfEachRoute(t *testing.T) {
	var seen []authorizer.Attributes
	s, _ := newTestNodeServer(t, &seen)
	handler := s.handler()
	streams := []string{"/exec/a/web/app", "/exec/a/web/uid-1/app", "/attach/a/web/app", "/attach/a/web/uid-1/app", "/portForward/a/web", "/portForward/a/web/uid-1"}
	others := map[string]string{"/containerLogs/a/web/app": "proxy", "/stats/summary": "stats", "/metrics/resource": "metrics", "/healthz": "proxy"}
	methods := []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodDelete, http.MethodPatch, http.MethodHead}
	check := func(method, path string, wantCode int, wantVerb, wantSub string) {
		t.Helper()
		seen = nil
		r := httptest.NewRequest(method, path, nil)
		r.Header.Set("Authorization", "Bearer nobody")
		w := httptest.NewRecorder()
		handler.ServeHTTP(w, r)
		if w.Code != wantCode {
			t.Errorf("%s %s: %d %q, want %d", method, path, w.Code, w.Body.String(), wantCode)
		}
		switch {
		case wantVerb == "" && len(seen) != 0:
			t.Errorf("%s %s: authorized %v, want no review", method, path, seen)
		case wantVerb != "" && (len(seen) != 1 || seen[0].GetVerb() != wantVerb || seen[0].GetResource() != "nodes" ||
			seen[0].GetSubresource() != wantSub || seen[0].GetName() != testNode):
			t.Errorf("%s %s: authorized %v, want %s nodes/%s %s", method, path, seen, wantVerb, wantSub, testNode)
		}
	}
	for _, path := range streams {
		for _, method := range methods {
			if method == http.MethodGet || method == http.MethodPost {
				check(method, path, http.StatusForbidden, "create", "proxy")
			} else {
				check(method, path, http.StatusMethodNotAllowed, "", "")
			}
		}
	}
	for path, sub := range others {
		check(http.MethodGet, path, http.StatusForbidden, "get", sub)
		check(http.MethodPut, path, http.StatusMethodNotAllowed, "", "")
	}
}

// TestStreamProxy checks that exec is proxied as an upgrade to the
// physical pod's exec subresource, with the container in the query and
// the syncer's credentials instead of the caller's.
func TestStreamProxy(t *testing.T) {
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		want := "/api/v1/namespaces/" + testMount + "/pods/" + kubeoceanv1alpha1.PhysicalName("a", "web") + "/exec"
		if r.URL.Path != want || r.URL.Query().Get("container") != "app" || r.URL.Query().Get("command") != "date" || r.URL.Query().Get("stdout") != "1" || r.URL.Query().Has("output") ||
			r.Header.Get("Authorization") != "Bearer syncer" {
			http.Error(w, fmt.Sprintf("unexpected %s %v %q", r.URL.Path, r.URL.Query(), r.Header.Get("Authorization")), http.StatusTeapot)
			return
		}
		conn, rw, err := w.(http.Hijacker).Hijack()
		if err != nil {
			return
		}
		defer func() { _ = conn.Close() }()
		_, _ = rw.WriteString("HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: SPDY/3.1\r\n\r\n")
		_ = rw.Flush()
		_, _ = io.Copy(conn, rw) // echo
	}))
	defer backend.Close()

	var seen []authorizer.Attributes
	s, _ := newTestNodeServer(t, &seen, virtualPod("a", "web", testNode, true))
	var err error
	if s.streams, err = newStreamProxy(&rest.Config{Host: backend.URL, BearerToken: "syncer"}); err != nil {
		t.Fatal(err)
	}
	server := httptest.NewServer(s.handler())
	defer server.Close()

	conn, err := net.Dial("tcp", strings.TrimPrefix(server.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = conn.Close() }()
	_, _ = fmt.Fprintf(conn, "POST /exec/a/web/app?command=date&output=1 HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer admin\r\nConnection: Upgrade\r\nUpgrade: SPDY/3.1\r\n\r\n")
	reader := bufio.NewReader(conn)
	resp, err := http.ReadResponse(reader, nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusSwitchingProtocols {
		body, _ := io.ReadAll(resp.Body)
		t.Fatalf("got %s: %s", resp.Status, body)
	}
	_, _ = conn.Write([]byte("ping"))
	echo := make([]byte, 4)
	if _, err := io.ReadFull(reader, echo); err != nil || string(echo) != "ping" {
		t.Fatalf("echo %q, %v", echo, err)
	}
}
