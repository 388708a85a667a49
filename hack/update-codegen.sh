#!/usr/bin/env bash
# Copyright The Kubeocean Authors.
#
# Licensed under the Apache License, Version 2.0 (the "License");
# you may not use this file except in compliance with the License.
# You may obtain a copy of the License at
#
#     http://www.apache.org/licenses/LICENSE-2.0
#
# Unless required by applicable law or agreed to in writing, software
# distributed under the License is distributed on an "AS IS" BASIS,
# WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
# See the License for the specific language governing permissions and
# limitations under the License.

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
