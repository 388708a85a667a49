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

// Package version is the identity of a Kubeocean build: the release it was
// cut from and the commit it was built at. Release builds set it at link time:
//
//	go build -ldflags "-X github.com/kubeocean/kubeocean/internal/version.gitVersion=v0.2.0 \
//	  -X github.com/kubeocean/kubeocean/internal/version.gitCommit=$(git rev-parse HEAD)" ./cmd/...
//
// Other builds fall back to what the Go toolchain stamped into the binary
// (the module version and, unless -buildvcs=false, the VCS revision).
package version
