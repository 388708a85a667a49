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

package connectivity

import (
	"context"
	"errors"
	"strings"
	"testing"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/version"
	fakediscovery "k8s.io/client-go/discovery/fake"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/klog/v2/ktesting"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
	"github.com/kubeocean/kubeocean/pkg/remotecluster"
)

func kubeconfig(t *testing.T) []byte {
	t.Helper()
	config := clientcmdapi.NewConfig()
	config.Clusters["worker"] = &clientcmdapi.Cluster{Server: "https://worker.example:6443", InsecureSkipTLSVerify: true}
	config.AuthInfos["syncer"] = &clientcmdapi.AuthInfo{Token: "token"}
	config.Contexts["worker"] = &clientcmdapi.Context{Cluster: "worker", AuthInfo: "syncer"}
	config.CurrentContext = "worker"
	data, err := clientcmd.Write(*config)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func spec() *kubeoceanv1alpha1.ClusterBindingSpec {
	return &kubeoceanv1alpha1.ClusterBindingSpec{
		ClusterID: "c1", MountNamespace: "mount-c1",
		SecretRef: kubeoceanv1alpha1.SecretReference{Namespace: "kubeocean-system", Name: "c1-kubeconfig"},
	}
}

// physical is a fake physical cluster: it answers /version unless down,
// and allows every access review but those in denied ("verb resource").
type physical struct {
	down   bool
	denied map[string]bool
	ssar   error
}

func (p *physical) build(*rest.Config) (kubernetes.Interface, error) {
	client := fake.NewClientset()
	client.Discovery().(*fakediscovery.FakeDiscovery).FakedServerVersion = &version.Info{GitVersion: "v1.36.3"}
	if p.down {
		client.PrependReactor("get", "version", func(clienttesting.Action) (bool, runtime.Object, error) {
			return true, nil, errors.New("dial tcp 127.0.0.1:1: connect: connection refused")
		})
	}
	client.PrependReactor("create", "selfsubjectaccessreviews", func(action clienttesting.Action) (bool, runtime.Object, error) {
		if p.ssar != nil {
			return true, nil, p.ssar
		}
		review := action.(clienttesting.CreateAction).GetObject().(*authorizationv1.SelfSubjectAccessReview)
		attributes := review.Spec.ResourceAttributes
		resource := attributes.Resource
		if attributes.Subresource != "" {
			resource += "/" + attributes.Subresource
		}
		review.Status.Allowed = !p.denied[attributes.Verb+" "+resource+" "+attributes.Namespace]
		return true, review, nil
	})
	return client, nil
}

func secretGetter(secret *corev1.Secret, err error) remotecluster.SecretGetter {
	return func(context.Context, string, string) (*corev1.Secret, error) {
		if err != nil {
			return nil, err
		}
		if secret == nil {
			return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "secrets"}, "c1-kubeconfig")
		}
		return secret, nil
	}
}

func TestCheck(t *testing.T) {
	good := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: "kubeocean-system", Name: "c1-kubeconfig"},
		Data:       map[string][]byte{"kubeconfig": kubeconfig(t)},
	}
	withData := func(data map[string][]byte) *corev1.Secret {
		s := good.DeepCopy()
		s.Data = data
		return s
	}
	tests := []struct {
		name          string
		secret        *corev1.Secret
		secretErr     error
		cluster       physical
		wantReason    string
		wantPermanent bool
		wantInMessage []string
	}{
		{name: "all good", secret: good},
		{name: "missing secret", wantReason: string(remotecluster.ReasonSecretNotFound), wantPermanent: true,
			wantInMessage: []string{"kubeocean-system/c1-kubeconfig", "not found"}},
		{name: "secret unreadable", secretErr: apierrors.NewServiceUnavailable("etcd down"), wantReason: kubeoceanv1alpha1.ReasonKubeconfigSecretUnreadable},
		{name: "no kubeconfig key", secret: withData(map[string][]byte{"config": kubeconfig(t)}),
			wantReason: string(remotecluster.ReasonKubeconfigMissing), wantPermanent: true, wantInMessage: []string{`"kubeconfig"`}},
		{name: "garbage kubeconfig", secret: withData(map[string][]byte{"kubeconfig": []byte("{not yaml: [")}),
			wantReason: string(remotecluster.ReasonKubeconfigInvalid), wantPermanent: true, wantInMessage: []string{"cannot be parsed"}},
		{name: "unreachable", secret: good, cluster: physical{down: true}, wantReason: kubeoceanv1alpha1.ReasonUnreachable,
			wantInMessage: []string{"https://worker.example:6443", "connection refused"}},
		{name: "access reviews refused", secret: good, cluster: physical{ssar: apierrors.NewForbidden(schema.GroupResource{}, "", errors.New("no"))},
			wantReason: kubeoceanv1alpha1.ReasonAccessReviewFailed, wantInMessage: []string{"could not review"}},
		{name: "missing permissions", secret: good,
			cluster: physical{denied: map[string]bool{
				"list nodes ": true, "watch nodes ": true, "create pods mount-c1": true,
				"update resourceleasingpolicies/status ": true,
			}},
			wantReason: kubeoceanv1alpha1.ReasonInsufficientPermissions,
			wantInMessage: []string{
				"list, watch nodes;", "update resourceleasingpolicies.kubeocean.io/status;",
				"create pods in namespace mount-c1", "kubeocean-system/c1-kubeconfig",
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			checker := New(secretGetter(tt.secret, tt.secretErr), Options{Build: tt.cluster.build})

			failure := checker.Check(ctx, spec())

			if tt.wantReason == "" {
				if failure != nil {
					t.Fatalf("Check = %v, want success", failure)
				}
				return
			}
			if failure == nil {
				t.Fatalf("Check succeeded, want %s", tt.wantReason)
			}
			if failure.Reason != tt.wantReason || failure.Permanent != tt.wantPermanent {
				t.Errorf("failure = %s (permanent %v), want %s (permanent %v)", failure.Reason, failure.Permanent, tt.wantReason, tt.wantPermanent)
			}
			for _, want := range tt.wantInMessage {
				if !strings.Contains(failure.Message, want) {
					t.Errorf("message %q does not contain %q", failure.Message, want)
				}
			}
		})
	}
}

func TestMissingAccessReviewsEveryVerb(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	cluster := &physical{}
	client, _ := cluster.build(nil)
	fakeClient := client.(*fake.Clientset)

	missing, err := MissingAccess(ctx, client.AuthorizationV1(), "mount-a")

	if err != nil || len(missing) != 0 {
		t.Fatalf("MissingAccess = %v, %v; want nothing missing", missing, err)
	}
	want := 0
	for _, a := range SyncerAccess {
		want += len(a.Verbs)
	}
	reviews := 0
	for _, action := range fakeClient.Actions() {
		if action.Matches("create", "selfsubjectaccessreviews") {
			reviews++
			attributes := action.(clienttesting.CreateAction).GetObject().(*authorizationv1.SelfSubjectAccessReview).Spec.ResourceAttributes
			namespaced := attributes.Namespace != ""
			// Nodes' events are read in default (docs/events.md).
			nodeEvents := attributes.Resource == "events" && attributes.Namespace == "default"
			if namespaced && attributes.Namespace != "mount-a" && !nodeEvents {
				t.Errorf("review in namespace %q, want mount-a (or default for events)", attributes.Namespace)
			}
			if attributes.Resource == "namespaces" && (attributes.Name != "mount-a" || namespaced) &&
				(attributes.Name != IdentityNamespace || attributes.Verb != "get") {
				t.Errorf("namespaces review for %q in %q, want the mount namespace itself by name, or get of %s", attributes.Name, attributes.Namespace, IdentityNamespace)
			}
			if attributes.Resource != "namespaces" && attributes.Name != "" {
				t.Errorf("%s review names %q, want no name", attributes.Resource, attributes.Name)
			}
		}
	}
	if reviews != want {
		t.Errorf("%d access reviews, want %d (one per verb)", reviews, want)
	}
}
