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

package podidentity

import (
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
	"github.com/kubeocean/kubeocean/internal/ownership"
)

func tokenSecretFor(name, virtualName string, data map[string][]byte) *corev1.Secret {
	owner := ownership.Owner{ClusterID: testClusterID, BindingUID: testBinding}
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: mountNS, Name: name, UID: "secret-uid", ResourceVersion: "42",
			Labels: owner.Stamp(map[string]string{strings.Clone(kubeoceanv1alpha1.LabelPodToken): strings.Clone("true")}),
			Annotations: map[string]string{
				kubeoceanv1alpha1.AnnotationVirtualPodNamespace: "team-a",
				kubeoceanv1alpha1.AnnotationVirtualPodName:      virtualName,
				kubeoceanv1alpha1.AnnotationVirtualPodUID:       "virtual-uid-" + virtualName,
				kubeoceanv1alpha1.AnnotationTokenRefreshAt:      "2026-11-28T12:00:00Z",
				"example.com/backup":                            "nightly",
			},
		},
		Type: corev1.SecretTypeOpaque,
		Data: data,
	}
}

// The token Secret cache keeps what the controller reads of a Secret and
// none of its values; read back, the Secret says what the cluster's does.
func TestCompactTokenSecretKeepsWhatTheControllerReads(t *testing.T) {
	secret := tokenSecretFor("web-0123-token", "web-1", map[string][]byte{"token": []byte("t"), "ca.crt": []byte("ca")})
	secret.Finalizers = []string{"example.com/keep"}
	obj, err := CompactTokenSecret(secret.DeepCopy())
	record, ok := obj.(*TokenSecretRecord)
	if err != nil || !ok {
		t.Fatalf("CompactTokenSecret = %T, %v; want a *TokenSecretRecord", obj, err)
	}
	got := record.Secret()
	want := secret.DeepCopy()
	delete(want.Annotations, "example.com/backup")
	want.Type = ""
	want.Data = map[string][]byte{"token": nil, "ca.crt": nil}
	if !equality.Semantic.DeepEqual(got, want) {
		t.Fatalf("read back:\n%+v\nwant\n%+v", got, want)
	}
	// The event handler maps a Secret to its virtual pod by these.
	if a := metav1.Object(record).GetAnnotations(); a[kubeoceanv1alpha1.AnnotationVirtualPodNamespace] != "team-a" ||
		a[kubeoceanv1alpha1.AnnotationVirtualPodName] != "web-1" {
		t.Errorf("the record's annotations %v do not name team-a/web-1", a)
	}

	// What the token Secrets of one binding have in common is one copy.
	other, _ := CompactTokenSecret(tokenSecretFor("web-4567-token", "web-2", map[string][]byte{strings.Clone("ca.crt"): nil, strings.Clone("token"): nil}))
	second := other.(*TokenSecretRecord)
	if reflect.ValueOf(second.Keys).UnsafePointer() != reflect.ValueOf(record.Keys).UnsafePointer() ||
		reflect.ValueOf(second.Labels).UnsafePointer() != reflect.ValueOf(record.Labels).UnsafePointer() {
		t.Error("the keys or labels of two token Secrets that have the same are not one map")
	}
	if second.kept != nil {
		t.Errorf("a Secret without finalizers or owners keeps %+v", second.kept)
	}

	copied := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "copy"}, Data: map[string][]byte{"password": []byte("p")}}
	if kept, _ := CompactTokenSecret(copied); kept != copied {
		t.Errorf("a Secret that is no token Secret became %#v", kept)
	}
}

func TestCachedTokenSecret(t *testing.T) {
	indexer := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	record, _ := CompactTokenSecret(tokenSecretFor("web-0123-token", "web-1", map[string][]byte{"token": []byte("t")}))
	plain := tokenSecretFor("web-4567-token", "web-2", map[string][]byte{"token": []byte("u")})
	for _, obj := range []any{record, plain} {
		if err := indexer.Add(obj); err != nil {
			t.Fatal(err)
		}
	}
	s := New(Options{Cache: indexer})
	got, err := s.cached(mountNS, "web-0123-token")
	if err != nil || got.Annotations[kubeoceanv1alpha1.AnnotationVirtualPodUID] != "virtual-uid-web-1" || got.UID != "secret-uid" {
		t.Errorf("record read as %+v, %v", got, err)
	}
	if got, err := s.cached(mountNS, "web-4567-token"); err != nil || got != plain {
		t.Errorf("a cached Secret read as %+v, %v; want it as cached", got, err)
	}
	if _, err := s.cached(mountNS, "missing-token"); !apierrors.IsNotFound(err) {
		t.Errorf("a Secret the cache does not hold: %v, want NotFound", err)
	}
}
