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
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
	"github.com/kubeocean/kubeocean/test/testenv"
)

// getMirror reads the physical mirror of a virtual Service.
func getMirror(ctx context.Context, w *testenv.SyncerWorld, namespace, name string) (*corev1.Service, error) {
	return w.Physical.CoreV1().Services(w.Mount).Get(ctx, kubeoceanv1alpha1.PhysicalName(namespace, name), metav1.GetOptions{})
}

func createService(t *testing.T, w *testenv.SyncerWorld, s *corev1.Service) {
	t.Helper()
	if _, err := w.Virtual.CoreV1().Services(s.Namespace).Create(t.Context(), s, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func webService(namespace string) *corev1.Service {
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "web"},
		Spec: corev1.ServiceSpec{
			Type:     corev1.ServiceTypeNodePort,
			Selector: map[string]string{"app": "web"},
			Ports:    []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromString("http"), Protocol: corev1.ProtocolTCP}},
		},
	}
}

// TestServiceMirrors: a virtual Service of a namespace with pods on the
// binding gets a mirror (ClusterIP allocated physically, a selector that
// selects exactly the binding's physical pods of the namespace) and the
// pods resolve through the binding's DNS Service; a NodePort Service made
// headless is mirrored anew; a Service outside the binding's reach gets a
// mirror only once its namespace is in spec.serviceNamespaces; a deleted
// Service's mirror goes within 10 s; unbinding leaves no mirror and no DNS
// object. The physical test cluster runs no kube-controller-manager, so no
// EndpointSlice controller fills the mirrors' endpoints: the test checks
// that their selector lists the binding's physical pods instead.
func TestServiceMirrors(t *testing.T) {
	w := lendNodeFrom(t, virtualCluster, "svc-a", "svca")
	ctx := t.Context()
	const ns, other = "svc-shop", "svc-other"
	testenv.CreateNamespace(t, w.Virtual, ns)
	testenv.CreateNamespace(t, w.Virtual, other)

	// The binding's DNS server, before any pod is made.
	var dnsIP string
	testenv.WaitFor(t, 30*time.Second, "the DNS Service and Deployment of the binding", func(ctx context.Context) (bool, error) {
		s, err := w.Physical.CoreV1().Services(w.Mount).Get(ctx, kubeoceanv1alpha1.DNSName, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		if _, err := w.Physical.AppsV1().Deployments(w.Mount).Get(ctx, kubeoceanv1alpha1.DNSName, metav1.GetOptions{}); err != nil {
			return false, err
		}
		dnsIP = s.Spec.ClusterIP
		return dnsIP != "" && dnsIP != corev1.ClusterIPNone, nil
	})
	// No kubelet runs the DNS pods here: the condition says what pods get.
	testenv.WaitFor(t, 30*time.Second, "the binding's DNSReady condition", func(ctx context.Context) (bool, error) {
		b, err := w.VirtualOcean.KubeoceanV1alpha1().ClusterBindings().Get(ctx, w.Binding, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		c := meta.FindStatusCondition(b.Status.Conditions, kubeoceanv1alpha1.ClusterBindingConditionDNSReady)
		return c != nil && c.Status == metav1.ConditionFalse && c.Reason == kubeoceanv1alpha1.ReasonDNSUnavailable, fmt.Errorf("condition %+v", c)
	})

	createService(t, w, webService(ns))
	for _, name := range []string{"web-0", "web-1"} {
		pod := workload(ns, name, w.ClusterID, func(p *corev1.Pod) {
			p.Labels["app"] = "web"
			p.Spec.AutomountServiceAccountToken = ptr.To(false)
			p.Spec.Hostname, p.Spec.Subdomain = name, "web"
			p.Spec.Containers[0].Ports = []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}}
		})
		if _, err := w.Virtual.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	var mirror *corev1.Service
	testenv.WaitFor(t, 30*time.Second, "the mirror of "+ns+"/web", func(ctx context.Context) (bool, error) {
		var err error
		mirror, err = getMirror(ctx, w, ns, "web")
		return err == nil, err
	})
	uid := w.BindingUID(ctx)
	if mirror.Spec.Type != corev1.ServiceTypeClusterIP || mirror.Spec.ClusterIP == "" || mirror.Spec.ClusterIP == corev1.ClusterIPNone ||
		mirror.Spec.Ports[0].NodePort != 0 || mirror.Spec.Ports[0].TargetPort != intstr.FromString("http") {
		t.Errorf("mirror spec %+v", mirror.Spec)
	}
	if mirror.Labels[kubeoceanv1alpha1.LabelBindingUID] != uid || mirror.Labels[kubeoceanv1alpha1.LabelClusterID] != w.ClusterID ||
		mirror.Annotations[kubeoceanv1alpha1.AnnotationVirtualName] != "web" || mirror.Annotations[kubeoceanv1alpha1.AnnotationVirtualNamespace] != ns {
		t.Errorf("mirror meta %v %v", mirror.Labels, mirror.Annotations)
	}
	testenv.WaitFor(t, 60*time.Second, "the mirror's selector lists the binding's two physical pods", func(ctx context.Context) (bool, error) {
		pods, err := w.Physical.CoreV1().Pods(w.Mount).List(ctx, metav1.ListOptions{LabelSelector: labels.SelectorFromSet(mirror.Spec.Selector).String()})
		if err != nil {
			return false, err
		}
		return len(pods.Items) == 2, fmt.Errorf("%d pods", len(pods.Items))
	})
	physical, err := w.Physical.CoreV1().Pods(w.Mount).Get(ctx, kubeoceanv1alpha1.PhysicalName(ns, "web-0"), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if s := physical.Spec; s.DNSPolicy != corev1.DNSNone || s.DNSConfig == nil || s.DNSConfig.Nameservers[0] != dnsIP ||
		s.DNSConfig.Searches[0] != ns+".svc.cluster.local" || s.Subdomain != mirror.Name || s.Hostname != "web-0" {
		t.Errorf("physical pod's resolver and names: %+v %+v", s.DNSPolicy, s.DNSConfig)
	}

	// NodePort → headless: a change the API cannot make in place.
	virtual, err := w.Virtual.CoreV1().Services(ns).Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Virtual.CoreV1().Services(ns).Delete(ctx, "web", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	headless := webService(ns)
	headless.Spec.Type, headless.Spec.ClusterIP = corev1.ServiceTypeClusterIP, corev1.ClusterIPNone
	_ = virtual
	createService(t, w, headless)
	testenv.WaitFor(t, 30*time.Second, "the headless mirror, made anew", func(ctx context.Context) (bool, error) {
		m, err := getMirror(ctx, w, ns, "web")
		if err != nil {
			return false, err
		}
		return m.UID != mirror.UID && m.Spec.ClusterIP == corev1.ClusterIPNone, fmt.Errorf("clusterIP %s", m.Spec.ClusterIP)
	})

	// Out of reach until the binding names the namespace.
	createService(t, w, webService(other))
	time.Sleep(3 * time.Second)
	if _, err := getMirror(ctx, w, other, "web"); !apierrors.IsNotFound(err) {
		t.Fatalf("a Service of a namespace without pods on the binding is mirrored: %v", err)
	}
	w.UpdateBinding(t, func(b *kubeoceanv1alpha1.ClusterBinding) { b.Spec.ServiceNamespaces = []string{other} })
	testenv.WaitFor(t, 30*time.Second, "the mirror of "+other+"/web", func(ctx context.Context) (bool, error) {
		_, err := getMirror(ctx, w, other, "web")
		return err == nil, err
	})

	// Deleted: the mirror goes within 10 s.
	if err := w.Virtual.CoreV1().Services(other).Delete(ctx, "web", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	testenv.WaitFor(t, 10*time.Second, "the mirror of the deleted "+other+"/web gone", func(ctx context.Context) (bool, error) {
		_, err := getMirror(ctx, w, other, "web")
		return apierrors.IsNotFound(err), err
	})

	// Unbinding leaves no mirror and no DNS object.
	if err := w.VirtualOcean.KubeoceanV1alpha1().ClusterBindings().Delete(ctx, w.Binding, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	testenv.WaitFor(t, 90*time.Second, "binding "+w.Binding+" gone", func(ctx context.Context) (bool, error) {
		_, err := w.VirtualOcean.KubeoceanV1alpha1().ClusterBindings().Get(ctx, w.Binding, metav1.GetOptions{})
		return apierrors.IsNotFound(err), err
	})
	left := leftoverNetwork(ctx, t, w, uid)
	if len(left) > 0 {
		t.Errorf("unbinding left %v", left)
	}
}

// leftoverNetwork lists the binding's mirrors and DNS objects still in the
// mount namespace.
func leftoverNetwork(ctx context.Context, t *testing.T, w *testenv.SyncerWorld, uid string) []string {
	t.Helper()
	opts := metav1.ListOptions{LabelSelector: kubeoceanv1alpha1.LabelBindingUID + "=" + uid}
	var left []string
	add := func(kind string, n int, err error) {
		if err != nil {
			t.Fatal(err)
		}
		if n > 0 {
			left = append(left, fmt.Sprintf("%d %s", n, kind))
		}
	}
	services, err := w.Physical.CoreV1().Services(w.Mount).List(ctx, opts)
	add("Services", len(services.Items), err)
	slices, err := w.Physical.DiscoveryV1().EndpointSlices(w.Mount).List(ctx, opts)
	add("EndpointSlices", len(slices.Items), err)
	deployments, err := w.Physical.AppsV1().Deployments(w.Mount).List(ctx, opts)
	add("Deployments", len(deployments.Items), err)
	budgets, err := w.Physical.PolicyV1().PodDisruptionBudgets(w.Mount).List(ctx, opts)
	add("PodDisruptionBudgets", len(budgets.Items), err)
	accounts, err := w.Physical.CoreV1().ServiceAccounts(w.Mount).List(ctx, opts)
	add("ServiceAccounts", len(accounts.Items), err)
	roles, err := w.Physical.RbacV1().Roles(w.Mount).List(ctx, opts)
	add("Roles", len(roles.Items), err)
	bindings, err := w.Physical.RbacV1().RoleBindings(w.Mount).List(ctx, opts)
	add("RoleBindings", len(bindings.Items), err)
	return left
}
