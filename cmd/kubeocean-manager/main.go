// Command kubeocean-manager watches ClusterBindings in the virtual cluster,
// checks each physical cluster and runs one syncer per binding, as a
// Deployment (--syncer-mode=deployment) or inside its own process
// (--syncer-mode=in-process).
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"k8s.io/klog/v2"

	"github.com/kubeocean/kubeocean/pkg/app"
	"github.com/kubeocean/kubeocean/pkg/manager"
)

func main() {
	opts := app.NewOptions(manager.Component)
	managerOpts := manager.NewOptions()
	fs := flag.CommandLine
	klog.InitFlags(fs)
	opts.AddFlags(fs)
	managerOpts.AddFlags(fs)
	flag.Parse()
	if err := managerOpts.Validate(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	ctx = klog.NewContext(ctx, klog.Background())
	if err := app.Run(ctx, opts, manager.Setup(managerOpts)); err != nil {
		klog.Background().Error(err, "Manager stopped")
		klog.Flush()
		os.Exit(1)
	}
	klog.Flush()
}
