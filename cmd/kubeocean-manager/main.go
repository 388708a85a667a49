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

// Command kubeocean-manager watches ClusterBindings in the virtual cluster,
// checks each physical cluster and runs one syncer per binding, as a
// Deployment (--syncer-mode=deployment) or inside its own process
// (--syncer-mode=in-process).
package main

import (
	"os"

	"github.com/kubeocean/kubeocean/internal/app"
	"github.com/kubeocean/kubeocean/internal/manager"
)

func main() {
	opts := app.NewOptions(manager.Component)
	managerOpts := manager.NewOptions()
	cmd := app.Command{
		Options:  opts,
		Short:    "The Kubeocean manager: checks ClusterBindings and runs one syncer per binding.",
		AddFlags: managerOpts.AddFlags,
		Validate: managerOpts.Validate,
		Setup:    func() app.Setup { return manager.Setup(managerOpts) },
	}
	os.Exit(cmd.Execute(os.Args[1:], os.Stdout, os.Stderr))
}
