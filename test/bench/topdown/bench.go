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

package main

import (
	"context"
	"fmt"
	"net"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
	kubeoceanclient "github.com/kubeocean/kubeocean/generated/clientset/versioned"
	"github.com/kubeocean/kubeocean/test/bench/benchenv"
	"github.com/kubeocean/kubeocean/test/controlplane"
	"github.com/kubeocean/kubeocean/test/testenv"
)

const (
	bindingName = "bench"
	clusterID   = "bench"
	mount       = "bench-mount"
	virtualNS   = "bench"
	floorNS     = "floor"
	plainNS     = "plain"

	// shippedQPS and shippedBurst are the syncer's own defaults towards
	// the physical cluster (and the in-process manager's, and the chart's):
	// what the floor client gets unless --qps or --burst change both.
	shippedQPS   = 300
	shippedBurst = 600
)

type bench struct {
	cfg                   config
	virtual, physical     *controlplane.Cluster
	virtualKube, physKube kubernetes.Interface
	syncer                *benchenv.Syncer
	metricsAddr           string
	// procs are every process whose CPU is reported.
	procs benchenv.Processes
	// changedFlags are the syncer's flags the run sets away from their
	// shipped defaults, printed beside the figures.
	changedFlags []string
}

func newBench(cfg config, virtual, physical *controlplane.Cluster) *bench {
	vc, pc := virtual.Config(), physical.Config()
	// The generator of virtual pods must not be the bottleneck; the
	// physical client is the floor and gets the syncer's settings.
	vc.QPS, vc.Burst = 1000, 2000
	pc.QPS, pc.Burst = shippedQPS, shippedBurst
	if cfg.qps > 0 {
		pc.QPS = cfg.qps
	}
	if cfg.burst > 0 {
		pc.Burst = cfg.burst
	}
	return &bench{cfg: cfg, virtual: virtual, physical: physical,
		virtualKube: kubernetes.NewForConfigOrDie(vc), physKube: kubernetes.NewForConfigOrDie(pc)}
}

func nodeName(i int) string { return fmt.Sprintf("bench-node-%02d", i) }

// lendNodes creates the kwok nodes and the policy, binds the cluster, runs
// the syncer and waits for the virtual nodes.
func (b *bench) lendNodes(ctx context.Context) error {
	for i := range b.cfg.nodes {
		node := testenv.KwokNode(nodeName(i), "1000", "4Ti", nil)
		pods := *resourceQuantity(b.cfg.pods + b.cfg.steadyPods)
		node.Status.Capacity[corev1.ResourcePods], node.Status.Allocatable[corev1.ResourcePods] = pods, pods
		if _, err := b.physKube.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil {
			return err
		}
	}
	policy := &kubeoceanv1alpha1.ResourceLeasingPolicy{ObjectMeta: metav1.ObjectMeta{Name: "bench"},
		Spec: kubeoceanv1alpha1.ResourceLeasingPolicySpec{Cluster: bindingName}}
	if _, err := kubeoceanclient.NewForConfigOrDie(b.physical.Config()).KubeoceanV1alpha1().ResourceLeasingPolicies().Create(ctx, policy, metav1.CreateOptions{}); err != nil {
		return err
	}
	if err := benchenv.Bind(ctx, b.virtual, b.physical, bindingName, clusterID, mount); err != nil {
		return err
	}
	addr, err := freeAddr()
	if err != nil {
		return err
	}
	b.metricsAddr = addr
	// The syncer runs with its shipped defaults but for the flags asked
	// for, which the results print; serving metrics and profiles changes
	// nothing it does.
	if b.cfg.qps > 0 {
		b.changedFlags = append(b.changedFlags, fmt.Sprintf("--physical-kube-api-qps=%v", b.cfg.qps))
	}
	if b.cfg.burst > 0 {
		b.changedFlags = append(b.changedFlags, fmt.Sprintf("--physical-kube-api-burst=%d", b.cfg.burst))
	}
	if b.cfg.podWorkers > 0 {
		b.changedFlags = append(b.changedFlags, fmt.Sprintf("--pod-workers=%d", b.cfg.podWorkers))
	}
	if b.cfg.syncerVerbosity > 0 {
		b.changedFlags = append(b.changedFlags, fmt.Sprintf("-v=%d", b.cfg.syncerVerbosity))
	}
	args := append([]string{"--metrics-bind-address=" + addr, "--health-probe-bind-address=0", "--profiling"}, b.changedFlags...)
	b.syncer, err = benchenv.StartSyncer(b.cfg.syncerBinary, b.virtual, bindingName, args...)
	if err != nil {
		return err
	}
	b.procs = benchenv.ClusterProcesses(b.syncer, b.virtual, b.physical)
	// Measured from schedulable nodes, once the virtual controller-manager
	// is done with them too (nodeWritesSettled).
	took, err := benchenv.WaitUntil(ctx, time.Now(), 10*time.Minute, "virtual nodes Ready and schedulable", func(ctx context.Context) (bool, string, error) {
		ready, schedulable, err := benchenv.CountNodes(ctx, b.virtualKube, kubeoceanv1alpha1.LabelClusterID+"="+clusterID)
		return schedulable == b.cfg.nodes, fmt.Sprintf("%d/%d Ready, %d schedulable", ready, b.cfg.nodes, schedulable), err
	})
	if err != nil {
		return err
	}
	benchenv.Logf("%d virtual nodes Ready and schedulable %v after the syncer started", b.cfg.nodes, took.Round(100*time.Millisecond))
	return b.nodeWritesSettled(ctx)
}

// nodeWritesSettled waits until no client has written a node (not its
// status) for settleFor: the virtual controller-manager labels and
// annotates every new node at its own pace (kwok's nodes lack the beta
// labels kubelets set), and those writes are not the syncer's to measure.
func (b *bench) nodeWritesSettled(ctx context.Context) error {
	const settleFor = 5 * time.Second
	isNodeWrite := func(r benchenv.APIRequest) bool {
		return r.Resource == "nodes" && (r.Verb == "PATCH" || r.Verb == "PUT")
	}
	last, since := -1.0, time.Now()
	took, err := benchenv.WaitUntil(ctx, time.Now(), 10*time.Minute, "node writes settled", func(ctx context.Context) (bool, string, error) {
		requests, err := benchenv.ScrapeAPIServer(ctx, b.virtual)
		if err != nil {
			return false, "", err
		}
		if writes := requests.Total(isNodeWrite); writes != last {
			last, since = writes, time.Now()
		}
		return time.Since(since) >= settleFor, fmt.Sprintf("%.0f node writes so far", last), nil
	})
	if err == nil {
		benchenv.Logf("no node written for %v, %v later (%.0f node writes at the virtual apiserver)", settleFor, took.Round(100*time.Millisecond), last)
	}
	return err
}

// sharedObjects creates the ConfigMap and Secret every pod uses.
func sharedObjects(ctx context.Context, kube kubernetes.Interface, namespace string) error {
	if _, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}, metav1.CreateOptions{}); err != nil {
		return err
	}
	if _, err := kube.CoreV1().ConfigMaps(namespace).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "shared"},
		Data: map[string]string{"mode": "bench"}}, metav1.CreateOptions{}); err != nil {
		return err
	}
	_, err := kube.CoreV1().Secrets(namespace).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "shared"},
		StringData: map[string]string{"token": "t"}}, metav1.CreateOptions{})
	return err
}

// benchPod is a pod using the shared ConfigMap and Secret, bound to node.
// With tokens the virtual cluster's ServiceAccount admission gives it the
// usual projected service-account token volume, as nearly every real pod
// has; without, it opts out.
func benchPod(namespace, name, node string, tokens bool) *corev1.Pod {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, Labels: map[string]string{"app": "bench"}},
		Spec: corev1.PodSpec{
			NodeName:    node,
			Tolerations: []corev1.Toleration{{Operator: corev1.TolerationOpExists}},
			Containers: []corev1.Container{{Name: "app", Image: "registry.k8s.io/pause:3.10",
				EnvFrom: []corev1.EnvFromSource{
					{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "shared"}}},
					{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "shared"}}},
				}}},
		},
	}
	if !tokens {
		pod.Spec.AutomountServiceAccountToken = ptr.To(false)
	}
	return pod
}

// floorPod is benchPod as a plain client would run it in the physical
// cluster with a token of the virtual cluster: the token, CA and namespace
// mounted from a Secret of its own, as the syncer's physical pods do.
func floorPod(name, node string, tokens bool) *corev1.Pod {
	pod := benchPod(floorNS, name, node, false)
	if !tokens {
		return pod
	}
	pod.Spec.Volumes = []corev1.Volume{{Name: "kube-api-access", VolumeSource: corev1.VolumeSource{
		Secret: &corev1.SecretVolumeSource{SecretName: name + "-token"}}}}
	pod.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "kube-api-access", ReadOnly: true,
		MountPath: "/var/run/secrets/kubernetes.io/serviceaccount"}}
	return pod
}

// floor does, with a plain client and the syncer's client settings, the
// requests of the syncer's ideal path for each pod: with tokens a
// TokenRequest in the virtual cluster and the token Secret in the physical
// one, then the physical pod. It times until the pods exist and until kwok
// has them Running.
func (b *bench) floor(ctx context.Context) (exist, running time.Duration, w window, err error) {
	if err := sharedObjects(ctx, b.physKube, floorNS); err != nil {
		return 0, 0, w, err
	}
	var caCert string
	if b.cfg.tokens {
		rootCA, err := b.virtualKube.CoreV1().ConfigMaps("default").Get(ctx, "kube-root-ca.crt", metav1.GetOptions{})
		if err != nil {
			return 0, 0, w, fmt.Errorf("reading the virtual cluster's CA: %w", err)
		}
		caCert = rootCA.Data["ca.crt"]
	}
	runningPods, err := benchenv.CountPods(ctx, b.physKube, floorNS, "", isRunning)
	if err != nil {
		return 0, 0, w, err
	}
	defer runningPods.Stop()
	benchenv.Logf("floor: a plain client creates %d pods in the physical cluster (tokens: %v)", b.cfg.pods, b.cfg.tokens)
	before, err := b.snapshot(ctx)
	if err != nil {
		return 0, 0, w, err
	}
	start := time.Now()
	err = benchenv.ForEach(b.cfg.pods, func(i int) error {
		name := fmt.Sprintf("pod-%04d", i)
		if b.cfg.tokens {
			if err := b.floorToken(ctx, name, caCert); err != nil {
				return err
			}
		}
		_, err := b.physKube.CoreV1().Pods(floorNS).Create(ctx, floorPod(name, nodeName(i%b.cfg.nodes), b.cfg.tokens), metav1.CreateOptions{})
		return err
	})
	if err != nil {
		return 0, 0, w, err
	}
	exist = time.Since(start)
	running, err = runningPods.WaitFor(ctx, start, 10*time.Minute, b.cfg.pods, "floor pods Running")
	if err != nil {
		return 0, 0, w, err
	}
	if w, err = b.since(ctx, before); err != nil {
		return 0, 0, w, err
	}
	return exist, running, w, b.clear(ctx, floorNS)
}

// plainFloor is the rate a plain client reaches with no work but the
// pods: an unthrottled client creates the burst's pods straight into the
// physical cluster, without token or Secret, timed until kwok has them
// Running. The syncer's Running rate is stated against it.
func (b *bench) plainFloor(ctx context.Context) (p plain, err error) {
	cfg := b.physical.Config()
	cfg.QPS = -1 // no client-side rate limit
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return p, err
	}
	if _, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: plainNS}}, metav1.CreateOptions{}); err != nil {
		return p, err
	}
	runningPods, err := benchenv.CountPods(ctx, kube, plainNS, "", isRunning)
	if err != nil {
		return p, err
	}
	defer runningPods.Stop()
	benchenv.Logf("plain floor: an unthrottled client creates %d pods in the physical cluster", b.cfg.pods)
	before, err := b.snapshot(ctx)
	if err != nil {
		return p, err
	}
	start := time.Now()
	err = benchenv.ForEach(b.cfg.pods, func(i int) error {
		pod := benchPod(plainNS, fmt.Sprintf("pod-%04d", i), nodeName(i%b.cfg.nodes), false)
		_, err := kube.CoreV1().Pods(plainNS).Create(ctx, pod, metav1.CreateOptions{})
		return err
	})
	if err != nil {
		return p, err
	}
	if p.running, err = runningPods.WaitFor(ctx, start, 10*time.Minute, b.cfg.pods, "plain floor pods Running"); err != nil {
		return p, err
	}
	if p.window, err = b.since(ctx, before); err != nil {
		return p, err
	}
	return p, b.clear(ctx, plainNS)
}

// plain is the plain floor's figures.
type plain struct {
	running time.Duration
	window  window
}

// clear deletes a floor's pods (those of namespace) and waits until they
// are gone, so that the syncer's phase starts from the physical cluster
// the floor started from. Left in place, they doubled the pods on kwok's nodes for
// the syncer's phase only: at 10,000 pods kwok then used 4.7–6.0 ms of CPU
// per pod (1.2–1.4 in the floor), reported pods Running 10–24 s late (p50)
// and replayed its ready stage for a quarter of them (HTTP 422); with them
// deleted, 2.0 ms, 0.5 s and almost no replays.
func (b *bench) clear(ctx context.Context, namespace string) error {
	benchenv.Logf("%s: deleting its %d pods", namespace, b.cfg.pods)
	pods := b.physKube.CoreV1().Pods(namespace)
	// The apiserver stops a collection's deletion at the request timeout
	// (at 10,000 pods it had deleted four in five), answering with a
	// timeout or resetting the stream: what is left is deleted again, once
	// per deleteAgain, until the wait gives up.
	const deleteAgain = 20 * time.Second
	var deleted time.Time
	_, err := benchenv.WaitUntil(ctx, time.Now(), 10*time.Minute, namespace+" pods gone", func(ctx context.Context) (bool, string, error) {
		left, err := pods.List(ctx, metav1.ListOptions{Limit: 1})
		if err != nil || len(left.Items) == 0 {
			return err == nil, "", err
		}
		if time.Since(deleted) >= deleteAgain {
			deleted = time.Now()
			err := pods.DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}, metav1.ListOptions{})
			if ctx.Err() != nil {
				return false, "", ctx.Err()
			}
			if err != nil {
				benchenv.Logf("%s: deleting its pods: %v; again in %v", namespace, err, deleteAgain)
			}
		}
		return false, "some left", nil
	})
	if err != nil {
		return err
	}
	// The lent nodes' capacity grows back; the syncer writes it within its
	// node status interval (1 s), before the syncer's phase is measured.
	time.Sleep(5 * time.Second)
	return nil
}

// floorToken requests a token of the virtual cluster and stores it in the
// pod's token Secret in the physical cluster.
func (b *bench) floorToken(ctx context.Context, pod, caCert string) error {
	issued, err := b.virtualKube.CoreV1().ServiceAccounts("default").CreateToken(ctx, "default", &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3607)}}, metav1.CreateOptions{})
	if err != nil {
		return err
	}
	_, err = b.physKube.CoreV1().Secrets(floorNS).Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: pod + "-token"},
		Data:       map[string][]byte{"token": []byte(issued.Status.Token), "ca.crt": []byte(caCert), "namespace": []byte("default")},
	}, metav1.CreateOptions{})
	return err
}

func isRunning(pod *corev1.Pod) bool { return pod.Status.Phase == corev1.PodRunning }

// burst is the throughput phase's figures.
type burst struct {
	exist, running            time.Duration
	createLatency, runLatency latency
	// created is when each pod's create returned, from the burst's start,
	// in order.
	created []time.Duration
	// kubeletLatency is kwok's part: physical pod seen → physical Running.
	// While it is short, a new pod's UID and first status go to the
	// virtual pod in one write.
	kubeletLatency latency
	window         window
	// rssBefore and rssAfter are the syncer's RSS (MiB) before the burst
	// and once all its pods run.
	rssBefore, rssAfter float64
	// memBefore and memAfter break the RSS down (the runtime's share and
	// the binary's pages), read right after it.
	memBefore, memAfter benchenv.Memory
	// heapBefore and heapAfter are its live heap right after a
	// collection, read after the RSS.
	heapBefore, heapAfter benchenv.Heap
}

// throughput creates the virtual pods bound to the virtual nodes and times
// until the physical pods exist and until the virtual pods are Running,
// with each pod's latencies and what every process did meanwhile.
func (b *bench) throughput(ctx context.Context) (r burst, err error) {
	if err := sharedObjects(ctx, b.virtualKube, virtualNS); err != nil {
		return r, err
	}
	// Pods are admitted only once the controller-manager made the
	// namespace's default ServiceAccount (and published the CA there).
	if _, err := benchenv.WaitUntil(ctx, time.Now(), time.Minute, "the default ServiceAccount and kube-root-ca.crt", func(ctx context.Context) (bool, string, error) {
		_, err := b.virtualKube.CoreV1().ServiceAccounts(virtualNS).Get(ctx, "default", metav1.GetOptions{})
		if err == nil {
			_, err = b.virtualKube.CoreV1().ConfigMaps(virtualNS).Get(ctx, "kube-root-ca.crt", metav1.GetOptions{})
		}
		return err == nil, "", nil
	}); err != nil {
		return r, err
	}
	tl, err := follow(ctx, b.virtualKube, b.physKube, "bench")
	if err != nil {
		return r, err
	}
	defer tl.stop()
	if r.rssBefore, err = b.syncer.RSS(); err != nil {
		return r, err
	}
	if r.memBefore, err = benchenv.ScrapeMemory(b.metricsAddr); err != nil {
		return r, err
	}
	if r.memBefore.Binary, err = b.syncer.FileRSS(); err != nil {
		return r, err
	}
	if r.heapBefore, err = benchenv.LiveHeap(b.metricsAddr); err != nil {
		return r, err
	}
	if err := b.heapProfile(ctx, b.cfg.profileDir, "syncer-before.heap"); err != nil {
		return r, err
	}
	benchenv.Logf("syncer: creating %d virtual pods bound to virtual nodes (tokens: %v)", b.cfg.pods, b.cfg.tokens)
	before, err := b.snapshot(ctx)
	if err != nil {
		return r, err
	}
	waitProfiles := b.profiles(ctx, b.cfg.profileDir, b.cfg.profileTime)
	start := time.Now()
	err = benchenv.ForEach(b.cfg.pods, func(i int) error {
		name := fmt.Sprintf("pod-%04d", i)
		node := kubeoceanv1alpha1.VirtualNodeName(clusterID, nodeName(i%b.cfg.nodes))
		if _, err := b.virtualKube.CoreV1().Pods(virtualNS).Create(ctx, benchPod(virtualNS, name, node, b.cfg.tokens), metav1.CreateOptions{}); err != nil {
			return err
		}
		tl.mark(tl.created, name)
		return nil
	})
	if err != nil {
		return r, err
	}
	if r.exist, err = tl.waitFor(ctx, start, 10*time.Minute, tl.physicalSeen, b.cfg.pods, "physical pods exist"); err != nil {
		return r, err
	}
	if r.running, err = tl.waitFor(ctx, start, 10*time.Minute, tl.virtualRun, b.cfg.pods, "virtual pods Running"); err != nil {
		return r, err
	}
	if r.window, err = b.since(ctx, before); err != nil {
		return r, err
	}
	r.createLatency = tl.latencies(tl.created, tl.physicalSeen)
	r.runLatency = tl.latencies(tl.physicalRun, tl.virtualRun)
	r.kubeletLatency = tl.latencies(tl.physicalSeen, tl.physicalRun)
	r.created = tl.since(tl.created, start)
	waitProfiles()
	if r.rssAfter, err = b.syncer.RSS(); err != nil {
		return r, err
	}
	if r.memAfter, err = benchenv.ScrapeMemory(b.metricsAddr); err != nil {
		return r, err
	}
	if r.memAfter.Binary, err = b.syncer.FileRSS(); err != nil {
		return r, err
	}
	if r.heapAfter, err = benchenv.LiveHeap(b.metricsAddr); err != nil {
		return r, err
	}
	r.heapBefore, r.heapAfter = r.heapBefore.MiB(), r.heapAfter.MiB()
	return r, b.heapProfile(ctx, b.cfg.profileDir, "syncer.heap")
}

func freeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}
