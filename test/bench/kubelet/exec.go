package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/remotecommand"

	"github.com/kubeocean/kubeocean/test/bench/benchenv"
)

// execWarmUp round trips each way are not counted: they fill the
// connection pools and the syncer's authorization cache.
const execWarmUp = 10

// execRoundTrips runs `echo ok` cfg.execs times each way, alternating: in
// the virtual pod through the virtual apiserver and Kubeocean's kubelet API,
// and straight in the physical pod. Each is a whole session as kubectl
// exec opens one (SPDY upgrade, streams, exit status).
func (b *bench) execRoundTrips(ctx context.Context) (virtual, direct []time.Duration, err error) {
	benchenv.Logf("exec round trips: %d each way", b.cfg.execs)
	for i := range execWarmUp + b.cfg.execs {
		v, err := execOnce(ctx, b.virtualConfig, b.virtualKube, appNamespace, podName)
		if err != nil {
			return nil, nil, fmt.Errorf("through the virtual cluster: %w", err)
		}
		d, err := execOnce(ctx, b.physicalConfig, b.physKube, mount, b.physicalPod)
		if err != nil {
			return nil, nil, fmt.Errorf("straight: %w", err)
		}
		if i >= execWarmUp {
			virtual, direct = append(virtual, v), append(direct, d)
		}
	}
	return virtual, direct, nil
}

func execOnce(ctx context.Context, config *rest.Config, kube kubernetes.Interface, namespace, pod string) (time.Duration, error) {
	url := kube.CoreV1().RESTClient().Post().Resource("pods").Namespace(namespace).Name(pod).SubResource("exec").
		VersionedParams(&corev1.PodExecOptions{Container: container, Command: []string{"echo", "ok"}, Stdout: true, Stderr: true}, scheme.ParameterCodec).URL()
	start := time.Now()
	executor, err := remotecommand.NewSPDYExecutor(config, "POST", url)
	if err != nil {
		return 0, err
	}
	var out bytes.Buffer
	if err := executor.StreamWithContext(ctx, remotecommand.StreamOptions{Stdout: &out, Stderr: io.Discard}); err != nil {
		return 0, err
	}
	elapsed := time.Since(start)
	if out.String() != "ok\n" {
		return 0, fmt.Errorf("exec printed %q", out.String())
	}
	return elapsed, nil
}
