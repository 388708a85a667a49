// Command kubeocean binds physical clusters to a Kubeocean virtual cluster,
// unbinds them and shows their status. Installed as kubectl-kubeocean on
// the PATH it also runs as `kubectl kubeocean`.
package main

import (
	"fmt"
	"os"

	"github.com/kubeocean/kubeocean/internal/cli"
)

func main() {
	if err := cli.NewCommand(os.Stdout, os.Stderr).Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "Error:", err)
		os.Exit(1)
	}
}
