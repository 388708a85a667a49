package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
	kubeoceanclient "github.com/kubeocean/kubeocean/generated/clientset/versioned"
	"github.com/kubeocean/kubeocean/pkg/naming"
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
)

type bench struct {
	cfg                   config
	virtual, physical     *controlplane.Cluster
	virtualKube, physKube kubernetes.Interface
	syncer                *benchenv.Syncer
	metricsAddr           string
}

func newBench(cfg config, virtual, physical *controlplane.Cluster) *bench {
	vc, pc := virtual.Config(), physical.Config()
	// The generator of virtual pods must not be the bottleneck; the
	// physical client is the floor and gets the syncer's settings.
	vc.QPS, vc.Burst = 1000, 2000
	pc.QPS, pc.Burst = cfg.qps, cfg.burst
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
	qps, burst := fmt.Sprint(b.cfg.qps), fmt.Sprint(b.cfg.burst)
	args := []string{"--physical-kube-api-qps=" + qps, "--physical-kube-api-burst=" + burst,
		"--kube-api-qps=1000", "--kube-api-burst=2000",
		"--metrics-bind-address=" + addr, "--health-probe-bind-address=0", "--profiling"}
	if b.cfg.podWorkers > 0 {
		args = append(args, fmt.Sprintf("--pod-workers=%d", b.cfg.podWorkers))
	}
	b.syncer, err = benchenv.StartSyncer(b.cfg.syncerBinary, b.virtual, bindingName, args...)
	if err != nil {
		return err
	}
	_, err = benchenv.WaitUntil(ctx, time.Now(), 2*time.Minute, "virtual nodes Ready", func(ctx context.Context) (bool, string, error) {
		ready, err := benchenv.CountReady(ctx, b.virtualKube, kubeoceanv1alpha1.LabelClusterID+"="+clusterID)
		return ready == b.cfg.nodes, fmt.Sprintf("%d/%d", ready, b.cfg.nodes), err
	})
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
func benchPod(namespace, name, node string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, Labels: map[string]string{"app": "bench"}},
		Spec: corev1.PodSpec{
			NodeName:                     node,
			AutomountServiceAccountToken: ptr.To(false),
			Tolerations:                  []corev1.Toleration{{Operator: corev1.TolerationOpExists}},
			Containers: []corev1.Container{{Name: "app", Image: "registry.k8s.io/pause:3.10",
				EnvFrom: []corev1.EnvFromSource{
					{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "shared"}}},
					{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "shared"}}},
				}}},
		},
	}
}

// floor creates the pods straight into the physical cluster and times
// until they exist and until kwok has them Running.
func (b *bench) floor(ctx context.Context) (exist, running time.Duration, err error) {
	if err := sharedObjects(ctx, b.physKube, floorNS); err != nil {
		return 0, 0, err
	}
	runningPods, err := benchenv.CountPods(ctx, b.physKube, floorNS, "", isRunning)
	if err != nil {
		return 0, 0, err
	}
	defer runningPods.Stop()
	benchenv.Logf("floor: a plain client creates %d pods in the physical cluster", b.cfg.pods)
	start := time.Now()
	err = benchenv.ForEach(b.cfg.pods, func(i int) error {
		_, err := b.physKube.CoreV1().Pods(floorNS).Create(ctx, benchPod(floorNS, fmt.Sprintf("pod-%04d", i), nodeName(i%b.cfg.nodes)), metav1.CreateOptions{})
		return err
	})
	if err != nil {
		return 0, 0, err
	}
	exist = time.Since(start)
	running, err = runningPods.WaitFor(ctx, start, 10*time.Minute, b.cfg.pods, "floor pods Running")
	if err != nil {
		return 0, 0, err
	}
	benchenv.Logf("floor: removing its pods")
	err = b.physKube.CoreV1().Pods(floorNS).DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}, metav1.ListOptions{})
	return exist, running, err
}

func isRunning(pod *corev1.Pod) bool { return pod.Status.Phase == corev1.PodRunning }

// throughput creates the virtual pods bound to the virtual nodes and times
// until the physical pods exist and until the virtual pods are Running;
// it also returns the syncer's writes over the phase.
func (b *bench) throughput(ctx context.Context) (exist, running time.Duration, writes map[string]float64, err error) {
	if err := sharedObjects(ctx, b.virtualKube, virtualNS); err != nil {
		return 0, 0, nil, err
	}
	// Pods are admitted only once the controller-manager made the
	// namespace's default ServiceAccount.
	if _, err := benchenv.WaitUntil(ctx, time.Now(), time.Minute, "the default ServiceAccount", func(ctx context.Context) (bool, string, error) {
		_, err := b.virtualKube.CoreV1().ServiceAccounts(virtualNS).Get(ctx, "default", metav1.GetOptions{})
		return err == nil, "", nil
	}); err != nil {
		return 0, 0, nil, err
	}
	before, err := b.scrape()
	if err != nil {
		return 0, 0, nil, err
	}
	managed := kubeoceanv1alpha1.LabelManagedBy + "=" + kubeoceanv1alpha1.ManagedByKubeocean
	physicalPods, err := benchenv.CountPods(ctx, b.physKube, mount, managed, func(*corev1.Pod) bool { return true })
	if err != nil {
		return 0, 0, nil, err
	}
	defer physicalPods.Stop()
	runningPods, err := benchenv.CountPods(ctx, b.virtualKube, virtualNS, "", isRunning)
	if err != nil {
		return 0, 0, nil, err
	}
	defer runningPods.Stop()
	benchenv.Logf("syncer: creating %d virtual pods bound to virtual nodes", b.cfg.pods)
	if path := os.Getenv("KUBEOCEAN_BENCH_CPU_PROFILE"); path != "" {
		go b.profile(path, 10*time.Second)
	}
	start := time.Now()
	err = benchenv.ForEach(b.cfg.pods, func(i int) error {
		node := naming.VirtualNodeName(clusterID, nodeName(i%b.cfg.nodes))
		_, err := b.virtualKube.CoreV1().Pods(virtualNS).Create(ctx, benchPod(virtualNS, fmt.Sprintf("pod-%04d", i), node), metav1.CreateOptions{})
		return err
	})
	if err != nil {
		return 0, 0, nil, err
	}
	if exist, err = physicalPods.WaitFor(ctx, start, 10*time.Minute, b.cfg.pods, "physical pods exist"); err != nil {
		return 0, 0, nil, err
	}
	if running, err = runningPods.WaitFor(ctx, start, 10*time.Minute, b.cfg.pods, "virtual pods Running"); err != nil {
		return 0, 0, nil, err
	}
	after, err := b.scrape()
	return exist, running, benchenv.DiffRequests(before, after), err
}

// scrape reads the syncer's kubeocean_client_requests_total by
// "cluster verb resource".
func (b *bench) scrape() (map[string]float64, error) { return benchenv.ScrapeRequests(b.metricsAddr) }

// profile saves a CPU profile of the syncer taken over d.
func (b *bench) profile(path string, d time.Duration) {
	resp, err := http.Get(fmt.Sprintf("http://%s/debug/pprof/profile?seconds=%d", b.metricsAddr, int(d.Seconds())))
	if err != nil {
		benchenv.Logf("profile: %v", err)
		return
	}
	defer resp.Body.Close()
	f, err := os.Create(path)
	if err != nil {
		benchenv.Logf("profile: %v", err)
		return
	}
	defer f.Close()
	_, _ = io.Copy(f, resp.Body)
}

func freeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}
