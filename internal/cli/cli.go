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
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	kubeoceanclient "github.com/kubeocean/kubeocean/generated/clientset/versioned"
	"github.com/kubeocean/kubeocean/internal/version"
)

// FieldManager owns what the command line applies.
const FieldManager = "kubeocean-cli"

// ClusterFlags pick a cluster from kubeconfig files, as kubectl does:
// --kubeconfig, else $KUBECONFIG, else ~/.kube/config; --context, else the
// current context.
type ClusterFlags struct {
	Kubeconfig, Context string
}

// Loader is the client configuration the flags pick, unresolved.
func (f ClusterFlags) Loader() clientcmd.ClientConfig {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = f.Kubeconfig
	return clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: f.Context})
}

// clients of one cluster.
type clients struct {
	config  *rest.Config
	kube    kubernetes.Interface
	ocean   kubeoceanclient.Interface
	dynamic dynamic.Interface
}

func newClients(config *rest.Config) (*clients, error) {
	config = rest.CopyConfig(config)
	config.UserAgent = "kubeocean-cli/" + version.Get().GitVersion
	kube, err := kubernetes.NewForConfig(config)
	if err != nil {
		return nil, err
	}
	ocean, err := kubeoceanclient.NewForConfig(config)
	if err != nil {
		return nil, err
	}
	dyn, err := dynamic.NewForConfig(config)
	if err != nil {
		return nil, err
	}
	return &clients{config: config, kube: kube, ocean: ocean, dynamic: dyn}, nil
}

func (f ClusterFlags) clients(which string) (*clients, error) {
	config, err := f.Loader().ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("the %s cluster's kubeconfig: %w", which, err)
	}
	return newClients(config)
}

// NewCommand is the root command; out and errOut are where it prints.
func NewCommand(out, errOut io.Writer) *cobra.Command {
	var virtual ClusterFlags
	root := &cobra.Command{
		Use:           "kubeocean",
		Short:         "Bind physical clusters to a Kubeocean virtual cluster, unbind them, and see what they lend.",
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       version.Get().String(),
	}
	root.SetOut(out)
	root.SetErr(errOut)
	root.PersistentFlags().StringVar(&virtual.Kubeconfig, "kubeconfig", "", "Kubeconfig of the virtual cluster (default: $KUBECONFIG, else ~/.kube/config).")
	root.PersistentFlags().StringVar(&virtual.Context, "context", "", "Context of the virtual cluster in that kubeconfig (default: its current context).")
	root.AddCommand(newBindCommand(&virtual), newUnbindCommand(&virtual), newStatusCommand(&virtual))
	return root
}

// age prints a duration as kubectl does in its AGE column.
func age(d time.Duration) string {
	switch {
	case d < 2*time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < 2*time.Hour:
		return fmt.Sprintf("%dm", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh", int(d.Hours()))
	default:
		return fmt.Sprintf("%dd", int(d.Hours()/24))
	}
}
