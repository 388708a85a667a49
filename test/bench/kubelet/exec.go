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
	"bytes"
	"context"
	"fmt"
	"io"
	"net/url"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/remotecommand"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
	"github.com/kubeocean/kubeocean/test/bench/benchenv"
)

// execWarmUp round trips each way are not counted: they fill the
// connection pools and the syncer's authorization cache.
const execWarmUp = 10

// execTimes are the exec round trips of one run, each path in turn.
type execTimes struct {
	// virtual: through the virtual apiserver and Kubeocean's kubelet API;
	// syncer: straight to Kubeocean's kubelet API, as the virtual
	// apiserver calls it (its kubelet client certificate), so the
	// overhead splits into the virtual apiserver's hop and the syncer's;
	// direct: straight in the physical pod, the floor.
	virtual, syncer, direct []time.Duration
}

// execRoundTrips runs `echo ok` cfg.execs times each way, in turn: in the
// virtual pod through the virtual apiserver, in the virtual pod straight
// through Kubeocean's kubelet API, and straight in the physical pod. Each
// is a whole session as kubectl exec opens one (SPDY upgrade, streams,
// exit status).
func (b *bench) execRoundTrips(ctx context.Context) (execTimes, error) {
	benchenv.Logf("exec round trips: %d each way", b.cfg.execs)
	var times execTimes
	kubeletConfig, kubeletURL, err := b.syncerExecEndpoint(ctx)
	if err != nil {
		return times, err
	}
	for i := range execWarmUp + b.cfg.execs {
		v, err := execOnce(ctx, b.virtualConfig, podExecURL(b.virtualKube, appNamespace, podName))
		if err != nil {
			return times, fmt.Errorf("through the virtual cluster: %w", err)
		}
		s, err := execOnce(ctx, kubeletConfig, kubeletURL)
		if err != nil {
			return times, fmt.Errorf("straight to the syncer: %w", err)
		}
		d, err := execOnce(ctx, b.physicalConfig, podExecURL(b.physKube, mount, b.physicalPod))
		if err != nil {
			return times, fmt.Errorf("straight: %w", err)
		}
		if i >= execWarmUp {
			times.virtual, times.syncer, times.direct = append(times.virtual, v), append(times.syncer, s), append(times.direct, d)
		}
	}
	return times, nil
}

// syncerExecEndpoint is the kubelet API exec URL of the virtual pod on its
// virtual node's advertised endpoint, and a config that presents the
// virtual apiserver's kubelet client certificate.
func (b *bench) syncerExecEndpoint(ctx context.Context) (*rest.Config, *url.URL, error) {
	node, err := b.virtualKube.CoreV1().Nodes().Get(ctx, "vnode-"+clusterID+"-"+physNode, metav1.GetOptions{})
	if err != nil {
		return nil, nil, err
	}
	port := node.Annotations[kubeoceanv1alpha1.AnnotationKubeletPort]
	if len(node.Status.Addresses) == 0 || port == "" {
		return nil, nil, fmt.Errorf("node %s advertises no kubelet endpoint", node.Name)
	}
	certFile, keyFile := b.virtual.KubeletClientCertificate()
	config := &rest.Config{
		Host: "https://" + node.Status.Addresses[0].Address + ":" + port,
		// The syncer's certificate is self-signed here, as the virtual
		// apiserver (no --kubelet-certificate-authority) accepts it.
		TLSClientConfig: rest.TLSClientConfig{CertFile: certFile, KeyFile: keyFile, Insecure: true},
		QPS:             -1,
	}
	u, err := url.Parse(config.Host + fmt.Sprintf("/exec/%s/%s/%s?command=echo&command=ok&output=1&error=1", appNamespace, podName, container))
	return config, u, err
}

func podExecURL(kube kubernetes.Interface, namespace, pod string) *url.URL {
	return kube.CoreV1().RESTClient().Post().Resource("pods").Namespace(namespace).Name(pod).SubResource("exec").
		VersionedParams(&corev1.PodExecOptions{Container: container, Command: []string{"echo", "ok"}, Stdout: true, Stderr: true}, scheme.ParameterCodec).URL()
}

func execOnce(ctx context.Context, config *rest.Config, url *url.URL) (time.Duration, error) {
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
