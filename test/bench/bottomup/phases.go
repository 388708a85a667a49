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
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
	"github.com/kubeocean/kubeocean/test/bench/benchenv"
	"github.com/kubeocean/kubeocean/test/testenv"
)

const nodeCPU = "8"

func physicalNodeName(i int) string { return fmt.Sprintf("bench-node-%04d", i) }

// lendNodes creates the physical nodes, waits until kwok has them Ready,
// then creates the policy that lends them and times the syncer until every
// virtual node is Ready, and until every one is also schedulable.
func (b *bench) lendNodes(ctx context.Context) (ready, schedulable time.Duration, err error) {
	n := b.cfg.nodes
	benchenv.Logf("creating %d kwok nodes in the physical cluster", n)
	err = benchenv.ForEach(n, func(i int) error {
		_, err := b.physKube.CoreV1().Nodes().Create(ctx, testenv.KwokNode(physicalNodeName(i), nodeCPU, "32Gi", map[string]string{"suite": "bench"}), metav1.CreateOptions{})
		return err
	})
	if err != nil {
		return 0, 0, err
	}
	if _, err := benchenv.WaitUntil(ctx, time.Now(), 10*time.Minute, "kwok makes the physical nodes Ready", func(ctx context.Context) (bool, string, error) {
		ready, err := benchenv.CountReady(ctx, b.physKube, "suite=bench")
		return ready == n, fmt.Sprintf("%d/%d Ready", ready, n), err
	}); err != nil {
		return 0, 0, err
	}

	benchenv.Logf("lending them: creating the ResourceLeasingPolicy")
	policy := &kubeoceanv1alpha1.ResourceLeasingPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "bench"},
		Spec: kubeoceanv1alpha1.ResourceLeasingPolicySpec{
			Cluster:        bindingName,
			ResourceLimits: []kubeoceanv1alpha1.ResourceLimit{{Resource: corev1.ResourceCPU, Percent: ptr.To[int32](50)}},
		},
	}
	start := time.Now()
	if _, err := b.physOcean.KubeoceanV1alpha1().ResourceLeasingPolicies().Create(ctx, policy, metav1.CreateOptions{}); err != nil {
		return 0, 0, err
	}
	schedulable, err = benchenv.WaitUntil(ctx, start, 15*time.Minute, "virtual nodes Ready and schedulable", func(ctx context.Context) (bool, string, error) {
		readyNodes, schedulableNodes, err := benchenv.CountNodes(ctx, b.virtualKube, kubeoceanv1alpha1.LabelClusterID+"="+clusterID)
		if readyNodes == n && ready == 0 {
			ready = time.Since(start)
		}
		return schedulableNodes == n, fmt.Sprintf("%d/%d virtual nodes Ready, %d schedulable", readyNodes, n, schedulableNodes), err
	})
	return ready, schedulable, err
}

// changePolicy halves what the policy lends and times the syncer until
// every virtual node shows it.
func (b *bench) changePolicy(ctx context.Context) (time.Duration, error) {
	policies := b.physOcean.KubeoceanV1alpha1().ResourceLeasingPolicies()
	p, err := policies.Get(ctx, "bench", metav1.GetOptions{})
	if err != nil {
		return 0, err
	}
	p.Spec.ResourceLimits[0].Percent = ptr.To[int32](25)
	benchenv.Logf("changing the policy from 50%% to 25%% of CPU")
	start := time.Now()
	if _, err := policies.Update(ctx, p, metav1.UpdateOptions{}); err != nil {
		return 0, err
	}
	return b.waitAllCPU(ctx, start, "2")
}

// createForeignPods fills the physical nodes with pods Kubeocean does not
// run and waits until every virtual node accounts for them.
func (b *bench) createForeignPods(ctx context.Context) (time.Duration, error) {
	total := b.cfg.nodes * b.cfg.podsPerNode
	benchenv.Logf("creating %d foreign pods in the physical cluster", total)
	start := time.Now()
	err := benchenv.ForEach(total, func(i int) error {
		pod := testenv.KwokPod("bench-apps", fmt.Sprintf("foreign-%05d", i), physicalNodeName(i%b.cfg.nodes), "10m", "16Mi", nil)
		_, err := b.physKube.CoreV1().Pods("bench-apps").Create(ctx, pod, metav1.CreateOptions{})
		return err
	})
	if err != nil {
		return 0, err
	}
	benchenv.Logf("created in %v; waiting until the virtual nodes account for them", time.Since(start).Round(time.Millisecond))
	free := resource.MustParse(nodeCPU)
	free.Sub(*resource.NewMilliQuantity(int64(10*b.cfg.podsPerNode), resource.DecimalSI))
	want := resource.NewMilliQuantity(free.MilliValue()/4, resource.DecimalSI)
	return b.waitAllCPU(ctx, start, want.String())
}

// waitAllCPU waits until every virtual node advertises cpu.
func (b *bench) waitAllCPU(ctx context.Context, start time.Time, cpu string) (time.Duration, error) {
	want := resource.MustParse(cpu)
	return benchenv.WaitUntil(ctx, start, 15*time.Minute, "virtual nodes show "+cpu+" CPU", func(ctx context.Context) (bool, string, error) {
		nodes, err := b.virtualKube.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: kubeoceanv1alpha1.LabelClusterID + "=" + clusterID})
		if err != nil {
			return false, "", err
		}
		done := 0
		for _, n := range nodes.Items {
			if q := n.Status.Allocatable[corev1.ResourceCPU]; q.Cmp(want) == 0 {
				done++
			}
		}
		return done == b.cfg.nodes, fmt.Sprintf("%d/%d show %s", done, b.cfg.nodes, cpu), nil
	})
}
