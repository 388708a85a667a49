package kubeclient

import (
	"net/http"
	"net/http/httptest"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
)

// TestNewSpeaksProtobuf checks what the clientset sends: protobuf asked
// for first, JSON accepted, and the caller's config left alone.
func TestNewSpeaksProtobuf(t *testing.T) {
	var accept string
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		accept = r.Header.Get("Accept")
		w.Header().Set("Content-Type", runtime.ContentTypeJSON)
		_, _ = w.Write([]byte(`{"kind":"Namespace","apiVersion":"v1","metadata":{"name":"default"}}`))
	}))
	defer server.Close()
	config := &rest.Config{Host: server.URL}
	client, err := New(config)
	if err != nil {
		t.Fatal(err)
	}
	ns, err := client.CoreV1().Namespaces().Get(t.Context(), "default", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("a JSON answer must still decode: %v", err)
	}
	if ns.Name != "default" {
		t.Errorf("decoded %q", ns.Name)
	}
	if want := runtime.ContentTypeProtobuf + "," + runtime.ContentTypeJSON; accept != want {
		t.Errorf("Accept = %q, want %q", accept, want)
	}
	if config.ContentType != "" || config.AcceptContentTypes != "" {
		t.Errorf("the caller's config was changed: %+v", config.ContentConfig)
	}
}
