#!/usr/bin/env bash
# Writes everything under generated/ and the deepcopy functions beside the
# API types, with kube_codegen.sh from the k8s.io/code-generator version
# pinned in hack/tools/codegen. Nothing else may write these files.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
module=github.com/kubeocean/kubeocean
cd "$root"

# `go list -m` only prints where a module would be; download it first so a
# cold module cache works too.
codegen_pkg=$(cd "$root/hack/tools/codegen" && go mod download k8s.io/code-generator &&
  go list -m -f '{{.Dir}}' k8s.io/code-generator)
if [ ! -f "$codegen_pkg/kube_codegen.sh" ]; then
  echo "update-codegen: no kube_codegen.sh in k8s.io/code-generator at '$codegen_pkg'" >&2
  exit 1
fi
# shellcheck source=/dev/null
source "$codegen_pkg/kube_codegen.sh"

kube::codegen::gen_helpers \
  --boilerplate "$root/hack/boilerplate.go.txt" \
  "$root/apis"

kube::codegen::gen_client \
  --with-watch \
  --with-applyconfig \
  --output-dir "$root/generated" \
  --output-pkg "$module/generated" \
  --boilerplate "$root/hack/boilerplate.go.txt" \
  "$root/apis"
