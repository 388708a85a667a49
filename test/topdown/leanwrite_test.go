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
	"bytes"
	"io"
	"net/http"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kubeocean/kubeocean/internal/compact"
	"github.com/kubeocean/kubeocean/test/testenv"
)

// answerTypes records the code and kind of every answer.
type answerTypes struct {
	next http.RoundTripper
	mu   sync.Mutex
	seen []answer
}

type answer struct {
	request string
	code    int
	// metadataOnly: the answer is a PartialObjectMetadata (its kind is
	// in its envelope, whether protobuf or JSON).
	metadataOnly bool
}

func (a *answerTypes) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := a.next.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return nil, err
	}
	resp.Body = io.NopCloser(bytes.NewReader(body))
	a.mu.Lock()
	a.seen = append(a.seen, answer{req.Method + " " + req.URL.Path, resp.StatusCode, bytes.Contains(body, []byte("PartialObjectMetadata"))})
	a.mu.Unlock()
	return resp, nil
}

// TestLeanWrites writes pods and Secrets through compact.LeanWrites against
// a real API server: each write is answered with metadata only, and what
// it returns is the object as stored (UID, resourceVersion) with the spec
// as sent; refusals keep their kind.
func TestLeanWrites(t *testing.T) {
	ctx := t.Context()
	config := physicalCluster.Config()
	answers := &answerTypes{}
	config.Wrap(func(rt http.RoundTripper) http.RoundTripper { answers.next = rt; return answers })
	kube := kubernetes.NewForConfigOrDie(config)
	lean := compact.LeanWrites(kube.CoreV1())
	plain := kubernetes.NewForConfigOrDie(physicalCluster.Config())
	const namespace = "leanwrite"
	testenv.CreateNamespace(t, plain, namespace)

	sent := testenv.KwokPod(namespace, "web", "no-such-node", "100m", "64Mi", map[string]string{"app": "web"})
	created, err := lean.Pods(namespace).Create(ctx, sent, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	stored, err := plain.CoreV1().Pods(namespace).Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if created.UID == "" || created.UID != stored.UID || created.ResourceVersion != stored.ResourceVersion ||
		created.Labels["app"] != "web" || created.Spec.Containers[0].Image != sent.Spec.Containers[0].Image {
		t.Errorf("created = uid %q rv %q labels %v; stored uid %q rv %q", created.UID, created.ResourceVersion, created.Labels, stored.UID, stored.ResourceVersion)
	}
	if sent.UID != "" {
		t.Error("the pod sent was changed")
	}

	created.Annotations = map[string]string{"note": "updated"}
	updated, err := lean.Pods(namespace).Update(ctx, created, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if updated.ResourceVersion == created.ResourceVersion || updated.Annotations["note"] != "updated" {
		t.Errorf("updated = rv %q (was %q), annotations %v", updated.ResourceVersion, created.ResourceVersion, updated.Annotations)
	}
	if _, err := lean.Pods(namespace).Update(ctx, created, metav1.UpdateOptions{}); !apierrors.IsConflict(err) {
		t.Errorf("update at a stale resourceVersion: %v, want a conflict", err)
	}
	updated.Status.Phase = corev1.PodFailed
	updated.Status.Message = "lean"
	withStatus, err := lean.Pods(namespace).UpdateStatus(ctx, updated, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	stored, err = plain.CoreV1().Pods(namespace).Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if stored.Status.Message != "lean" || withStatus.ResourceVersion != stored.ResourceVersion {
		t.Errorf("after UpdateStatus: stored message %q rv %q, returned rv %q", stored.Status.Message, stored.ResourceVersion, withStatus.ResourceVersion)
	}
	if _, err := lean.Pods(namespace).Create(ctx, sent, metav1.CreateOptions{}); !apierrors.IsAlreadyExists(err) {
		t.Errorf("second create: %v, want AlreadyExists", err)
	}

	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "token"}, Data: map[string][]byte{"token": []byte("a")}}
	createdSecret, err := lean.Secrets(namespace).Create(ctx, secret, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	createdSecret.Data = map[string][]byte{"token": []byte("b")}
	renewed, err := lean.Secrets(namespace).Update(ctx, createdSecret, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	storedSecret, err := plain.CoreV1().Secrets(namespace).Get(ctx, "token", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if string(storedSecret.Data["token"]) != "b" || renewed.ResourceVersion != storedSecret.ResourceVersion || string(renewed.Data["token"]) != "b" {
		t.Errorf("renewed = rv %q data %q; stored rv %q data %q", renewed.ResourceVersion, renewed.Data, storedSecret.ResourceVersion, storedSecret.Data)
	}

	answers.mu.Lock()
	defer answers.mu.Unlock()
	refusals := 0
	for _, a := range answers.seen {
		switch {
		case a.code >= 300:
			refusals++
		case !a.metadataOnly:
			t.Errorf("%s answered %d with more than metadata", a.request, a.code)
		}
	}
	if len(answers.seen) != 7 || refusals != 2 {
		t.Errorf("answers: %+v; want 5 writes and 2 refusals", answers.seen)
	}
}
