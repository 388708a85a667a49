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

package e2e

import (
	"context"
	"fmt"
	"net/url"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
	"github.com/kubeocean/kubeocean/test/stack"
	"github.com/kubeocean/kubeocean/test/testenv"
)

// shop is the virtual namespace of the DNS test's application; faraway has
// no pod on the binding.
const (
	shop    = "shop"
	faraway = "faraway"
	domain  = ".svc.cluster.local."
)

// TestDNS takes the names of a virtual application through the binding's
// kubeocean-dns, run as a process with the arguments and the ServiceAccount
// of the DNS Deployment the syncer keeps (kwok runs no container), against
// the physical cluster whose EndpointSlice controller fills the mirrors'
// slices: each name answers what the Kubernetes DNS specification says,
// with physical addresses; physical Services stay invisible; readiness,
// spec.serviceNamespaces and deletions follow; a second virtual cluster
// bound to the same physical cluster never answers the first one's names;
// unbinding leaves nothing.
func TestDNS(t *testing.T) {
	s := startDNSWorld(t)
	up := startUpstream(t)
	dnsBin := buildDNS(t)
	server, err := s.StartDNS(waitCtx(t), dnsBin, stack.MountNamespace, "--upstream="+up.addr, "--upstream-timeout=500ms")
	step(t, "start kubeocean-dns of the binding", err)
	t.Cleanup(func() { logTailOnFailure(t, server.Process); server.Stop() })
	if !slices.Contains(server.Args, "--kubernetes-address=127.0.0.1") {
		t.Errorf("the DNS Deployment's arguments %q do not name the virtual apiserver", server.Args)
	}

	deployShop(t)
	checkShopNames(t, server.Address)
	checkPhysicalNamesHidden(t, server.Address, up)
	checkPodResolver(t, server.Address)
	checkUnreadyPodLeaves(t, server.Address)
	checkServiceNamespaces(t, server.Address)
	checkDeletedService(t, server.Address)
	checkTwoVirtualClusters(t, server.Address, dnsBin, up.addr)

	uid := bindingUID(t)
	dnsRBAC := dnsRBACYAML(t)
	_, err = s.Virtual.Kubectl(t.Context(), "delete", "clusterbinding", stack.BindingName, "--wait=true", "--timeout=2m")
	step(t, "unbind", err)
	waitFor(t, "unbinding leaves no mirror, EndpointSlice or DNS object", func(ctx context.Context) (string, error) {
		left, err := networkLeftovers(ctx, uid)
		return strings.Join(left, ", "), err
	})
	if a := lookup(t, server.Address, "api.shop"+domain, dns.TypeA); a.Rcode != dns.RcodeNameError {
		t.Errorf("api.shop after unbinding: %s, want NXDOMAIN", a)
	}
	// The DNS server reads with the Role the syncer made for it, and uses
	// all of it; the syncer wrote mirrors, slices and DNS objects unrefused.
	checkAudit(t, s.Physical, "manifests/rbac/physical", dnsRBAC, map[string][]string{
		stack.MountNamespace + "/" + kubeoceanv1alpha1.DNSName: nil,
	})
	noRefusals(t, s.Physical, stack.MountNamespace+"/"+stack.SyncerAccount)
}

// startDNSWorld deploys Kubeocean from the shipped manifests (in-process
// mode, as ServiceAccounts) with the virtual apiserver's address for pods,
// binds the physical cluster and waits for one Ready virtual node.
func startDNSWorld(t *testing.T) *stack.Stack {
	s := startWorld(t)
	ctx := t.Context()
	step(t, "install CRDs", s.InstallCRDs(ctx))
	step(t, "install RBAC", s.InstallRBAC(ctx, "in-process"))
	step(t, "create physical node", s.CreateNodes(ctx, []string{metricsNode}, map[string]string{stack.LendableLabel: "true"}))
	physicalKubeconfig, err := s.PhysicalSyncerKubeconfig(waitCtx(t))
	step(t, "physical kubeconfig", err)
	step(t, "bind", s.Bind(ctx, physicalKubeconfig))
	virtualURL, err := url.Parse(s.Virtual.Config().Host)
	step(t, "virtual apiserver address", err)
	startManager(t, append(managerDeploymentArgs(t, "in-process"), kubeletPortRange(t), "--virtual-apiserver-address="+virtualURL.Host)...)
	step(t, "virtual node Ready", s.WaitVirtualNodesReady(waitCtx(t), 1))
	return s
}

// buildDNS builds kubeocean-dns as the image ships it.
func buildDNS(t *testing.T) string {
	dir := t.TempDir()
	cmd := exec.CommandContext(t.Context(), "go", "build", "-o", dir+"/", "./cmd/kubeocean-dns")
	cmd.Dir = testenv.RepoPath(".")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building kubeocean-dns: %v: %s", err, out)
	}
	return filepath.Join(dir, "kubeocean-dns")
}

// onBinding is a pod template the virtual scheduler puts on the binding's
// virtual nodes, with a named port.
func onBinding(app string) corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": app}},
		Spec: corev1.PodSpec{
			NodeSelector:                  map[string]string{kubeoceanv1alpha1.LabelClusterID: stack.ClusterID},
			Tolerations:                   []corev1.Toleration{{Key: kubeoceanv1alpha1.TaintVirtualNode, Operator: corev1.TolerationOpExists}},
			TerminationGracePeriodSeconds: ptr.To[int64](0),
			AutomountServiceAccountToken:  ptr.To(false),
			Containers: []corev1.Container{{Name: "app", Image: "registry.k8s.io/pause:3.10",
				Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}}}},
		},
	}
}

func service(namespace, name string, spec corev1.ServiceSpec) *corev1.Service {
	return &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}, Spec: spec}
}

func createServices(t *testing.T, services ...*corev1.Service) {
	for _, svc := range services {
		_, err := world.VirtualKube.CoreV1().Services(svc.Namespace).Create(t.Context(), svc, metav1.CreateOptions{})
		step(t, "create Service "+svc.Namespace+"/"+svc.Name, err)
	}
}

// deployShop runs, in namespace shop: Deployment api (3) behind Service
// api, StatefulSet db (2) behind headless Service db, ExternalName ext (to
// api), and headless selectorless legacy with a hand-written EndpointSlice.
func deployShop(t *testing.T) {
	ctx, s := t.Context(), world
	tenantNamespace(t, shop)
	http := []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromString("http"), Protocol: corev1.ProtocolTCP}}
	createServices(t,
		service(shop, "api", corev1.ServiceSpec{Type: corev1.ServiceTypeNodePort, Selector: map[string]string{"app": "api"}, Ports: http}),
		service(shop, "db", corev1.ServiceSpec{ClusterIP: corev1.ClusterIPNone, Selector: map[string]string{"app": "db"},
			Ports: []corev1.ServicePort{{Name: "peer", Port: 7000, Protocol: corev1.ProtocolTCP}}}),
		service(shop, "ext", corev1.ServiceSpec{Type: corev1.ServiceTypeExternalName, ExternalName: "api.shop.svc.cluster.local"}),
		service(shop, "legacy", corev1.ServiceSpec{ClusterIP: corev1.ClusterIPNone, Ports: http}),
	)
	slice := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Namespace: shop, Name: "legacy-hand", Labels: map[string]string{
			discoveryv1.LabelServiceName: "legacy", discoveryv1.LabelManagedBy: "by-hand.example.com"}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{"192.0.2.10"}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}}},
		Ports:       []discoveryv1.EndpointPort{{Name: ptr.To("http"), Port: ptr.To[int32](80), Protocol: ptr.To(corev1.ProtocolTCP)}},
	}
	_, err := s.VirtualKube.DiscoveryV1().EndpointSlices(shop).Create(ctx, slice, metav1.CreateOptions{})
	step(t, "create the EndpointSlice of legacy", err)
	api := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: shop, Name: "api"},
		Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](3), Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "api"}},
			Template: onBinding("api")},
	}
	_, err = s.VirtualKube.AppsV1().Deployments(shop).Create(ctx, api, metav1.CreateOptions{})
	step(t, "create Deployment api", err)
	db := &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: shop, Name: "db"},
		Spec: appsv1.StatefulSetSpec{Replicas: ptr.To[int32](2), ServiceName: "db", PodManagementPolicy: appsv1.ParallelPodManagement,
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}}, Template: onBinding("db")},
	}
	_, err = s.VirtualKube.AppsV1().StatefulSets(shop).Create(ctx, db, metav1.CreateOptions{})
	step(t, "create StatefulSet db", err)
	waitFor(t, "api has 3 and db 2 ready replicas", func(ctx context.Context) (string, error) {
		d, err := s.VirtualKube.AppsV1().Deployments(shop).Get(ctx, "api", metav1.GetOptions{})
		if err != nil {
			return err.Error(), nil
		}
		ss, err := s.VirtualKube.AppsV1().StatefulSets(shop).Get(ctx, "db", metav1.GetOptions{})
		if err != nil {
			return err.Error(), nil
		}
		if d.Status.ReadyReplicas != 3 || ss.Status.ReadyReplicas != 2 {
			return fmt.Sprintf("api %d, db %d ready", d.Status.ReadyReplicas, ss.Status.ReadyReplicas), nil
		}
		return "", nil
	})
}

// lookup asks addr one question.
func lookup(t *testing.T, addr, name string, qtype uint16) stack.Answer {
	t.Helper()
	a, err := stack.Query(addr, name, qtype)
	step(t, "query", err)
	return a
}

// eventuallyAnswers waits until name answers want (rcode and records).
func eventuallyAnswers(t *testing.T, addr, name string, qtype uint16, rcode int, records ...string) time.Duration {
	t.Helper()
	start := time.Now()
	want := stack.Answer{Rcode: rcode, Records: records}
	slices.Sort(want.Records)
	waitFor(t, fmt.Sprintf("%s %s answers %s", name, dns.TypeToString[qtype], want), func(context.Context) (string, error) {
		got, err := stack.Query(addr, name, qtype)
		if err != nil || got.Rcode != rcode || !slices.Equal(got.Records, want.Records) {
			return fmt.Sprintf("%s %v", got, err), nil
		}
		return "", nil
	})
	return time.Since(start)
}

// mirrorOf is the physical mirror of a virtual Service, once it exists.
func mirrorOf(t *testing.T, namespace, name string) *corev1.Service {
	t.Helper()
	var mirror *corev1.Service
	waitFor(t, "the mirror of "+namespace+"/"+name, func(ctx context.Context) (string, error) {
		var err error
		mirror, err = world.PhysicalKube.CoreV1().Services(stack.MountNamespace).Get(ctx, kubeoceanv1alpha1.PhysicalName(namespace, name), metav1.GetOptions{})
		if err != nil {
			return err.Error(), nil
		}
		return "", nil
	})
	return mirror
}

// physicalPod is the physical twin of virtual pod shop/name.
func physicalPod(t *testing.T, name string) *corev1.Pod {
	t.Helper()
	ctx := t.Context()
	virtual, err := world.VirtualKube.CoreV1().Pods(shop).Get(ctx, name, metav1.GetOptions{})
	step(t, "get virtual pod "+name, err)
	pod, err := world.PhysicalKube.CoreV1().Pods(stack.MountNamespace).Get(ctx, virtual.Annotations[kubeoceanv1alpha1.AnnotationPhysicalPodName], metav1.GetOptions{})
	step(t, "get the physical twin of "+name, err)
	return pod
}

// checkShopNames: each name answers as the specification says, with the
// physical ClusterIP of the mirror or the physical pods' IPs.
func checkShopNames(t *testing.T, addr string) {
	apiIP := mirrorOf(t, shop, "api").Spec.ClusterIP
	db0, db1 := physicalPod(t, "db-0").Status.PodIP, physicalPod(t, "db-1").Status.PodIP
	if db0 == "" || db1 == "" || db0 == db1 {
		t.Fatalf("physical pod IPs of db-0 and db-1: %q %q", db0, db1)
	}
	eventuallyAnswers(t, addr, "api.shop"+domain, dns.TypeA, dns.RcodeSuccess, "A "+apiIP)
	eventuallyAnswers(t, addr, "db.shop"+domain, dns.TypeA, dns.RcodeSuccess, "A "+db0, "A "+db1)
	eventuallyAnswers(t, addr, "legacy.shop"+domain, dns.TypeA, dns.RcodeSuccess, "A 192.0.2.10")
	for name, want := range map[string][]string{
		"db-0.db.shop" + domain:        {"A " + db0},
		"db-1.db.shop" + domain:        {"A " + db1},
		"ext.shop" + domain:            {"A " + apiIP, "CNAME api.shop.svc.cluster.local."},
		"_http._tcp.api.shop" + domain: {"SRV 0 100 80 api.shop.svc.cluster.local."},
		"_peer._tcp.db.shop" + domain:  {"SRV 0 50 7000 db-0.db.shop.svc.cluster.local.", "SRV 0 50 7000 db-1.db.shop.svc.cluster.local."},
	} {
		qtype := dns.TypeA
		if strings.HasPrefix(name, "_") {
			qtype = dns.TypeSRV
		}
		if got := lookup(t, addr, name, qtype); got.Rcode != dns.RcodeSuccess || !slices.Equal(got.Records, want) {
			t.Errorf("%s %s: %s, want %q", name, dns.TypeToString[qtype], got, want)
		}
	}
}

// checkUnreadyPodLeaves marks db-1's physical pod not Ready, as its
// kubelet (kwok) would: the EndpointSlice controller marks its endpoint not
// ready and the headless name leaves it out.
func checkUnreadyPodLeaves(t *testing.T, addr string) {
	ctx := t.Context()
	db0 := physicalPod(t, "db-0").Status.PodIP
	pod := physicalPod(t, "db-1")
	for i, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady || c.Type == corev1.ContainersReady {
			pod.Status.Conditions[i].Status, pod.Status.Conditions[i].LastTransitionTime = corev1.ConditionFalse, metav1.Now()
		}
	}
	for i := range pod.Status.ContainerStatuses {
		pod.Status.ContainerStatuses[i].Ready = false
	}
	_, err := world.PhysicalKube.CoreV1().Pods(stack.MountNamespace).UpdateStatus(ctx, pod, metav1.UpdateOptions{})
	step(t, "mark db-1's physical pod not Ready", err)
	took := eventuallyAnswers(t, addr, "db.shop"+domain, dns.TypeA, dns.RcodeSuccess, "A "+db0)
	t.Logf("physical pod not Ready → out of the headless answer in %v", took.Round(time.Millisecond))
	if got := lookup(t, addr, "_peer._tcp.db.shop"+domain, dns.TypeSRV); len(got.Records) != 1 {
		t.Errorf("SRV of db with db-1 not ready: %s", got)
	}
}

// checkServiceNamespaces: a Service of a namespace without pods on the
// binding is NXDOMAIN until the binding lists the namespace.
func checkServiceNamespaces(t *testing.T, addr string) {
	tenantNamespace(t, faraway)
	createServices(t, service(faraway, "remote", corev1.ServiceSpec{Selector: map[string]string{"app": "remote"},
		Ports: []corev1.ServicePort{{Name: "http", Port: 80}}}))
	// The syncer mirrors a new Service of shop in well under this.
	time.Sleep(3 * time.Second)
	if got := lookup(t, addr, "remote.faraway"+domain, dns.TypeA); got.Rcode != dns.RcodeNameError {
		t.Errorf("a Service out of the binding's reach: %s, want NXDOMAIN", got)
	}
	start := time.Now()
	setServiceNamespaces(t, faraway)
	ip := mirrorOf(t, faraway, "remote").Spec.ClusterIP
	eventuallyAnswers(t, addr, "remote.faraway"+domain, dns.TypeA, dns.RcodeSuccess, "A "+ip)
	t.Logf("namespace added to spec.serviceNamespaces → answer in %v", time.Since(start).Round(time.Millisecond))
}

func setServiceNamespaces(t *testing.T, namespaces ...string) {
	patch := fmt.Sprintf(`{"spec":{"serviceNamespaces":["%s"]}}`, strings.Join(namespaces, `","`))
	_, err := world.Virtual.Kubectl(t.Context(), "patch", "clusterbinding", stack.BindingName, "--type=merge", "-p", patch)
	step(t, "set spec.serviceNamespaces", err)
}

// checkDeletedService: deleting a virtual Service removes its mirror and
// its name within 10 s.
func checkDeletedService(t *testing.T, addr string) {
	ctx := t.Context()
	mirror := kubeoceanv1alpha1.PhysicalName(faraway, "remote")
	start := time.Now()
	step(t, "delete Service remote", world.VirtualKube.CoreV1().Services(faraway).Delete(ctx, "remote", metav1.DeleteOptions{}))
	deadline, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	step(t, "the mirror and the name of the deleted Service go within 10 s", stack.Poll(deadline, "mirror and name gone", func(ctx context.Context) (string, error) {
		_, err := world.PhysicalKube.CoreV1().Services(stack.MountNamespace).Get(ctx, mirror, metav1.GetOptions{})
		if !apierrors.IsNotFound(err) {
			return fmt.Sprintf("mirror: %v", err), nil
		}
		if got, err := stack.Query(addr, "remote.faraway"+domain, dns.TypeA); err != nil || got.Rcode != dns.RcodeNameError {
			return fmt.Sprintf("name: %s %v", got, err), nil
		}
		return "", nil
	}))
	t.Logf("virtual Service deleted → mirror gone and NXDOMAIN in %v", time.Since(start).Round(time.Millisecond))
}
