package manager

import (
	"bytes"
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubeocean/kubeocean/pkg/app"
	"github.com/kubeocean/kubeocean/pkg/manager"
	"github.com/kubeocean/kubeocean/pkg/naming"
	"github.com/kubeocean/kubeocean/test/testenv"
)

// TestKubeoceanCLI binds the physical cluster with the built kubeocean
// command, from nothing but the two admin kubeconfigs: the binding becomes
// Ready and lends the selected node; binding again changes nothing; status
// shows it; unbind removes it.
func TestKubeoceanCLI(t *testing.T) {
	const name, node = "cli-bind", "cli-bind-node"
	w := newWorld(t)
	ctx := t.Context()
	binary := filepath.Join(t.TempDir(), "kubeocean")
	if out, err := exec.Command("go", "build", "-o", binary, "../../cmd/kubeocean").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	run := func(args ...string) (string, error) {
		var out bytes.Buffer
		cmd := exec.CommandContext(ctx, binary, append([]string{"--kubeconfig=" + virtualCluster.KubeconfigPath}, args...)...)
		cmd.Stdout, cmd.Stderr = &out, &out
		err := cmd.Run()
		return out.String(), err
	}
	bind := []string{"bind", name, "--physical-kubeconfig=" + physicalCluster.KubeconfigPath, "--node-selector=suite=" + name, "--policy", "--wait=90s"}
	if _, err := w.physical.CoreV1().Nodes().Create(ctx, testenv.KwokNode(node, "4", "8Gi", map[string]string{"suite": name}), metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = w.physicalOcean.KubeoceanV1alpha1().ResourceLeasingPolicies().Delete(context.Background(), name, metav1.DeleteOptions{})
		_ = w.virtual.CoreV1().Secrets(systemNamespace).Delete(context.Background(), name+"-kubeconfig", metav1.DeleteOptions{})
	})

	out, err := run(append(bind, "--dry-run")...)
	if err != nil || !strings.Contains(out, "kind: ClusterBinding") || !strings.Contains(out, "kubeconfig: <redacted>") {
		t.Fatalf("dry run: %v\n%s", err, out)
	}
	if _, err := w.binding(ctx, name); !apierrors.IsNotFound(err) {
		t.Fatalf("the dry run created the binding (err %v)", err)
	}

	startManager(t, func(_ *app.Options, o *manager.Options) { o.SyncerMode = manager.ModeInProcess })
	t.Cleanup(func() { w.deleteBinding(t, name, 90*time.Second) })
	out, err = run(bind...)
	if err != nil || !strings.Contains(out, "ClusterBinding "+name+" is Ready") {
		t.Fatalf("bind: %v\n%s", err, out)
	}
	vnode := naming.VirtualNodeName(name, node)
	waitFor(t, 60*time.Second, "virtual node "+vnode, func(ctx context.Context) (bool, error) {
		_, err := w.virtual.CoreV1().Nodes().Get(ctx, vnode, metav1.GetOptions{})
		return err == nil, err
	})

	secret, err := w.virtual.CoreV1().Secrets(systemNamespace).Get(ctx, name+"-kubeconfig", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if out, err := run(bind...); err != nil {
		t.Fatalf("bind again: %v\n%s", err, out)
	}
	again, err := w.virtual.CoreV1().Secrets(systemNamespace).Get(ctx, name+"-kubeconfig", metav1.GetOptions{})
	if err != nil || again.ResourceVersion != secret.ResourceVersion {
		t.Fatalf("binding again rewrote the kubeconfig Secret (%v)", err)
	}

	out, err = run("status", name)
	if err != nil || !strings.Contains(oneLine(out), oneLine(name+" "+name+" Ready Ready 1 4 8Gi 0")) || !strings.Contains(out, vnode) {
		t.Fatalf("status: %v\n%s", err, out)
	}

	out, err = run("unbind", name, "--wait=90s")
	if err != nil || !strings.Contains(out, "ClusterBinding "+name+" is gone") {
		t.Fatalf("unbind: %v\n%s", err, out)
	}
	if _, err := w.virtual.CoreV1().Nodes().Get(ctx, vnode, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("virtual node %s outlived the binding (err %v)", vnode, err)
	}
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
