package main

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
	"github.com/kubeocean/kubeocean/pkg/naming"
	"github.com/kubeocean/kubeocean/test/bench/benchenv"
)

func resourceQuantity(n int) *resource.Quantity {
	return resource.NewQuantity(int64(n), resource.DecimalSI)
}

// timeline records when each pod of the latency phase reached each step.
type timeline struct {
	mu                                             sync.Mutex
	created, physicalSeen, physicalRun, virtualRun map[string]time.Time
}

func (tl *timeline) mark(m map[string]time.Time, name string) {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	if _, ok := m[name]; !ok {
		m[name] = time.Now()
	}
}

// follow records, from a watch, when pods first appear and first run;
// names maps a pod to the virtual pod name it stands for.
func (tl *timeline) follow(ctx context.Context, kube kubernetes.Interface, namespace, selector string, seen, run map[string]time.Time, name func(*corev1.Pod) string) error {
	w, err := kube.CoreV1().Pods(namespace).Watch(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		return err
	}
	go func() {
		defer w.Stop()
		for ev := range w.ResultChan() {
			pod, ok := ev.Object.(*corev1.Pod)
			if !ok || ev.Type == watch.Deleted {
				continue
			}
			n := name(pod)
			if n == "" {
				continue
			}
			if seen != nil {
				tl.mark(seen, n)
			}
			if pod.Status.Phase == corev1.PodRunning {
				tl.mark(run, n)
			}
		}
	}()
	return nil
}

// steady creates pods at a steady rate and returns the latencies from
// virtual create to physical create and from physical Running to virtual
// Running.
func (b *bench) steady(ctx context.Context) (create, status []time.Duration, err error) {
	tl := &timeline{created: map[string]time.Time{}, physicalSeen: map[string]time.Time{},
		physicalRun: map[string]time.Time{}, virtualRun: map[string]time.Time{}}
	watchCtx, stop := context.WithCancel(ctx)
	defer stop()
	managed := kubeoceanv1alpha1.LabelManagedBy + "=" + kubeoceanv1alpha1.ManagedByKubeocean
	err = tl.follow(watchCtx, b.physKube, mount, managed+",app=steady", tl.physicalSeen, tl.physicalRun,
		func(p *corev1.Pod) string { return p.Annotations[kubeoceanv1alpha1.AnnotationVirtualPodName] })
	if err != nil {
		return nil, nil, err
	}
	err = tl.follow(watchCtx, b.virtualKube, virtualNS, "app=steady", nil, tl.virtualRun, func(p *corev1.Pod) string { return p.Name })
	if err != nil {
		return nil, nil, err
	}

	benchenv.Logf("latency: %d pods at %.0f/s", b.cfg.steadyPods, b.cfg.rate)
	ticker := time.NewTicker(time.Duration(float64(time.Second) / b.cfg.rate))
	defer ticker.Stop()
	for i := range b.cfg.steadyPods {
		<-ticker.C
		name := fmt.Sprintf("steady-%04d", i)
		pod := benchPod(virtualNS, name, naming.VirtualNodeName(clusterID, nodeName(i%b.cfg.nodes)))
		pod.Labels["app"] = "steady"
		tl.mark(tl.created, name)
		go func() {
			if _, err := b.virtualKube.CoreV1().Pods(virtualNS).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
				benchenv.Logf("creating %s: %v", name, err)
			}
		}()
	}
	_, err = benchenv.WaitUntil(ctx, time.Now(), 5*time.Minute, "steady pods Running", func(context.Context) (bool, string, error) {
		tl.mu.Lock()
		defer tl.mu.Unlock()
		return len(tl.virtualRun) == b.cfg.steadyPods, fmt.Sprintf("%d/%d", len(tl.virtualRun), b.cfg.steadyPods), nil
	})
	if err != nil {
		return nil, nil, err
	}
	tl.mu.Lock()
	defer tl.mu.Unlock()
	for name, c := range tl.created {
		create = append(create, tl.physicalSeen[name].Sub(c))
		status = append(status, tl.virtualRun[name].Sub(tl.physicalRun[name]))
	}
	slices.Sort(create)
	slices.Sort(status)
	return create, status, nil
}

// idle counts the syncer's writes while nothing changes.
func (b *bench) idle(ctx context.Context) (map[string]float64, error) {
	benchenv.Logf("idle: counting writes for %v", b.cfg.idle)
	time.Sleep(20 * time.Second)
	before, err := b.scrape()
	if err != nil {
		return nil, err
	}
	select {
	case <-time.After(b.cfg.idle):
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	after, err := b.scrape()
	return benchenv.DiffRequests(before, after), err
}
