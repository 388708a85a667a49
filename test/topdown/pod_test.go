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
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	utilrand "k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2/ktesting"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
	kubeoceanclient "github.com/kubeocean/kubeocean/generated/clientset/versioned"
	"github.com/kubeocean/kubeocean/internal/events"
	"github.com/kubeocean/kubeocean/internal/ownership"
	"github.com/kubeocean/kubeocean/internal/syncer/bottomup/podstatus"
	"github.com/kubeocean/kubeocean/internal/syncer/tenantmeta"
	"github.com/kubeocean/kubeocean/internal/syncer/topdown/dependents"
	"github.com/kubeocean/kubeocean/internal/syncer/topdown/pod"
	"github.com/kubeocean/kubeocean/internal/syncer/topdown/podidentity"
	"github.com/kubeocean/kubeocean/pkg/informers"
	"github.com/kubeocean/kubeocean/test/testenv"
)

// TestPodController runs the virtual pod controller, with the dependents
// library and the bottom-up pod-status controller, between the shared
// clusters. A virtual pod bound to a virtual node of the test binding,
// using a ConfigMap, a Secret and its service-account token, gets a
// physical pod in the mount namespace with mapped names, which kwok runs;
// the token it mounts is the virtual cluster's, for the virtual pod. A
// label added to the virtual pod reaches the physical pod; deleting the
// virtual pod deletes the physical pod and the virtual pod goes; deleting
// a physical pod by hand fails its virtual pod with a reason saying so.
func TestPodController(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithTimeout(ctx, 4*time.Minute)
	defer cancel()
	e := newPodEnv(t, ctx)
	virtualKube, physicalKube := e.virtualKube, e.physicalKube

	virtual := e.createPod("app")
	physicalName := kubeoceanv1alpha1.PhysicalName(e.virtualNS, "app")

	// The physical pod appears with the mapped names and kwok runs it;
	// the virtual pod shows it Running.
	physical := e.waitForPhysicalPod(physicalName, func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodRunning })
	e.checkPhysicalPod(virtual, physical)
	e.poll("virtual pod Running with the physical UID", func(ctx context.Context) (bool, error) {
		p, err := virtualKube.CoreV1().Pods(e.virtualNS).Get(ctx, "app", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return p.Status.Phase == corev1.PodRunning && p.Annotations[kubeoceanv1alpha1.AnnotationPhysicalPodUID] == string(physical.UID), nil
	})
	e.checkTokenSecret(physicalName)

	// Nothing changes, so nothing is written to the physical pod.
	settled, err := physicalKube.CoreV1().Pods(e.mountNS).Get(ctx, physicalName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(3 * time.Second)
	again, err := physicalKube.CoreV1().Pods(e.mountNS).Get(ctx, physicalName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if again.ResourceVersion != settled.ResourceVersion {
		t.Errorf("physical pod written again without a change: resourceVersion %s → %s", settled.ResourceVersion, again.ResourceVersion)
	}

	// A label added on the virtual side reaches the physical pod.
	if _, err := virtualKube.CoreV1().Pods(e.virtualNS).Patch(ctx, "app", types.MergePatchType,
		[]byte(`{"metadata":{"labels":{"tier":"frontend"}}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	e.waitForPhysicalPod(physicalName, func(p *corev1.Pod) bool { return p.Labels[tenantmeta.LabelKey("tier")] == "frontend" })

	// Deleting the virtual pod (gracefully: no kubelet would finish it)
	// deletes the physical pod, then the virtual pod goes.
	if err := virtualKube.CoreV1().Pods(e.virtualNS).Delete(ctx, "app", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	e.waitGone(physicalKube, e.mountNS, physicalName)
	e.waitGone(virtualKube, e.virtualNS, "app")
	e.poll("token Secret deleted", func(ctx context.Context) (bool, error) {
		_, err := physicalKube.CoreV1().Secrets(e.mountNS).Get(ctx, podidentity.SecretName(physicalName), metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})

	// A physical pod deleted by hand fails its virtual pod.
	e.createPod("lost")
	lostName := kubeoceanv1alpha1.PhysicalName(e.virtualNS, "lost")
	lostPhysical := e.waitForPhysicalPod(lostName, func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodRunning })
	e.poll("virtual pod knows the physical UID", func(ctx context.Context) (bool, error) {
		p, err := virtualKube.CoreV1().Pods(e.virtualNS).Get(ctx, "lost", metav1.GetOptions{})
		return err == nil && p.Annotations[kubeoceanv1alpha1.AnnotationPhysicalPodUID] == string(lostPhysical.UID), err
	})
	if err := physicalKube.CoreV1().Pods(e.mountNS).Delete(ctx, lostName, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	var failed *corev1.Pod
	e.poll("virtual pod Failed", func(ctx context.Context) (bool, error) {
		p, err := virtualKube.CoreV1().Pods(e.virtualNS).Get(ctx, "lost", metav1.GetOptions{})
		failed = p
		return err == nil && p.Status.Phase == corev1.PodFailed, err
	})
	if failed.Status.Reason != kubeoceanv1alpha1.ReasonPhysicalPodLost || !strings.Contains(failed.Status.Message, lostName) {
		t.Errorf("failed virtual pod: reason %q, message %q; want %s naming %s", failed.Status.Reason, failed.Status.Message, kubeoceanv1alpha1.ReasonPhysicalPodLost, lostName)
	}
}

// podEnv is the world of TestPodController; as methods its helpers cannot
// clash with those of other tests of the package.
type podEnv struct {
	t                         *testing.T
	ctx                       context.Context
	virtualKube, physicalKube kubernetes.Interface
	clusterID                 string
	virtualNS, mountNS        string
	virtualNode, physicalNode string
}

func newPodEnv(t *testing.T, ctx context.Context) *podEnv {
	suffix := utilrand.String(6)
	e := &podEnv{
		t: t, ctx: ctx,
		virtualKube: virtualCluster.Clientset(), physicalKube: physicalCluster.Clientset(),
		clusterID: "pod-" + suffix, virtualNS: "pod-virtual-" + suffix, mountNS: "pod-mount-" + suffix,
		physicalNode: "pod-node-" + suffix,
	}
	e.virtualNode = kubeoceanv1alpha1.VirtualNodeName(e.clusterID, e.physicalNode)

	opts := metav1.CreateOptions{}
	e.must(e.physicalKube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: e.mountNS}}, opts))
	e.must(e.physicalKube.CoreV1().Nodes().Create(ctx, testenv.KwokNode(e.physicalNode, "8", "16Gi", nil), opts))
	e.must(e.virtualKube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: e.virtualNS}}, opts))
	e.must(e.virtualKube.CoreV1().Nodes().Create(ctx, e.virtualNodeObject(), opts))
	t.Cleanup(e.cleanup)

	e.must(e.virtualKube.CoreV1().ConfigMaps(e.virtualNS).Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "app-config"}, Data: map[string]string{"greeting": "hello"}}, opts))
	e.must(e.virtualKube.CoreV1().Secrets(e.virtualNS).Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "app-secret"}, StringData: map[string]string{"password": "s3cret"}}, opts))
	e.poll("default ServiceAccount and kube-root-ca.crt", func(ctx context.Context) (bool, error) {
		_, saErr := e.virtualKube.CoreV1().ServiceAccounts(e.virtualNS).Get(ctx, "default", metav1.GetOptions{})
		_, caErr := e.virtualKube.CoreV1().ConfigMaps(e.virtualNS).Get(ctx, "kube-root-ca.crt", metav1.GetOptions{})
		return saErr == nil && caErr == nil, nil
	})
	e.runControllers()
	return e
}

// virtualNodeObject looks like a virtual node the bottom-up node
// controller made for the test binding.
func (e *podEnv) virtualNodeObject() *corev1.Node {
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: e.virtualNode, Labels: map[string]string{
			kubeoceanv1alpha1.LabelManagedBy:        kubeoceanv1alpha1.ManagedByKubeocean,
			kubeoceanv1alpha1.LabelClusterID:        e.clusterID,
			kubeoceanv1alpha1.LabelClusterBinding:   "binding-" + e.clusterID,
			kubeoceanv1alpha1.LabelPhysicalNodeName: e.physicalNode,
		}},
		Spec: corev1.NodeSpec{Taints: []corev1.Taint{{Key: kubeoceanv1alpha1.TaintVirtualNode, Effect: corev1.TaintEffectNoSchedule}}},
		Status: corev1.NodeStatus{
			Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeoceanReady",
				LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now()}},
		},
	}
}

// testOwner is the identity of the physical objects of the test binding
// clusterID, whose controllers run without a ClusterBinding object.
func testOwner(clusterID string) ownership.Owner {
	return ownership.Owner{ClusterID: clusterID, BindingUID: types.UID("uid-" + clusterID)}
}

// runControllers wires the controllers the way the syncer does and runs
// them until the test ends.
func (e *podEnv) runControllers() {
	t, ctx := e.t, e.ctx
	virtual := informers.NewCluster("virtual", e.virtualKube, kubeoceanclient.NewForConfigOrDie(virtualCluster.Config()), 0)
	physical := informers.NewCluster("physical", e.physicalKube, kubeoceanclient.NewForConfigOrDie(physicalCluster.Config()), 0)
	virtualRecorder, stopVirtualRecorder := events.NewRecorder(ctx, e.virtualKube, "kubeocean-syncer")
	physicalRecorder, stopPhysicalRecorder := events.NewRecorder(ctx, e.physicalKube, "kubeocean-syncer")

	managed := kubeoceanv1alpha1.LabelManagedBy + "=" + kubeoceanv1alpha1.ManagedByKubeocean
	marked := informers.Scope{LabelSelector: kubeoceanv1alpha1.SyncedByLabel(e.clusterID)}
	owner := testOwner(e.clusterID)
	copies := informers.Scope{Namespace: e.mountNS, LabelSelector: owner.Selector()}
	ours := informers.Scope{LabelSelector: managed + "," + kubeoceanv1alpha1.LabelClusterID + "=" + e.clusterID}

	v, vm, p, pm := virtual.Kube(informers.Scope{}).Core().V1(), virtual.Kube(marked).Core().V1(), physical.Kube(copies).Core().V1(), physical.Kube(informers.Scope{LabelSelector: owner.Selector()}).Core().V1()
	deps, err := dependents.New(dependents.Options{
		ClusterID: e.clusterID, BindingUID: owner.BindingUID, MountNamespace: e.mountNS, VirtualClient: e.virtualKube, PhysicalClient: e.physicalKube,
		VirtualConfigMaps: vm.ConfigMaps().Lister(), VirtualSecrets: vm.Secrets().Lister(),
		VirtualPVCs: vm.PersistentVolumeClaims().Lister(), VirtualPVs: vm.PersistentVolumes().Lister(),
		PhysicalConfigMaps: p.ConfigMaps().Lister(), PhysicalSecrets: p.Secrets().Lister(),
		PhysicalPVCs: p.PersistentVolumeClaims().Lister(), PhysicalPVs: pm.PersistentVolumes().Lister(),
		Recorder: virtualRecorder,
	})
	if err != nil {
		t.Fatal(err)
	}
	apiServer, err := url.Parse(virtualCluster.Config().Host)
	if err != nil {
		t.Fatal(err)
	}
	pods, err := pod.New(pod.Options{
		ClusterID: e.clusterID, BindingUID: owner.BindingUID, MountNamespace: e.mountNS, VirtualAPIServer: apiServer.Host,
		VirtualClient: e.virtualKube.CoreV1(), PhysicalClient: e.physicalKube.CoreV1(),
		VirtualPods: v.Pods(), VirtualNodes: virtual.Kube(ours).Core().V1().Nodes(),
		PhysicalPods: p.Pods(), PhysicalSecrets: p.Secrets(),
		Dependents: deps, Recorder: virtualRecorder,
	})
	if err != nil {
		t.Fatal(err)
	}
	statuses, err := podstatus.New(podstatus.Options{
		ClusterID: e.clusterID, BindingUID: owner.BindingUID, MountNamespace: e.mountNS,
		PhysicalClient: e.physicalKube.CoreV1(), VirtualClient: e.virtualKube.CoreV1(),
		PhysicalPods: p.Pods(), VirtualPods: v.Pods(), Recorder: physicalRecorder,
	})
	if err != nil {
		t.Fatal(err)
	}

	runCtx, stop := context.WithCancel(ctx)
	virtual.Start(runCtx)
	physical.Start(runCtx)
	done := make(chan struct{}, 2)
	for _, run := range []func(context.Context, int) error{pods.Run, statuses.Run} {
		go func() {
			defer func() { done <- struct{}{} }()
			if err := run(runCtx, 4); err != nil {
				t.Errorf("controller: %v", err)
			}
		}()
	}
	t.Cleanup(func() {
		stop()
		<-done
		<-done
		virtual.Shutdown()
		physical.Shutdown()
		stopVirtualRecorder()
		stopPhysicalRecorder()
	})
}

// createPod creates a virtual pod bound to the virtual node, with env from
// a ConfigMap and a Secret; admission adds the service-account token.
func (e *podEnv) createPod(name string) *corev1.Pod {
	e.t.Helper()
	p := testenv.KwokPod(e.virtualNS, name, e.virtualNode, "100m", "64Mi", map[string]string{"app": name})
	p.Spec.Containers[0].Env = []corev1.EnvVar{
		{Name: "GREETING", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{
			LocalObjectReference: corev1.LocalObjectReference{Name: "app-config"}, Key: "greeting"}}},
		{Name: "PASSWORD", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
			LocalObjectReference: corev1.LocalObjectReference{Name: "app-secret"}, Key: "password"}}},
		{Name: "POD_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
	}
	created, err := e.virtualKube.CoreV1().Pods(e.virtualNS).Create(e.ctx, p, metav1.CreateOptions{})
	if err != nil {
		e.t.Fatalf("creating virtual pod %s: %v", name, err)
	}
	return created
}

// checkPhysicalPod checks the physical pod against its virtual pod.
func (e *podEnv) checkPhysicalPod(virtual, physical *corev1.Pod) {
	t := e.t
	t.Helper()
	wantAnnotations := map[string]string{
		kubeoceanv1alpha1.AnnotationVirtualPodNamespace: e.virtualNS,
		kubeoceanv1alpha1.AnnotationVirtualPodName:      virtual.Name,
		kubeoceanv1alpha1.AnnotationVirtualPodUID:       string(virtual.UID),
	}
	for k, v := range wantAnnotations {
		if physical.Annotations[k] != v {
			t.Errorf("physical annotation %s = %q, want %q", k, physical.Annotations[k], v)
		}
	}
	if physical.Labels[kubeoceanv1alpha1.LabelManagedBy] != kubeoceanv1alpha1.ManagedByKubeocean || physical.Labels[tenantmeta.LabelKey("app")] != virtual.Name {
		t.Errorf("physical labels = %v", physical.Labels)
	}
	if physical.Spec.NodeName != e.physicalNode {
		t.Errorf("physical node = %q, want %q", physical.Spec.NodeName, e.physicalNode)
	}
	env := map[string]corev1.EnvVar{}
	for _, v := range physical.Spec.Containers[0].Env {
		env[v.Name] = v
	}
	if ref := env["GREETING"].ValueFrom; ref == nil || ref.ConfigMapKeyRef.Name != kubeoceanv1alpha1.PhysicalName(e.virtualNS, "app-config") {
		t.Errorf("GREETING = %+v, want the physical ConfigMap", env["GREETING"])
	}
	if ref := env["PASSWORD"].ValueFrom; ref == nil || ref.SecretKeyRef.Name != kubeoceanv1alpha1.PhysicalName(e.virtualNS, "app-secret") {
		t.Errorf("PASSWORD = %+v, want the physical Secret", env["PASSWORD"])
	}
	if env["POD_NAME"].Value != virtual.Name || env["KUBERNETES_SERVICE_HOST"].Value != "127.0.0.1" {
		t.Errorf("POD_NAME = %+v, KUBERNETES_SERVICE_HOST = %+v; want the virtual name and the virtual API server", env["POD_NAME"], env["KUBERNETES_SERVICE_HOST"])
	}
	if physical.Spec.AutomountServiceAccountToken == nil || *physical.Spec.AutomountServiceAccountToken {
		t.Errorf("automountServiceAccountToken = %v, want false", physical.Spec.AutomountServiceAccountToken)
	}
	for _, name := range []string{"app-config", "app-secret"} {
		physicalName := kubeoceanv1alpha1.PhysicalName(e.virtualNS, name)
		_, cmErr := e.physicalKube.CoreV1().ConfigMaps(e.mountNS).Get(e.ctx, physicalName, metav1.GetOptions{})
		_, secretErr := e.physicalKube.CoreV1().Secrets(e.mountNS).Get(e.ctx, physicalName, metav1.GetOptions{})
		if cmErr != nil && secretErr != nil {
			t.Errorf("no physical copy %s of %s", physicalName, name)
		}
	}
}

// checkTokenSecret checks that the token the physical pod mounts
// authenticates to the virtual API server, with the virtual CA, as the
// virtual pod's service account.
func (e *podEnv) checkTokenSecret(physicalName string) {
	t := e.t
	t.Helper()
	secret, err := e.physicalKube.CoreV1().Secrets(e.mountNS).Get(e.ctx, podidentity.SecretName(physicalName), metav1.GetOptions{})
	if err != nil {
		t.Fatalf("token Secret: %v", err)
	}
	config := &rest.Config{
		Host:            virtualCluster.Config().Host,
		BearerToken:     string(secret.Data["token"]),
		TLSClientConfig: rest.TLSClientConfig{CAData: secret.Data["ca.crt"]},
	}
	client, err := kubernetes.NewForConfig(config)
	if err != nil {
		t.Fatal(err)
	}
	review, err := client.AuthenticationV1().SelfSubjectReviews().Create(e.ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("authenticating with the pod's token: %v", err)
	}
	user := review.Status.UserInfo
	if want := fmt.Sprintf("system:serviceaccount:%s:default", e.virtualNS); user.Username != want {
		t.Errorf("token user = %q, want %q", user.Username, want)
	}
	if podName := user.Extra["authentication.kubernetes.io/pod-name"]; len(podName) != 1 || podName[0] != "app" {
		t.Errorf("token bound to pod %v, want app", podName)
	}
	if string(secret.Data["metadata.namespace"]) != e.virtualNS {
		t.Errorf("namespace file = %q, want %q", secret.Data["metadata.namespace"], e.virtualNS)
	}
	// The pod's kube-api-access volume asks for 3607 s, which the virtual
	// apiserver would answer with a token of a year: the copy lives an hour.
	if lifetime, err := tokenLifetime(string(secret.Data["token"])); err != nil || lifetime > time.Hour {
		t.Errorf("copied token lives %v (%v), want at most an hour", lifetime, err)
	}
}

// tokenLifetime is exp - iat of a JWT, read without verifying it.
func tokenLifetime(token string) (time.Duration, error) {
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return 0, fmt.Errorf("not a JWT: %d parts", len(parts))
	}
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return 0, err
	}
	var claims struct{ Exp, Iat int64 }
	if err := json.Unmarshal(payload, &claims); err != nil {
		return 0, err
	}
	return time.Duration(claims.Exp-claims.Iat) * time.Second, nil
}

func (e *podEnv) waitForPhysicalPod(name string, ready func(*corev1.Pod) bool) *corev1.Pod {
	e.t.Helper()
	var found *corev1.Pod
	e.poll("physical pod "+name, func(ctx context.Context) (bool, error) {
		p, err := e.physicalKube.CoreV1().Pods(e.mountNS).Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		found = p
		return err == nil && ready(p), err
	})
	return found
}

func (e *podEnv) waitGone(kube kubernetes.Interface, namespace, name string) {
	e.t.Helper()
	e.poll("pod "+namespace+"/"+name+" gone", func(ctx context.Context) (bool, error) {
		_, err := kube.CoreV1().Pods(namespace).Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return false, err
	})
}

func (e *podEnv) poll(what string, condition wait.ConditionWithContextFunc) {
	e.t.Helper()
	if err := wait.PollUntilContextTimeout(e.ctx, 100*time.Millisecond, time.Minute, true, condition); err != nil {
		e.t.Fatalf("waiting for %s: %v", what, err)
	}
}

// must fails the test on a failed create: e.must(client.Create(...)).
func (e *podEnv) must(obj any, err error) {
	e.t.Helper()
	if err != nil {
		e.t.Fatalf("creating %T: %v", obj, err)
	}
}

func (e *podEnv) cleanup() {
	ctx := context.Background()
	_ = e.virtualKube.CoreV1().Namespaces().Delete(ctx, e.virtualNS, metav1.DeleteOptions{})
	_ = e.virtualKube.CoreV1().Nodes().Delete(ctx, e.virtualNode, metav1.DeleteOptions{})
	_ = e.physicalKube.CoreV1().Namespaces().Delete(ctx, e.mountNS, metav1.DeleteOptions{})
	_ = e.physicalKube.CoreV1().Nodes().Delete(ctx, e.physicalNode, metav1.DeleteOptions{})
}
