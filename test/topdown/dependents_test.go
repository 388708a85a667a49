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
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	utilrand "k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2/ktesting"
	"k8s.io/utils/ptr"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
	kubeoceanclient "github.com/kubeocean/kubeocean/generated/clientset/versioned"
	"github.com/kubeocean/kubeocean/internal/events"
	"github.com/kubeocean/kubeocean/internal/syncer/topdown/copier"
	"github.com/kubeocean/kubeocean/internal/syncer/topdown/dependents"
	"github.com/kubeocean/kubeocean/internal/syncer/topdown/dependents/dependentstest"
	"github.com/kubeocean/kubeocean/pkg/informers"
)

// dependentsGrace is the controllers' grace period before an unused copy
// goes; short, so the test need not wait the production 30 s.
const dependentsGrace = 2 * time.Second

// TestDependents runs the dependent-object library and its four
// controllers between the shared clusters. A virtual pod on the binding's
// virtual node uses a ConfigMap, a Secret, an image-pull Secret and a
// claim bound (by the virtual controller-manager) to a CSI volume with a
// node-publish Secret; the test copies them the way the pod controller
// does and shows: copies exist under mapped names with our labels and
// annotations, the virtual objects are marked, a ConfigMap edit reaches the
// copy, nothing is written while nothing changes, a foreign ConfigMap at a
// mapped name is refused with an event and left alone, deleting virtual
// objects removes their copies and then the finalizer, and once the pod is
// gone every remaining copy is collected and the virtual objects look
// untouched.
func TestDependents(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithTimeout(ctx, 4*time.Minute)
	defer cancel()
	e := newDependentsEnv(t, ctx)
	pod := e.createObjects()
	s := e.runControllers()

	// Like the pod controller: copy everything the pod uses.
	copies := map[string]string{}
	for kind, ensure := range map[string]func() (string, error){
		"conf":     func() (string, error) { return s.EnsureConfigMap(ctx, e.ns, "conf") },
		"creds":    func() (string, error) { return s.EnsureSecret(ctx, e.ns, "creds") },
		"registry": func() (string, error) { return s.EnsureSecret(ctx, e.ns, "registry") },
		"data":     func() (string, error) { return s.EnsurePVC(ctx, e.ns, "data") },
	} {
		name, err := ensure()
		if err != nil {
			t.Fatalf("ensuring %s: %v", kind, err)
		}
		if want := kubeoceanv1alpha1.PhysicalName(e.ns, kind); name != want {
			t.Errorf("%s copied as %q, want %q", kind, name, want)
		}
		copies[kind] = name
	}
	e.checkCopies()

	// A ConfigMap edit reaches the copy; a deleted copy comes back.
	conf := e.getConfigMap(e.virtualKube, e.ns, "conf")
	conf.Data["greeting"] = "hi"
	e.must(e.virtualKube.CoreV1().ConfigMaps(e.ns).Update(ctx, conf, metav1.UpdateOptions{}))
	e.poll("edit reaches the copy", func(ctx context.Context) (bool, error) {
		cm, err := e.physicalKube.CoreV1().ConfigMaps(e.mountNS).Get(ctx, copies["conf"], metav1.GetOptions{})
		return err == nil && cm.Data["greeting"] == "hi", nil
	})
	e.must(nil, e.physicalKube.CoreV1().ConfigMaps(e.mountNS).Delete(ctx, copies["conf"], metav1.DeleteOptions{}))
	e.poll("deleted copy restored", func(ctx context.Context) (bool, error) {
		return e.configMapIn(e.physicalKube, e.mountNS, copies["conf"])(ctx) == nil, nil
	})

	// Nothing changes, so nothing is written on either side.
	before := e.resourceVersions(copies)
	time.Sleep(3 * time.Second)
	if after := e.resourceVersions(copies); !slices.Equal(before, after) {
		t.Errorf("objects written without a change: resourceVersions %v → %v", before, after)
	}

	e.checkConflict(s)

	// Deleting virtual objects removes their copies, then the finalizer.
	e.must(nil, e.virtualKube.CoreV1().ConfigMaps(e.ns).Delete(ctx, "conf", metav1.DeleteOptions{}))
	e.must(nil, e.virtualKube.CoreV1().Secrets(e.ns).Delete(ctx, "creds", metav1.DeleteOptions{}))
	e.waitGone("virtual ConfigMap conf", e.configMapIn(e.virtualKube, e.ns, "conf"))
	e.waitGone("virtual Secret creds", e.secretIn(e.virtualKube, e.ns, "creds"))
	e.waitGone("ConfigMap copy", e.configMapIn(e.physicalKube, e.mountNS, copies["conf"]))
	e.waitGone("Secret copy", e.secretIn(e.physicalKube, e.mountNS, copies["creds"]))

	// Once no pod uses them, the other copies go and the virtual objects
	// are left unmarked.
	e.must(nil, e.virtualKube.CoreV1().Pods(e.ns).Delete(ctx, pod.Name, *metav1.NewDeleteOptions(0)))
	e.waitCollected(copies)
}

// dependentsEnv is the world of TestDependents; as methods its helpers
// cannot clash with those of other tests of the package.
type dependentsEnv struct {
	t                         *testing.T
	ctx                       context.Context
	virtualKube, physicalKube kubernetes.Interface
	clusterID, node           string
	ns, storageNS, mountNS    string
}

func newDependentsEnv(t *testing.T, ctx context.Context) *dependentsEnv {
	suffix := utilrand.String(6)
	e := &dependentsEnv{
		t: t, ctx: ctx,
		virtualKube: virtualCluster.Clientset(), physicalKube: physicalCluster.Clientset(),
		clusterID: "dep-" + suffix, ns: "dep-app-" + suffix, storageNS: "dep-storage-" + suffix, mountNS: "dep-mount-" + suffix,
	}
	e.node = kubeoceanv1alpha1.VirtualNodeName(e.clusterID, "worker")
	t.Cleanup(e.cleanup)
	return e
}

func (e *dependentsEnv) must(_ any, err error) {
	e.t.Helper()
	if err != nil {
		e.t.Fatal(err)
	}
}

// createObjects creates the namespaces, the binding's virtual node and the
// objects the pod uses, binds the claim and creates the pod.
func (e *dependentsEnv) createObjects() *corev1.Pod {
	ctx, opts := e.ctx, metav1.CreateOptions{}
	for _, ns := range []string{e.ns, e.storageNS} {
		e.must(e.virtualKube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, opts))
	}
	// The CSI Secret keeps its namespace, which must exist physically.
	for _, ns := range []string{e.mountNS, e.storageNS} {
		e.must(e.physicalKube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, opts))
	}
	e.must(e.virtualKube.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: e.node, Labels: map[string]string{
		kubeoceanv1alpha1.LabelManagedBy: kubeoceanv1alpha1.ManagedByKubeocean, kubeoceanv1alpha1.LabelClusterID: e.clusterID,
	}}}, opts))

	v := e.virtualKube.CoreV1()
	e.must(v.ConfigMaps(e.ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "conf", Labels: map[string]string{"app": "web"}},
		Data: map[string]string{"greeting": "hello"}}, opts))
	e.must(v.Secrets(e.ns).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "creds"},
		StringData: map[string]string{"password": "s3cret"}}, opts))
	e.must(v.Secrets(e.ns).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "registry"}, Type: corev1.SecretTypeDockerConfigJson,
		StringData: map[string]string{corev1.DockerConfigJsonKey: `{"auths":{"registry.example.com":{"auth":"dTpw"}}}`}}, opts))
	e.must(v.Secrets(e.storageNS).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "disk-creds"},
		StringData: map[string]string{"key": "k"}}, opts))
	e.createBoundClaim()

	e.poll("default ServiceAccount", func(ctx context.Context) (bool, error) {
		_, err := v.ServiceAccounts(e.ns).Get(ctx, "default", metav1.GetOptions{})
		return err == nil, nil
	})
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: "web"},
		Spec: corev1.PodSpec{
			NodeName:                     e.node,
			AutomountServiceAccountToken: ptr.To(false),
			Containers: []corev1.Container{{Name: "app", Image: "registry.example.com/app",
				EnvFrom: []corev1.EnvFromSource{{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "creds"}}}}}},
			ImagePullSecrets: []corev1.LocalObjectReference{{Name: "registry"}},
			Volumes: []corev1.Volume{
				{Name: "conf", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "conf"}}}},
				{Name: "data", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data"}}},
			},
			Tolerations: []corev1.Toleration{{Operator: corev1.TolerationOpExists}},
		},
	}
	created, err := v.Pods(e.ns).Create(ctx, pod, opts)
	e.must(nil, err)
	return created
}

// createBoundClaim creates a CSI volume and a claim naming each other; the
// virtual controller-manager's binder then marks both Bound.
func (e *dependentsEnv) createBoundClaim() {
	ctx, opts := e.ctx, metav1.CreateOptions{}
	size := corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}
	class := "kubeocean-test"
	e.must(e.virtualKube.CoreV1().PersistentVolumes().Create(ctx, &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: e.pvName()},
		Spec: corev1.PersistentVolumeSpec{
			Capacity: size, AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimRetain, StorageClassName: class,
			PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{
				Driver: "disk.csi.example.com", VolumeHandle: "vol-" + e.clusterID,
				NodePublishSecretRef: &corev1.SecretReference{Namespace: e.storageNS, Name: "disk-creds"},
			}},
			ClaimRef: &corev1.ObjectReference{Kind: "PersistentVolumeClaim", APIVersion: "v1", Namespace: e.ns, Name: "data"},
		},
	}, opts))
	e.must(e.virtualKube.CoreV1().PersistentVolumeClaims(e.ns).Create(ctx, &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "data"},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:   corev1.VolumeResourceRequirements{Requests: size}, StorageClassName: &class, VolumeName: e.pvName(),
		},
	}, opts))
	e.poll("claim Bound by the virtual controller-manager", func(ctx context.Context) (bool, error) {
		claim, err := e.virtualKube.CoreV1().PersistentVolumeClaims(e.ns).Get(ctx, "data", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		pv, err := e.virtualKube.CoreV1().PersistentVolumes().Get(ctx, e.pvName(), metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return claim.Status.Phase == corev1.ClaimBound && pv.Status.Phase == corev1.VolumeBound, nil
	})
}

func (e *dependentsEnv) pvName() string { return "pv-" + e.clusterID }

// runControllers wires the library and the four controllers the way the
// syncer does, starts the informers and waits for them, and runs the
// controllers until the test ends.
func (e *dependentsEnv) runControllers() *dependents.Syncer {
	t, ctx := e.t, e.ctx
	virtual := informers.NewCluster("virtual", e.virtualKube, kubeoceanclient.NewForConfigOrDie(virtualCluster.Config()), 0)
	physical := informers.NewCluster("physical", e.physicalKube, kubeoceanclient.NewForConfigOrDie(physicalCluster.Config()), 0)
	recorder, stopRecorder := events.NewRecorder(ctx, e.virtualKube, "kubeocean-syncer")

	managed := kubeoceanv1alpha1.LabelManagedBy + "=" + kubeoceanv1alpha1.ManagedByKubeocean
	vm := virtual.Kube(informers.Scope{LabelSelector: kubeoceanv1alpha1.SyncedByLabel(e.clusterID)}).Core().V1()
	pods := virtual.Kube(informers.Scope{}).Core().V1().Pods()
	nodes := virtual.Kube(informers.Scope{LabelSelector: managed + "," + kubeoceanv1alpha1.LabelClusterID + "=" + e.clusterID}).Core().V1().Nodes()
	owner := testOwner(e.clusterID)
	pm := physical.Kube(informers.Scope{Namespace: e.mountNS, LabelSelector: owner.Selector()}).Core().V1()
	pvs := physical.Kube(informers.Scope{LabelSelector: owner.Selector()}).Core().V1().PersistentVolumes()

	s, err := dependents.New(dependents.Options{
		ClusterID: e.clusterID, BindingUID: owner.BindingUID, MountNamespace: e.mountNS, VirtualClient: e.virtualKube, PhysicalClient: e.physicalKube,
		VirtualConfigMaps: vm.ConfigMaps().Lister(), VirtualSecrets: vm.Secrets().Lister(),
		VirtualPVCs: vm.PersistentVolumeClaims().Lister(), VirtualPVs: vm.PersistentVolumes().Lister(),
		PhysicalConfigMaps: pm.ConfigMaps().Lister(), PhysicalSecrets: pm.Secrets().Lister(),
		PhysicalPVCs: pm.PersistentVolumeClaims().Lister(), PhysicalPVs: pvs.Lister(),
		// The lender allows the CSI driver of createBoundClaim's volume.
		Allowances: dependentstest.Allowing(&kubeoceanv1alpha1.WorkloadAllowances{CSIDrivers: []string{"disk.csi.example.com"}}),
		Recorder:   recorder,
	})
	e.must(nil, err)
	copied, err := copier.New(copier.Options{ClusterID: e.clusterID, BindingUID: owner.BindingUID, MountNamespace: e.mountNS, Syncer: s, PhysicalPods: pm.Pods(),
		VirtualConfigMaps: vm.ConfigMaps(), PhysicalConfigMaps: pm.ConfigMaps(), VirtualSecrets: vm.Secrets(), PhysicalSecrets: pm.Secrets(),
		VirtualPVCs: vm.PersistentVolumeClaims(), PhysicalPVCs: pm.PersistentVolumeClaims(), VirtualPVs: vm.PersistentVolumes(), PhysicalPVs: pvs,
		VirtualPods: pods, VirtualNodes: nodes, GracePeriod: dependentsGrace})
	e.must(nil, err)

	runCtx, stop := context.WithCancel(ctx)
	virtual.Start(runCtx)
	physical.Start(runCtx)
	e.must(nil, virtual.WaitForCacheSync(ctx))
	e.must(nil, physical.WaitForCacheSync(ctx))
	runs := []func(context.Context, int) error{copied.ConfigMaps.Run, copied.Secrets.Run, copied.PVCs.Run, copied.PVs.Run}
	done := make(chan struct{}, len(runs))
	for _, run := range runs {
		go func() {
			defer func() { done <- struct{}{} }()
			if err := run(runCtx, 2); err != nil {
				t.Errorf("controller: %v", err)
			}
		}()
	}
	t.Cleanup(func() {
		stop()
		for range runs {
			<-done
		}
		virtual.Shutdown()
		physical.Shutdown()
		stopRecorder()
	})
	return s
}

func (e *dependentsEnv) poll(what string, condition wait.ConditionWithContextFunc) {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(e.ctx, time.Minute)
	defer cancel()
	if err := wait.PollUntilContextCancel(ctx, 200*time.Millisecond, true, condition); err != nil {
		e.t.Fatalf("waiting for %s: %v", what, err)
	}
}

// waitGone waits until get returns NotFound.
func (e *dependentsEnv) waitGone(what string, get func(context.Context) error) {
	e.t.Helper()
	e.poll(what+" gone", func(ctx context.Context) (bool, error) {
		err := get(ctx)
		return apierrors.IsNotFound(err), nil
	})
}

func (e *dependentsEnv) getConfigMap(kube kubernetes.Interface, namespace, name string) *corev1.ConfigMap {
	e.t.Helper()
	cm, err := kube.CoreV1().ConfigMaps(namespace).Get(e.ctx, name, metav1.GetOptions{})
	e.must(nil, err)
	return cm
}

// configMapIn and secretIn read an object, for waitGone.
func (e *dependentsEnv) configMapIn(kube kubernetes.Interface, namespace, name string) func(context.Context) error {
	return func(ctx context.Context) error {
		_, err := kube.CoreV1().ConfigMaps(namespace).Get(ctx, name, metav1.GetOptions{})
		return err
	}
}

func (e *dependentsEnv) secretIn(kube kubernetes.Interface, namespace, name string) func(context.Context) error {
	return func(ctx context.Context) error {
		_, err := kube.CoreV1().Secrets(namespace).Get(ctx, name, metav1.GetOptions{})
		return err
	}
}

// virtualObjects are the virtual objects the pod uses, with its volume and
// the volume's CSI Secret, that still exist.
func (e *dependentsEnv) virtualObjects(ctx context.Context) map[string]metav1.Object {
	get, v := metav1.GetOptions{}, e.virtualKube.CoreV1()
	objects := map[string]metav1.Object{}
	add := func(name string, obj metav1.Object, err error) {
		if err == nil {
			objects[name] = obj
		} else if !apierrors.IsNotFound(err) {
			e.t.Fatal(err)
		}
	}
	cm, err := v.ConfigMaps(e.ns).Get(ctx, "conf", get)
	add("conf", cm, err)
	for _, name := range []string{"creds", "registry"} {
		s, err := v.Secrets(e.ns).Get(ctx, name, get)
		add(name, s, err)
	}
	claim, err := v.PersistentVolumeClaims(e.ns).Get(ctx, "data", get)
	add("data", claim, err)
	volume, err := v.PersistentVolumes().Get(ctx, e.pvName(), get)
	add("pv", volume, err)
	csi, err := v.Secrets(e.storageNS).Get(ctx, "disk-creds", get)
	add("disk-creds", csi, err)
	return objects
}

// checkCopies checks the copies and the marks on the virtual objects.
func (e *dependentsEnv) checkCopies() {
	t, ctx, get, p := e.t, e.ctx, metav1.GetOptions{}, e.physicalKube.CoreV1()
	for name, obj := range e.virtualObjects(e.ctx) {
		if obj.GetLabels()[kubeoceanv1alpha1.SyncedByLabel(e.clusterID)] != "true" ||
			!slices.Contains(obj.GetFinalizers(), kubeoceanv1alpha1.Finalizer(e.clusterID)) ||
			obj.GetAnnotations()[kubeoceanv1alpha1.AnnotationPhysicalName] == "" {
			t.Errorf("virtual %s not marked: labels %v, annotations %v, finalizers %v", name, obj.GetLabels(), obj.GetAnnotations(), obj.GetFinalizers())
		}
		if name == "disk-creds" && obj.GetLabels()[kubeoceanv1alpha1.LabelUsedByPV] != "true" {
			t.Errorf("CSI Secret lacks %s: %v", kubeoceanv1alpha1.LabelUsedByPV, obj.GetLabels())
		}
	}

	cm := e.getConfigMap(e.physicalKube, e.mountNS, kubeoceanv1alpha1.PhysicalName(e.ns, "conf"))
	if cm.Labels["app"] != "web" || cm.Labels[kubeoceanv1alpha1.LabelManagedBy] != kubeoceanv1alpha1.ManagedByKubeocean ||
		cm.Annotations[kubeoceanv1alpha1.AnnotationVirtualName] != "conf" || cm.Annotations[kubeoceanv1alpha1.AnnotationVirtualNamespace] != e.ns ||
		cm.Data["greeting"] != "hello" {
		t.Errorf("ConfigMap copy: labels %v, annotations %v, data %v", cm.Labels, cm.Annotations, cm.Data)
	}
	registry, err := p.Secrets(e.mountNS).Get(ctx, kubeoceanv1alpha1.PhysicalName(e.ns, "registry"), get)
	e.must(nil, err)
	if registry.Type != corev1.SecretTypeDockerConfigJson || len(registry.Data[corev1.DockerConfigJsonKey]) == 0 {
		t.Errorf("image-pull Secret copy: type %s", registry.Type)
	}
	e.must(p.Secrets(e.mountNS).Get(ctx, kubeoceanv1alpha1.PhysicalName(e.ns, "creds"), get))
	csi, err := p.Secrets(e.storageNS).Get(ctx, "disk-creds", get)
	e.must(nil, err)
	if csi.Annotations[kubeoceanv1alpha1.AnnotationVirtualNamespace] != e.storageNS || string(csi.Data["key"]) != "k" {
		t.Errorf("CSI Secret copy: annotations %v", csi.Annotations)
	}

	claimCopy, volumeCopy := kubeoceanv1alpha1.PhysicalName(e.ns, "data"), dependents.PhysicalPVName(e.pvName())
	claim, err := p.PersistentVolumeClaims(e.mountNS).Get(ctx, claimCopy, get)
	e.must(nil, err)
	if claim.Spec.VolumeName != volumeCopy {
		t.Errorf("PVC copy names volume %q, want %q", claim.Spec.VolumeName, volumeCopy)
	}
	volume, err := p.PersistentVolumes().Get(ctx, volumeCopy, get)
	e.must(nil, err)
	ref, secretRef := volume.Spec.ClaimRef, volume.Spec.CSI.NodePublishSecretRef
	if ref == nil || ref.Namespace != e.mountNS || ref.Name != claimCopy ||
		volume.Spec.PersistentVolumeReclaimPolicy != corev1.PersistentVolumeReclaimRetain ||
		secretRef.Namespace != e.storageNS || secretRef.Name != "disk-creds" {
		t.Errorf("PV copy: claimRef %+v, reclaim %s, node-publish Secret %+v", ref, volume.Spec.PersistentVolumeReclaimPolicy, secretRef)
	}
}

// resourceVersions of the copies and of the virtual objects.
func (e *dependentsEnv) resourceVersions(copies map[string]string) []string {
	var versions []string
	for _, obj := range e.virtualObjects(e.ctx) {
		versions = append(versions, obj.GetName()+"@"+obj.GetResourceVersion())
	}
	cm := e.getConfigMap(e.physicalKube, e.mountNS, copies["conf"])
	claim, err := e.physicalKube.CoreV1().PersistentVolumeClaims(e.mountNS).Get(e.ctx, copies["data"], metav1.GetOptions{})
	e.must(nil, err)
	slices.Sort(versions)
	return append(versions, cm.Name+"@"+cm.ResourceVersion, claim.Name+"@"+claim.ResourceVersion)
}

// checkConflict shows a foreign ConfigMap at a mapped name refused with an
// event, and left alone when the virtual ConfigMap is released.
func (e *dependentsEnv) checkConflict(s *dependents.Syncer) {
	t, ctx, opts := e.t, e.ctx, metav1.CreateOptions{}
	physicalName := kubeoceanv1alpha1.PhysicalName(e.ns, "taken")
	e.must(e.physicalKube.CoreV1().ConfigMaps(e.mountNS).Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: physicalName}, Data: map[string]string{"theirs": "1"}}, opts))
	taken, err := e.virtualKube.CoreV1().ConfigMaps(e.ns).Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "taken"}, Data: map[string]string{"ours": "1"}}, opts)
	e.must(nil, err)

	_, err = s.EnsureConfigMap(ctx, e.ns, "taken")
	var conflict *dependents.ConflictError
	if !errors.As(err, &conflict) {
		t.Fatalf("EnsureConfigMap(taken) = %v, want a ConflictError", err)
	}
	selector := fields.Set{"involvedObject.uid": string(taken.UID), "reason": kubeoceanv1alpha1.ReasonPhysicalNameConflict}.String()
	e.poll("conflict event", func(ctx context.Context) (bool, error) {
		list, err := e.virtualKube.CoreV1().Events(e.ns).List(ctx, metav1.ListOptions{FieldSelector: selector})
		return err == nil && len(list.Items) > 0, err
	})
	// No pod uses it: it is released after the grace period, and the
	// foreign object stays as it was.
	e.poll("taken released", func(ctx context.Context) (bool, error) {
		cm, err := e.virtualKube.CoreV1().ConfigMaps(e.ns).Get(ctx, "taken", metav1.GetOptions{})
		return err == nil && len(cm.Finalizers) == 0, err
	})
	foreign := e.getConfigMap(e.physicalKube, e.mountNS, physicalName)
	if foreign.Data["theirs"] != "1" || len(foreign.Data) != 1 || len(foreign.Annotations) != 0 {
		t.Errorf("foreign ConfigMap changed: annotations %v, data %v", foreign.Annotations, foreign.Data)
	}
}

// waitCollected waits for the copies that outlive the deletions to go once
// the pod is gone, and checks the virtual objects are unmarked. The
// physical cluster runs no controller-manager, so the protection
// finalizers its pvc- and pv-protection controllers would lift from an
// unused claim and volume are lifted here.
func (e *dependentsEnv) waitCollected(copies map[string]string) {
	p := e.physicalKube.CoreV1()
	e.waitGone("image-pull Secret copy", e.secretIn(e.physicalKube, e.mountNS, copies["registry"]))
	e.waitGone("PVC copy", func(ctx context.Context) error {
		claim, err := p.PersistentVolumeClaims(e.mountNS).Get(ctx, copies["data"], metav1.GetOptions{})
		if err == nil && claim.DeletionTimestamp != nil && len(claim.Finalizers) > 0 {
			claim.Finalizers = nil
			_, err = p.PersistentVolumeClaims(e.mountNS).Update(ctx, claim, metav1.UpdateOptions{})
		}
		return err
	})
	e.waitGone("PV copy", func(ctx context.Context) error {
		volume, err := p.PersistentVolumes().Get(ctx, dependents.PhysicalPVName(e.pvName()), metav1.GetOptions{})
		if err == nil && volume.DeletionTimestamp != nil && len(volume.Finalizers) > 0 {
			volume.Finalizers = nil
			_, err = p.PersistentVolumes().Update(ctx, volume, metav1.UpdateOptions{})
		}
		return err
	})
	e.waitGone("CSI Secret copy", e.secretIn(e.physicalKube, e.storageNS, "disk-creds"))
	e.poll("virtual objects unmarked", func(ctx context.Context) (bool, error) {
		for _, obj := range e.virtualObjects(ctx) {
			for k := range obj.GetLabels() {
				if strings.HasPrefix(k, "kubeocean.io/") {
					return false, nil
				}
			}
			if len(obj.GetAnnotations()[kubeoceanv1alpha1.AnnotationPhysicalName]) > 0 ||
				slices.Contains(obj.GetFinalizers(), kubeoceanv1alpha1.Finalizer(e.clusterID)) {
				return false, nil
			}
		}
		return true, nil
	})
}

// cleanup removes what the test made. Our finalizers are lifted first in
// case the test stopped half-way, so the virtual namespaces can go; the
// physical cluster runs no namespace controller, so its namespaces are left
// terminating.
func (e *dependentsEnv) cleanup() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	report := func(what string, err error) {
		if err != nil && !apierrors.IsNotFound(err) {
			e.t.Logf("cleanup: %s: %v", what, err)
		}
	}
	v, p := e.virtualKube.CoreV1(), e.physicalKube.CoreV1()
	finalizer := kubeoceanv1alpha1.Finalizer(e.clusterID)
	for name, obj := range e.virtualObjects(ctx) {
		if !slices.Contains(obj.GetFinalizers(), finalizer) {
			continue
		}
		obj.SetFinalizers(slices.DeleteFunc(slices.Clone(obj.GetFinalizers()), func(f string) bool { return f == finalizer }))
		var err error
		switch o := obj.(type) {
		case *corev1.ConfigMap:
			_, err = v.ConfigMaps(o.Namespace).Update(ctx, o, metav1.UpdateOptions{})
		case *corev1.Secret:
			_, err = v.Secrets(o.Namespace).Update(ctx, o, metav1.UpdateOptions{})
		case *corev1.PersistentVolumeClaim:
			_, err = v.PersistentVolumeClaims(o.Namespace).Update(ctx, o, metav1.UpdateOptions{})
		case *corev1.PersistentVolume:
			_, err = v.PersistentVolumes().Update(ctx, o, metav1.UpdateOptions{})
		}
		report("finalizer of "+name, err)
	}
	for _, ns := range []string{e.ns, e.storageNS} {
		report("virtual namespace "+ns, v.Namespaces().Delete(ctx, ns, metav1.DeleteOptions{}))
	}
	report("virtual PV", v.PersistentVolumes().Delete(ctx, e.pvName(), metav1.DeleteOptions{}))
	report("virtual node", v.Nodes().Delete(ctx, e.node, metav1.DeleteOptions{}))
	if volume, err := p.PersistentVolumes().Get(ctx, dependents.PhysicalPVName(e.pvName()), metav1.GetOptions{}); err == nil {
		volume.Finalizers = nil
		_, err = p.PersistentVolumes().Update(ctx, volume, metav1.UpdateOptions{})
		report("physical PV finalizers", err)
		report("physical PV", p.PersistentVolumes().Delete(ctx, volume.Name, metav1.DeleteOptions{}))
	}
	for _, ns := range []string{e.mountNS, e.storageNS} {
		report("physical namespace "+ns, p.Namespaces().Delete(ctx, ns, metav1.DeleteOptions{}))
	}
}
