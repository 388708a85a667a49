package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
)

type unbindOptions struct {
	name  string
	force bool
	wait  time.Duration
}

func newUnbindCommand(virtual *ClusterFlags) *cobra.Command {
	var o unbindOptions
	cmd := &cobra.Command{
		Use:   "unbind NAME",
		Short: "Unbind a physical cluster: delete its ClusterBinding and wait until the syncer has cleaned up.",
		Long: `Delete the ClusterBinding NAME and wait until it is gone: its syncer drains and deletes the
virtual nodes, deletes its pods and copies in the physical cluster and releases the policies.

--force is for a physical cluster that is gone for good: it also sets kubeocean.io/force-unbind,
so the manager stops the syncer and removes the finalizers without cleaning up the physical
cluster (the ForceUnbind event lists what may be left behind). The kubeconfig Secret and the
physical RBAC are kept; delete them yourself when no other binding uses them.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.name = args[0]
			c, err := virtual.clients("virtual")
			if err != nil {
				return err
			}
			return o.run(cmd.Context(), c, cmd.OutOrStdout())
		},
	}
	cmd.Flags().BoolVar(&o.force, "force", false, "Unbind without cleaning up the physical cluster (when it is gone for good).")
	cmd.Flags().DurationVar(&o.wait, "wait", 5*time.Minute, "How long to wait for the binding to be gone; 0 does not wait.")
	return cmd
}

func (o *unbindOptions) run(ctx context.Context, virtual *clients, out io.Writer) error {
	bindings := virtual.ocean.KubeoceanV1alpha1().ClusterBindings()
	if o.force {
		patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{kubeoceanv1alpha1.AnnotationForceUnbind: "true"}}})
		if _, err := bindings.Patch(ctx, o.name, types.MergePatchType, patch, metav1.PatchOptions{FieldManager: FieldManager}); err != nil {
			return fmt.Errorf("ClusterBinding %s: %w", o.name, err)
		}
	}
	err := bindings.Delete(ctx, o.name, metav1.DeleteOptions{})
	if apierrors.IsNotFound(err) {
		fmt.Fprintf(out, "ClusterBinding %s does not exist\n", o.name)
		return nil
	}
	if err != nil {
		return fmt.Errorf("ClusterBinding %s: %w", o.name, err)
	}
	fmt.Fprintf(out, "ClusterBinding %s deleted; unbinding\n", o.name)
	if o.wait == 0 {
		return nil
	}
	var last *kubeoceanv1alpha1.ClusterBinding
	err = wait.PollUntilContextTimeout(ctx, time.Second, o.wait, true, func(ctx context.Context) (bool, error) {
		b, err := bindings.Get(ctx, o.name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		if err == nil {
			last = b
		}
		return false, nil
	})
	if err != nil {
		waiting := "no status"
		if last != nil {
			waiting = fmt.Sprintf("finalizers %v, phase %s", last.Finalizers, last.Status.Phase)
		}
		return fmt.Errorf("ClusterBinding %s is not gone after %v (%s); see `kubectl describe cb %s`", o.name, o.wait, waiting, o.name)
	}
	fmt.Fprintf(out, "ClusterBinding %s is gone\n", o.name)
	return nil
}
