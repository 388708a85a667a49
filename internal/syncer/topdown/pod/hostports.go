package pod

import (
	"context"
	"fmt"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/kubeocean/kubeocean/internal/hostports"
	"github.com/kubeocean/kubeocean/pkg/controller"
)

// HostPorts tells the host ports bound on physical nodes by the pods the
// binding does not run, other bindings' included; *hostports.Tracker.
type HostPorts interface {
	Conflicts(node string, want []hostports.Port) []hostports.Port
	OnChange(fn func(node string, freed bool))
	HasSynced() bool
}

// portWaits are the refused pods waiting for host ports on a physical
// node; a port freed there sends them again.
type portWaits struct {
	mu   sync.Mutex
	pods map[cache.ObjectName]string
}

func (w *portWaits) wait(key cache.ObjectName, node string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.pods[key] = node
}

// forget drops a pod that is gone; nil-safe (no HostPorts given).
func (w *portWaits) forget(key cache.ObjectName) {
	if w == nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.pods, key)
}

// release forgets and returns the pods waiting on node.
func (w *portWaits) release(node string) []cache.ObjectName {
	w.mu.Lock()
	defer w.mu.Unlock()
	var keys []cache.ObjectName
	for key, n := range w.pods {
		if n == node {
			keys = append(keys, key)
			delete(w.pods, key)
		}
	}
	return keys
}

// registerHostPorts wakes the pods refused for host ports on a node when a
// port is freed there.
func (c *Controller) registerHostPorts(opts Options) {
	if opts.HostPorts == nil {
		return
	}
	c.hostPorts = opts.HostPorts
	c.portWaits = &portWaits{pods: map[cache.ObjectName]string{}}
	opts.HostPorts.OnChange(func(node string, freed bool) {
		if freed {
			c.wakePortWaiters(node)
		}
	})
}

func (c *Controller) wakePortWaiters(node string) {
	for _, key := range c.portWaits.release(node) {
		c.refusals.forget(key)
		c.Enqueue(key)
	}
}

// hostPortsInUse says which host ports of pod are taken on physicalNode;
// "" when none (or nothing is known of host ports).
func (c *Controller) hostPortsInUse(pod *corev1.Pod, physicalNode string) string {
	if c.hostPorts == nil {
		return ""
	}
	taken := c.hostPorts.Conflicts(physicalNode, hostports.Of(pod))
	if len(taken) == 0 {
		return ""
	}
	names := make([]string, len(taken))
	for i, p := range taken {
		names[i] = p.String()
	}
	return fmt.Sprintf("host ports %s are in use on physical node %s by pods this binding does not run; the pod is created once they are free",
		strings.Join(names, ", "), physicalNode)
}

// refuseForHostPorts refuses the pod until a port is freed on its node. A
// port freed while the refusal was written would wake nobody: looked at
// again after it.
func (c *Controller) refuseForHostPorts(ctx context.Context, virtual *corev1.Pod, physicalNode, message string) (controller.Result, error) {
	c.portWaits.wait(controller.ObjectKey(virtual), physicalNode)
	result, err := c.refuse(ctx, virtual, ReasonHostPortInUse, message, true)
	if err == nil && c.hostPortsInUse(virtual, physicalNode) == "" {
		c.wakePortWaiters(physicalNode)
	}
	return result, err
}
