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

package manager

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
	"github.com/kubeocean/kubeocean/internal/app"
	"github.com/kubeocean/kubeocean/internal/manager"
	"github.com/kubeocean/kubeocean/pkg/remotecluster"
)

// TestManagerCachesOnlyWhatItsBindingsUse runs an in-process manager with
// one binding in a virtual cluster that holds pods and Secrets the binding
// has nothing to do with. Its syncer caches only the pods bound to its
// virtual node (one bound at creation, one bound after it was created) and
// runs them; the manager lists and watches only the Secret the binding
// references, by name, notices its changes, and stops watching it once the
// binding is gone.
func TestManagerCachesOnlyWhatItsBindingsUse(t *testing.T) {
	const name, node, unrelatedPods = "mgr-scope", "mgr-scope-node", 20
	w := newWorld(t)
	secret := name + "-kubeconfig"
	w.putSecret(t, secret, kubeconfigData(physicalCluster.Kubeconfig))
	// Secrets no binding references, one of them a kubeconfig.
	w.putSecret(t, name+"-unreferenced-kubeconfig", kubeconfigData(physicalCluster.Kubeconfig))
	w.putSecret(t, name+"-unrelated", map[string][]byte{"token": []byte("not a kubeconfig")})
	lendNode(t, w, name, node)
	metrics := freeAddr(t)
	started := time.Now()
	startManager(t, func(o *app.Options, m *manager.Options) {
		m.SyncerMode = manager.ModeInProcess
		o.Serving.MetricsBindAddress = metrics
	})
	w.createBinding(t, name, name)
	deleted := false
	t.Cleanup(func() {
		if !deleted {
			w.deleteBinding(t, name, 90*time.Second)
		}
	})
	w.waitPhase(t, name, kubeoceanv1alpha1.ClusterBindingReady, kubeoceanv1alpha1.ReasonReady, 60*time.Second)

	t.Run("the syncer caches and runs only the pods on its virtual node", func(t *testing.T) {
		checkPodScope(t, w, name, kubeoceanv1alpha1.VirtualNodeName(name, node), unrelatedPods, metrics)
	})

	t.Run("a change of the binding's Secret takes effect", func(t *testing.T) {
		w.putSecret(t, secret, kubeconfigData([]byte("{this is: [not a kubeconfig")))
		w.waitPhase(t, name, kubeoceanv1alpha1.ClusterBindingFailed, string(remotecluster.ReasonKubeconfigInvalid), 30*time.Second)
		w.putSecret(t, secret, kubeconfigData(physicalCluster.Kubeconfig))
		w.waitPhase(t, name, kubeoceanv1alpha1.ClusterBindingReady, kubeoceanv1alpha1.ReasonReady, 60*time.Second)
	})

	t.Run("the manager lists and watches the referenced Secret alone", func(t *testing.T) {
		requests := managerSecretRequests(t, started)
		watched := false
		for _, r := range requests {
			if r.namespace != systemNamespace || r.fieldSelector != "metadata.name="+secret {
				t.Errorf("the manager made %s %s, which is not about Secret %s/%s alone", r.verb, r.uri, systemNamespace, secret)
			}
			watched = watched || r.verb == "watch"
		}
		if !watched {
			t.Errorf("the manager never watched Secret %s (its requests: %v)", secret, requests)
		}
	})

	t.Run("the Secret's watch stops with the binding", func(t *testing.T) {
		deleted = true
		w.deleteBinding(t, name, 90*time.Second)
		waitFor(t, 30*time.Second, "the manager's watch of "+secret+" ended", func(context.Context) (bool, error) {
			for _, r := range managerSecretRequests(t, started) {
				if r.verb == "watch" && r.stage == "ResponseComplete" && r.fieldSelector == "metadata.name="+secret {
					return true, nil
				}
			}
			return false, nil
		})
	})
}

// checkPodScope creates unrelated pods (pending, on a node of the virtual
// cluster's own, on a node named like another binding's), then a pod bound
// to vnode at creation and a pending one bound to it afterwards: both run
// in the physical cluster, none of the others does, and the syncer's cache
// holds the two alone.
func checkPodScope(t *testing.T, w *world, binding, vnode string, unrelated int, metrics string) {
	ctx := t.Context()
	namespace := binding
	createNamespace(t, w.virtual, namespace)
	ownNode := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: binding + "-own-node"}}
	if _, err := w.virtual.CoreV1().Nodes().Create(ctx, ownNode, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = w.virtual.CoreV1().Nodes().Delete(context.Background(), ownNode.Name, metav1.DeleteOptions{})
	})
	pods := w.virtual.CoreV1().Pods(namespace)
	create := func(name, nodeName string) {
		t.Helper()
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}, Spec: corev1.PodSpec{
			NodeName:                     nodeName,
			AutomountServiceAccountToken: new(bool),
			Containers:                   []corev1.Container{{Name: "app", Image: "registry.k8s.io/pause:3.10"}},
			Tolerations:                  []corev1.Toleration{{Operator: corev1.TolerationOpExists}},
		}}
		if _, err := pods.Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	nodes := []string{"", ownNode.Name, kubeoceanv1alpha1.VirtualNodeName("mgr-other", "node-1")}
	for i := range unrelated {
		create(fmt.Sprintf("unrelated-%d", i), nodes[i%len(nodes)])
	}
	create("bound-at-creation", vnode)
	create("bound-later", "")
	bind := &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "bound-later"},
		Target: corev1.ObjectReference{Kind: "Node", Name: vnode}}
	if err := pods.Bind(ctx, bind, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	mount := "mount-" + binding
	for _, name := range []string{"bound-at-creation", "bound-later"} {
		physical := kubeoceanv1alpha1.PhysicalName(namespace, name)
		waitFor(t, 60*time.Second, "physical pod of "+name, func(ctx context.Context) (bool, error) {
			_, err := w.physical.CoreV1().Pods(mount).Get(ctx, physical, metav1.GetOptions{})
			return err == nil, err
		})
	}
	// Created after the unrelated pods, they came through the same watch
	// after them: the cache has seen every unrelated pod by now.
	want := fmt.Sprintf(`kubeocean_binding_virtual_pods_cached{binding=%q} 2`, binding)
	status, body := httpGet("http://" + metrics + "/metrics")
	if status != 200 || !strings.Contains(body, want+"\n") {
		t.Errorf("/metrics does not show %s:\n%s", want, grepLines(body, "kubeocean_binding_virtual_pods_cached"))
	}
	physical, err := w.physical.CoreV1().Pods(mount).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(physical.Items) != 2 {
		t.Errorf("%d physical pods in the mount namespace, want the 2 bound to %s", len(physical.Items), vnode)
	}
}

func grepLines(text, substring string) string {
	var out []string
	for line := range strings.Lines(text) {
		if strings.Contains(line, substring) {
			out = append(out, line)
		}
	}
	return strings.Join(out, "")
}

// secretRequest is a list or watch of Secrets the manager itself made, as
// the virtual apiserver's audit log has it.
type secretRequest struct {
	verb, stage, namespace, uri, fieldSelector string
}

func (r secretRequest) String() string { return r.verb + " " + r.stage + " " + r.uri }

// managerSecretRequests reads the audit log (secretsAuditPolicy) for the
// lists and watches of Secrets the manager made since, its in-process
// syncers apart (they have their own user agent).
func managerSecretRequests(t *testing.T, since time.Time) []secretRequest {
	t.Helper()
	f, err := os.Open(virtualCluster.AuditLogPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var requests []secretRequest
	scanner := bufio.NewScanner(f)
	scanner.Buffer(make([]byte, 1<<20), 16<<20)
	for scanner.Scan() {
		var e struct {
			Stage, RequestURI, Verb, UserAgent string
			RequestReceivedTimestamp           metav1.MicroTime
			ObjectRef                          *struct{ Resource, Namespace string }
		}
		if err := json.Unmarshal(scanner.Bytes(), &e); err != nil {
			t.Fatalf("%s: %v", virtualCluster.AuditLogPath, err)
		}
		if e.ObjectRef == nil || e.ObjectRef.Resource != "secrets" || e.UserAgent != manager.Component ||
			e.RequestReceivedTimestamp.Time.Before(since) {
			continue
		}
		u, err := url.Parse(e.RequestURI)
		if err != nil {
			t.Fatal(err)
		}
		requests = append(requests, secretRequest{verb: e.Verb, stage: e.Stage, namespace: e.ObjectRef.Namespace,
			uri: e.RequestURI, fieldSelector: u.Query().Get("fieldSelector")})
	}
	if err := scanner.Err(); err != nil {
		t.Fatal(err)
	}
	return requests
}
