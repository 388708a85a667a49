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
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
)

type unbindOptions struct {
	name          string
	force         bool
	deleteVolumes bool
	wait          time.Duration
}

func newUnbindCommand(virtual *ClusterFlags) *cobra.Command {
	var o unbindOptions
	cmd := &cobra.Command{
		Use:   "unbind NAME",
		Short: "Unbind a physical cluster: delete its ClusterBinding and wait until the syncer has cleaned up.",
		Long: `Delete the ClusterBinding NAME and wait until it is gone: its syncer drains and deletes the
virtual nodes, deletes its pods and copies in the physical cluster and releases the policies.

Volumes keep their data. The physical volumes the binding provisioned (for claims of its
storage classes) are set to the reclaim policy Retain before their holder claims are deleted:
they stay in the physical cluster, Released, annotated with the virtual claim they held, and
the binding's VolumesRetained event (printed here once the binding is gone) lists them. The
virtual claims and volumes stay in the virtual cluster. The storage of volumes copied from
the virtual cluster's own PVs is never deleted: their physical copies are Retain.

--delete-volumes deletes the provisioned physical volumes instead, by their storage class's
reclaim policy (usually Delete: their data is gone). It sets kubeocean.io/delete-volumes.

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
	cmd.Flags().BoolVar(&o.deleteVolumes, "delete-volumes", false, "Delete the physical volumes the binding provisioned, with their data, instead of keeping them.")
	cmd.Flags().DurationVar(&o.wait, "wait", 5*time.Minute, "How long to wait for the binding to be gone; 0 does not wait.")
	return cmd
}

func (o *unbindOptions) run(ctx context.Context, virtual *clients, out io.Writer) error {
	if o.force && o.deleteVolumes {
		// A forced unbinding cleans up nothing in the physical cluster, so
		// it could not delete volumes: refuse rather than pretend.
		return fmt.Errorf("--delete-volumes needs the syncer's cleanup, which --force skips")
	}
	bindings := virtual.ocean.KubeoceanV1alpha1().ClusterBindings()
	if err := o.annotate(ctx, virtual); err != nil {
		return err
	}
	var uid types.UID
	if b, err := bindings.Get(ctx, o.name, metav1.GetOptions{}); err == nil {
		uid = b.UID
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
	printRetained(ctx, virtual, o.name, uid, out)
	return nil
}

// annotate sets what the flags ask of unbinding on the binding, before it
// is deleted, in one patch.
func (o *unbindOptions) annotate(ctx context.Context, virtual *clients) error {
	annotations := map[string]string{}
	if o.force {
		annotations[kubeoceanv1alpha1.AnnotationForceUnbind] = "true"
	}
	if o.deleteVolumes {
		annotations[kubeoceanv1alpha1.AnnotationDeleteVolumes] = "true"
	}
	if len(annotations) == 0 {
		return nil
	}
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": annotations}})
	_, err := virtual.ocean.KubeoceanV1alpha1().ClusterBindings().Patch(ctx, o.name, types.MergePatchType, patch, metav1.PatchOptions{FieldManager: FieldManager})
	if err != nil {
		return fmt.Errorf("ClusterBinding %s: %w", o.name, err)
	}
	return nil
}

// printRetained prints the syncer's VolumesRetained events of the binding
// that is now gone: what it kept in the physical cluster. Best effort: the
// events may have expired or be unreadable, and unbinding is done anyway.
func printRetained(ctx context.Context, virtual *clients, name string, uid types.UID, out io.Writer) {
	if uid == "" {
		return
	}
	selector := fields.Set{"involvedObject.name": name, "involvedObject.uid": string(uid), "reason": kubeoceanv1alpha1.EventVolumesRetained}.AsSelector().String()
	events, err := virtual.kube.CoreV1().Events(metav1.NamespaceAll).List(ctx, metav1.ListOptions{FieldSelector: selector})
	if err != nil {
		fmt.Fprintf(out, "Could not read the binding's %s events (%v); the syncer's log lists the volumes it kept\n", kubeoceanv1alpha1.EventVolumesRetained, err)
		return
	}
	for _, e := range events.Items {
		// The selector again: not every server (nor a fake) filters on it.
		if e.InvolvedObject.UID == uid && e.Reason == kubeoceanv1alpha1.EventVolumesRetained {
			fmt.Fprintf(out, "%s\n", e.Message)
		}
	}
}
