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
	"os/exec"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
	kubeoceanclient "github.com/kubeocean/kubeocean/generated/clientset/versioned"
	"github.com/kubeocean/kubeocean/test/bench/benchenv"
	"github.com/kubeocean/kubeocean/test/controlplane"
	"github.com/kubeocean/kubeocean/test/kwokkubelet"
	"github.com/kubeocean/kubeocean/test/testenv"
)

const (
	bindingName  = "bench"
	clusterID    = "bench"
	mount        = "bench-mount"
	physNode     = "bench-node"
	appNamespace = "bench"
	podName      = "app"
	container    = "app"
)

type bench struct {
	cfg               config
	virtual, physical *controlplane.Cluster
	kwok              *kwokkubelet.Server
	// virtualConfig and physicalConfig are admin configs without client
	// rate limits: the streams, not the limiter, are measured.
	virtualConfig, physicalConfig *rest.Config
	virtualKube, physKube         kubernetes.Interface
	syncer                        *benchenv.Syncer
	metricsAddr                   string
	// physicalPod is the name of podName's twin in mount.
	physicalPod string
}

func newBench(cfg config, virtual, physical *controlplane.Cluster, kwok *kwokkubelet.Server) *bench {
	vc, pc := virtual.Config(), physical.Config()
	vc.QPS, vc.Burst, pc.QPS, pc.Burst = -1, 0, -1, 0
	return &bench{
		cfg: cfg, virtual: virtual, physical: physical, kwok: kwok, virtualConfig: vc, physicalConfig: pc,
		virtualKube: kubernetes.NewForConfigOrDie(vc), physKube: kubernetes.NewForConfigOrDie(pc),
	}
}

// setUp binds the physical cluster, runs kubeocean-syncer with the kubelet
// API, lends it one kwok node and runs one pod on the virtual node.
func (b *bench) setUp(ctx context.Context) error {
	if err := benchenv.Bind(ctx, b.virtual, b.physical, bindingName, clusterID, mount); err != nil {
		return err
	}
	var err error
	if b.metricsAddr, err = controlplane.FreeLoopbackAddress(); err != nil {
		return err
	}
	first, err := kwokkubelet.FreePortRange(10)
	if err != nil {
		return err
	}
	b.syncer, err = benchenv.StartSyncer(b.cfg.syncerBinary, b.virtual, bindingName,
		"--metrics-bind-address="+b.metricsAddr, "--health-probe-bind-address=0",
		"--kubelet-address="+kwokkubelet.Address(), fmt.Sprintf("--kubelet-port-range=%d-%d", first, first+9))
	if err != nil {
		return err
	}
	benchenv.Logf("lending one kwok node")
	if _, err := b.physKube.CoreV1().Nodes().Create(ctx, testenv.KwokNode(physNode, "64", "256Gi", nil), metav1.CreateOptions{}); err != nil {
		return err
	}
	policy := &kubeoceanv1alpha1.ResourceLeasingPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: bindingName},
		Spec:       kubeoceanv1alpha1.ResourceLeasingPolicySpec{Cluster: bindingName},
	}
	if _, err := kubeoceanclient.NewForConfigOrDie(b.physicalConfig).KubeoceanV1alpha1().ResourceLeasingPolicies().Create(ctx, policy, metav1.CreateOptions{}); err != nil {
		return err
	}
	vnode := "vnode-" + clusterID + "-" + physNode
	if _, err := benchenv.WaitUntil(ctx, time.Now(), 3*time.Minute, "the virtual node serves Kubeocean's kubelet API", func(ctx context.Context) (bool, string, error) {
		n, err := b.virtualKube.CoreV1().Nodes().Get(ctx, vnode, metav1.GetOptions{})
		if err != nil {
			return false, err.Error(), nil
		}
		return n.Annotations[kubeoceanv1alpha1.AnnotationKubeletPort] != "", fmt.Sprintf("annotations %v", n.Annotations), nil
	}); err != nil {
		return err
	}

	benchenv.Logf("running pod %s/%s on %s", appNamespace, podName, vnode)
	if _, err := b.virtualKube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: appNamespace}}, metav1.CreateOptions{}); err != nil {
		return err
	}
	if _, err := benchenv.WaitUntil(ctx, time.Now(), time.Minute, "the default ServiceAccount", func(ctx context.Context) (bool, string, error) {
		_, err := b.virtualKube.CoreV1().ServiceAccounts(appNamespace).Get(ctx, "default", metav1.GetOptions{})
		return err == nil, fmt.Sprint(err), nil
	}); err != nil {
		return err
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: podName},
		Spec: corev1.PodSpec{
			NodeName:    vnode,
			Tolerations: []corev1.Toleration{{Operator: corev1.TolerationOpExists}},
			Containers:  []corev1.Container{{Name: container, Image: "registry.k8s.io/pause:3.10"}},
		},
	}
	if _, err := b.virtualKube.CoreV1().Pods(appNamespace).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		return err
	}
	_, err = benchenv.WaitUntil(ctx, time.Now(), 2*time.Minute, "the pod runs", func(ctx context.Context) (bool, string, error) {
		p, err := b.virtualKube.CoreV1().Pods(appNamespace).Get(ctx, podName, metav1.GetOptions{})
		if err != nil {
			return false, err.Error(), nil
		}
		b.physicalPod = p.Annotations[kubeoceanv1alpha1.AnnotationPhysicalPodName]
		return p.Status.Phase == corev1.PodRunning && b.physicalPod != "", string(p.Status.Phase), nil
	})
	return err
}

// kubectl runs kubectl with a kubeconfig and returns how long it took and
// how many bytes it printed.
func kubectl(ctx context.Context, kubeconfig string, args ...string) (time.Duration, int, error) {
	path, err := controlplane.KubectlPath()
	if err != nil {
		return 0, 0, err
	}
	start := time.Now()
	out, err := exec.CommandContext(ctx, path, append([]string{"--kubeconfig=" + kubeconfig}, args...)...).Output()
	if err != nil {
		return 0, 0, fmt.Errorf("kubectl %s: %w", strings.Join(args, " "), err)
	}
	return time.Since(start), len(out), nil
}

// logRound is one kubectl logs read each way.
type logRound struct {
	bytes           int
	direct, virtual time.Duration
}

// logThroughput reads a cfg.logMB container log with kubectl logs,
// straight from the physical cluster and through the virtual cluster, in
// alternating order.
func (b *bench) logThroughput(ctx context.Context) ([]logRound, error) {
	line := strings.Repeat("x", 200)
	lines := make([]string, b.cfg.logMB*1_000_000/(len(line)+31))
	for i := range lines {
		lines[i] = line
	}
	if err := b.kwok.WriteLog(lines); err != nil {
		return nil, err
	}
	defer func() { _ = b.kwok.WriteLog(kwokkubelet.LogLines) }()
	var rounds []logRound
	for i := range b.cfg.logRounds {
		benchenv.Logf("log throughput: round %d of %d", i+1, b.cfg.logRounds)
		var r logRound
		var n1, n2 int
		var err error
		if r.direct, n1, err = kubectl(ctx, b.physical.KubeconfigPath, "logs", "-n", mount, b.physicalPod, "-c", container); err != nil {
			return nil, err
		}
		if r.virtual, n2, err = kubectl(ctx, b.virtual.KubeconfigPath, "logs", "-n", appNamespace, podName, "-c", container); err != nil {
			return nil, err
		}
		if n1 != n2 {
			return nil, fmt.Errorf("read %d bytes straight, %d through the virtual cluster", n1, n2)
		}
		r.bytes = n1
		rounds = append(rounds, r)
	}
	return rounds, nil
}

// metricValue sums the samples of metric name in Prometheus text whose
// labels contain every one of labels (e.g. `operation="logs"`).
func metricValue(text, name string, labels ...string) float64 {
	total := 0.0
	for _, line := range strings.Split(text, "\n") {
		if !strings.HasPrefix(line, name+"{") && !strings.HasPrefix(line, name+" ") {
			continue
		}
		matches := true
		for _, l := range labels {
			matches = matches && strings.Contains(line, l)
		}
		if !matches {
			continue
		}
		fields := strings.Fields(line)
		if v, err := strconv.ParseFloat(fields[len(fields)-1], 64); err == nil {
			total += v
		}
	}
	return total
}
