// Package version is the identity of a Kubeocean build: the release it was
// cut from and the commit it was built at. Release builds set it at link time:
//
//	go build -ldflags "-X github.com/kubeocean/kubeocean/internal/version.gitVersion=v0.2.0 \
//	  -X github.com/kubeocean/kubeocean/internal/version.gitCommit=$(git rev-parse HEAD)" ./cmd/...
//
// Other builds fall back to what the Go toolchain stamped into the binary
// (the module version and, unless -buildvcs=false, the VCS revision).
package version
