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

package cli

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	kubefake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"
	kubetesting "k8s.io/client-go/testing"
	"sigs.k8s.io/yaml"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
)

func TestReplaceWord(t *testing.T) {
	in := "name: kubeocean-worker\nname: kubeocean-syncer:kubeocean-worker\nname: kubeocean-syncer.kubeocean-worker\n" +
		"resourceNames: [\"kubeocean-worker\"]\nkeep: kubeocean-worker-2 my-kubeocean-worker kubeocean-worker_x\nkubeocean-worker"
	want := "name: kubeocean-worker-1\nname: kubeocean-syncer:kubeocean-worker-1\nname: kubeocean-syncer.kubeocean-worker-1\n" +
		"resourceNames: [\"kubeocean-worker-1\"]\nkeep: kubeocean-worker-2 my-kubeocean-worker kubeocean-worker_x\nkubeocean-worker-1"
	if got := string(replaceWord([]byte(in), "kubeocean-worker", "kubeocean-worker-1")); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}

// The physical objects are the shipped ones with the mount namespace
// replaced everywhere it is named, without the long-lived token Secret.
func TestPhysicalObjects(t *testing.T) {
	objects, err := (&bindOptions{mountNamespace: "kubeocean-w1"}).physicalObjects()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for _, obj := range objects {
		got[obj.GetKind()+" "+describe(obj)] = true
		if obj.GetKind() == "Secret" {
			t.Errorf("the long-lived token Secret %s is applied", describe(obj))
		}
		data, _ := yaml.Marshal(obj.Object)
		if strings.Contains(string(replaceWord(data, shippedMountNamespace, "X")), "X") {
			t.Errorf("%s %s still names %s:\n%s", obj.GetKind(), describe(obj), shippedMountNamespace, data)
		}
	}
	for _, want := range []string{
		"CustomResourceDefinition resourceleasingpolicies.kubeocean.io", "Namespace kubeocean-w1",
		"ServiceAccount kubeocean-w1/kubeocean-syncer", "RoleBinding kubeocean-w1/kubeocean-syncer",
		"ClusterRole kubeocean-syncer:kubeocean-w1", "ClusterRoleBinding kubeocean-syncer:kubeocean-w1",
		"FlowSchema kubeocean-syncer.kubeocean-w1", "ClusterRole kubeocean-syncer-mount-namespace",
		"PriorityLevelConfiguration kubeocean", "ValidatingAdmissionPolicy kubeocean-syncer-persistentvolumes",
	} {
		if !got[want] {
			t.Errorf("no %s among %v", want, got)
		}
	}
	role := shippedObject(t, objects, "ClusterRole", "kubeocean-syncer:kubeocean-w1")
	data, _ := yaml.Marshal(role.Object)
	if !strings.Contains(string(data), "- kubeocean-w1\n") {
		t.Errorf("the binding's ClusterRole does not name its mount namespace (the syncer watches it by name):\n%s", data)
	}
	binding := shippedObject(t, objects, "ClusterRoleBinding", "kubeocean-syncer:kubeocean-w1")
	subjects, _ := binding.Object["subjects"].([]any)
	if s, _ := subjects[0].(map[string]any); len(subjects) != 1 || s["namespace"] != "kubeocean-w1" || s["name"] != syncerServiceAccount {
		t.Errorf("subjects %v", subjects)
	}
}

func claim(namespace, binding, virtualCluster string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: kubeoceanv1alpha1.MountNamespaceClaim},
		Data: map[string]string{kubeoceanv1alpha1.ClaimKeyBinding: binding, kubeoceanv1alpha1.ClaimKeyVirtualCluster: virtualCluster,
			kubeoceanv1alpha1.ClaimKeyClusterID: binding, kubeoceanv1alpha1.ClaimKeyBindingUID: "uid"}}
}

func TestCheckClaim(t *testing.T) {
	virtual := kubefake.NewClientset(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "kube-system", UID: "vc-1"}})
	for _, tc := range []struct {
		name  string
		claim *corev1.ConfigMap
		want  string // "" accepts
	}{
		{"unclaimed", nil, ""},
		{"ours", claim("ns", "w1", "vc-1"), ""},
		{"another binding", claim("ns", "w2", "vc-1"), `the mount namespace ns belongs to the binding "w2" of this virtual cluster`},
		{"another virtual cluster", claim("ns", "w1", "vc-2"), `belongs to the binding "w1" of another virtual cluster (kube-system UID "vc-2")`},
		{"claimed elsewhere", claim("other", "w2", "vc-1"), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var objects []runtime.Object
			if tc.claim != nil {
				objects = append(objects, tc.claim)
			}
			err := checkClaim(context.Background(), kubefake.NewClientset(objects...), virtual, "ns", "w1")
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("refused: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "--mount-namespace")):
				t.Errorf("got %v, want an error with %q naming --mount-namespace", err, tc.want)
			}
		})
	}
}

// tokenReactor issues a token named after the Secret it is bound to and
// records the requests.
func tokenReactor(kube *kubefake.Clientset, requests *[]authenticationv1.TokenRequest) {
	kube.PrependReactor("create", "serviceaccounts", func(action kubetesting.Action) (bool, runtime.Object, error) {
		create := action.(kubetesting.CreateAction)
		if create.GetSubresource() != "token" {
			return false, nil, nil
		}
		tr := create.GetObject().(*authenticationv1.TokenRequest).DeepCopy()
		*requests = append(*requests, *tr)
		tr.Status.Token = "token-for-" + tr.Spec.BoundObjectRef.Name
		tr.Status.ExpirationTimestamp = metav1.NewTime(time.Now().Add(time.Duration(*tr.Spec.ExpirationSeconds) * time.Second))
		return true, tr, nil
	})
}

func credentialSecret(name string, labels map[string]string) *corev1.Secret {
	return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "kubeocean-w1", Name: name, Labels: labels, UID: types.UID(name)},
		Type: corev1.SecretTypeOpaque}
}

// fakeBinder binds w1 (mount namespace kubeocean-w1) between fakes, without
// waiting for the binding.
func fakeBinder(t *testing.T, physical, virtual kubernetes.Interface, out *bytes.Buffer, rotate bool) *binder {
	physicalApply, _ := fakeApplier(t, false, out)
	virtualApply, _ := fakeApplier(t, false, out)
	virtualApply.cluster = "virtual"
	o := &bindOptions{name: "w1", mountNamespace: "kubeocean-w1", tokenDuration: 2160 * time.Hour, rotateToken: rotate}
	if _, err := o.complete(); err != nil {
		t.Fatal(err)
	}
	return &binder{bindOptions: o, out: out,
		physical:      &clients{kube: physical, config: &rest.Config{Host: "https://physical:6443"}},
		virtual:       &clients{kube: virtual},
		physicalApply: physicalApply, virtualApply: virtualApply,
		verifyToken: func(context.Context, string) error { return nil },
	}
}

// --rotate-token binds a new token to a new credential Secret, writes it
// to the kubeconfig Secret, and deletes the earlier credential Secrets (so
// their tokens stop working), and only those: a tenant's copied Secret
// that looks like one stays.
func TestRotateTokenRevokesEarlierCredentials(t *testing.T) {
	ours := map[string]string{kubeoceanv1alpha1.LabelCredential: syncerServiceAccount}
	tenants := map[string]string{kubeoceanv1alpha1.LabelCredential: syncerServiceAccount, kubeoceanv1alpha1.LabelManagedBy: kubeoceanv1alpha1.ManagedByKubeocean}
	physical := kubefake.NewClientset(
		credentialSecret(credentialPrefix+"old01", ours), credentialSecret(credentialPrefix+"old02", ours),
		credentialSecret(credentialPrefix+"tenant-0123456789abcdef", tenants))
	var requests []authenticationv1.TokenRequest
	tokenReactor(physical, &requests)
	virtual := kubefake.NewClientset(
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "kube-system", UID: "vc-1"}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: systemNamespace, Name: "w1-kubeconfig"},
			Data: map[string][]byte{"kubeconfig": []byte("old"), "other": []byte("kept")}})
	var out bytes.Buffer
	b := fakeBinder(t, physical, virtual, &out, true)
	binding, _ := b.complete()
	if err := b.bind(context.Background(), binding); err != nil {
		t.Fatal(err)
	}

	if len(requests) != 1 || *requests[0].Spec.ExpirationSeconds != 90*24*3600 || requests[0].Spec.BoundObjectRef.Kind != "Secret" ||
		!strings.HasPrefix(requests[0].Spec.BoundObjectRef.Name, credentialPrefix) {
		t.Fatalf("token requests %+v", requests)
	}
	bound := requests[0].Spec.BoundObjectRef.Name
	secret, err := virtual.CoreV1().Secrets(systemNamespace).Get(context.Background(), "w1-kubeconfig", metav1.GetOptions{})
	if err != nil || !strings.Contains(string(secret.Data["kubeconfig"]), "token: token-for-"+bound) || string(secret.Data["other"]) != "kept" {
		t.Fatalf("kubeconfig Secret %v (%v)", secret.Data, err)
	}
	left, err := physical.CoreV1().Secrets("kubeocean-w1").List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range left.Items {
		names = append(names, s.Name)
	}
	if want := []string{bound, credentialPrefix + "tenant-0123456789abcdef"}; strings.Join(names, ",") != strings.Join(want, ",") &&
		strings.Join(names, ",") != want[1]+","+want[0] {
		t.Errorf("Secrets left %v, want %v", names, want)
	}
	if !strings.Contains(out.String(), "revoked (credential Secrets deleted, their tokens no longer authenticate): kubeocean-w1/"+credentialPrefix+"old01, kubeocean-w1/"+credentialPrefix+"old02") {
		t.Errorf("output:\n%s", out.String())
	}
}

// Without --rotate-token an existing kubeconfig Secret is kept and no
// credential is issued or revoked.
func TestBindAgainKeepsTheCredential(t *testing.T) {
	physical := kubefake.NewClientset(credentialSecret(credentialPrefix+"old01", map[string]string{kubeoceanv1alpha1.LabelCredential: syncerServiceAccount}))
	var requests []authenticationv1.TokenRequest
	tokenReactor(physical, &requests)
	virtual := kubefake.NewClientset(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: systemNamespace, Name: "w1-kubeconfig"},
		Data: map[string][]byte{"kubeconfig": []byte("old")}})
	var out bytes.Buffer
	b := fakeBinder(t, physical, virtual, &out, false)
	binding, _ := b.complete()
	if err := b.bind(context.Background(), binding); err != nil {
		t.Fatal(err)
	}
	if len(requests) != 0 {
		t.Errorf("a token was issued: %+v", requests)
	}
	for _, a := range virtual.Actions() {
		if a.GetVerb() != "get" && a.GetVerb() != "list" {
			t.Errorf("virtual cluster written: %s %s", a.GetVerb(), a.GetResource().Resource)
		}
	}
	for _, a := range physical.Actions() {
		if a.GetVerb() == "delete" {
			t.Errorf("physical cluster: %s %s", a.GetVerb(), a.GetResource().Resource)
		}
	}
	if !strings.Contains(out.String(), "virtual cluster: Secret kubeocean-system/w1-kubeconfig unchanged") {
		t.Errorf("output:\n%s", out.String())
	}
}
