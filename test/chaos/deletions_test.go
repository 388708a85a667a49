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

package chaos

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
)

// deletion is one pod seen going away: marked for deletion or removed.
type deletion struct {
	at      time.Time
	cluster string
	pod     string // namespace/name
	phase   corev1.PodPhase
	how     string
}

func (d deletion) String() string {
	return fmt.Sprintf("%s %s pod %s (%s) at %s", d.how, d.cluster, d.pod, d.phase, d.at.Format("15:04:05.000"))
}

// deletionLog records, from watches that outlive apiserver restarts, every
// pod deleted in the mount namespace of the physical cluster and every
// test pod deleted in the virtual cluster. The tests never delete a pod, so
// any entry is Kubeocean's doing (or an eviction it failed to prevent).
// A pod removed while a watch was cut off still shows, as the informer's
// relist reports it gone.
type deletionLog struct {
	mu      sync.Mutex
	entries []deletion
}

func watchDeletions(ctx context.Context, virtual, physical kubernetes.Interface, stop <-chan struct{}) (*deletionLog, error) {
	log := &deletionLog{}
	physicalPods := informers.NewSharedInformerFactoryWithOptions(physical, 0, informers.WithNamespace(mountNamespace))
	virtualPods := informers.NewSharedInformerFactoryWithOptions(virtual, 0,
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = podLabel }))
	for _, f := range []struct {
		cluster string
		factory informers.SharedInformerFactory
	}{{"physical", physicalPods}, {"virtual", virtualPods}} {
		_, err := f.factory.Core().V1().Pods().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
			UpdateFunc: func(oldObj, newObj any) {
				old, pod := oldObj.(*corev1.Pod), newObj.(*corev1.Pod)
				if old.DeletionTimestamp == nil && pod.DeletionTimestamp != nil {
					log.add(f.cluster, pod, "marked for deletion")
				}
			},
			DeleteFunc: func(obj any) {
				if tombstone, ok := obj.(cache.DeletedFinalStateUnknown); ok {
					obj = tombstone.Obj
				}
				if pod, ok := obj.(*corev1.Pod); ok {
					log.add(f.cluster, pod, "removed")
				}
			},
		})
		if err != nil {
			return nil, err
		}
		f.factory.Start(stop)
		for informer, synced := range f.factory.WaitForCacheSync(ctx.Done()) {
			if !synced {
				return nil, fmt.Errorf("the %s pod informer %v did not sync", f.cluster, informer)
			}
		}
	}
	return log, nil
}

func (l *deletionLog) add(cluster string, pod *corev1.Pod, how string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.entries = append(l.entries, deletion{at: time.Now(), cluster: cluster, pod: pod.Namespace + "/" + pod.Name, phase: pod.Status.Phase, how: how})
}

// count is how many entries there are, to take only later ones with since.
func (l *deletionLog) count() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.entries)
}

func (l *deletionLog) since(n int) []deletion {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]deletion(nil), l.entries[n:]...)
}
