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
	"strings"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
	"github.com/kubeocean/kubeocean/test/stack"
)

// metricsNode is the physical node whose kubelet (kwok) serves
// /metrics/resource: kwok serves it for one node only
// (test/kwokkubelet), so the demo shows the usage of that node's virtual
// node.
const metricsNode = "worker-a"

// showNodeUsage prints the resource metrics of metricsNode's virtual node,
// as kubectl top and metrics-server read them: the virtual apiserver asks
// the virtual node's kubelet API, which the syncer serves from the
// physical node's through the physical apiserver, the physical pods'
// series renamed to their virtual pods and everyone else's left out.
// stats/summary, which kwok does not serve, answers a 404 that says so.
func (d *demo) showNodeUsage(ctx context.Context) error {
	vnode := kubeoceanv1alpha1.VirtualNodeName(stack.ClusterID, metricsNode)
	path := "/api/v1/nodes/" + vnode + "/proxy/metrics/resource"
	out, err := d.stack.Virtual.Kubectl(ctx, "get", "--raw", path)
	if err != nil {
		return err
	}
	fmt.Printf("\nNode usage through the virtual cluster (what metrics-server and kubectl top read; kwok serves usage\nfor %s only):\n$ kubectl get --raw %s\n", metricsNode, path)
	shown := 0
	for line := range strings.SplitSeq(out, "\n") {
		if line == "" || strings.HasPrefix(line, "#") || shown >= 8 {
			continue
		}
		fmt.Println(line)
		shown++
	}
	summary := "/api/v1/nodes/" + vnode + "/proxy/stats/summary"
	_, err = d.stack.Virtual.Kubectl(ctx, "get", "--raw", summary)
	fmt.Printf("$ kubectl get --raw %s\n%v\n", summary, err)
	return nil
}
