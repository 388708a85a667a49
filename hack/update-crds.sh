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

# Writes the CRD manifests in manifests/crds/ from the markers on the API
# types, with the controller-gen version pinned in hack/tools/codegen.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
bin="$root/bin"
mkdir -p "$bin"
(cd "$root/hack/tools/codegen" && go build -o "$bin/controller-gen" sigs.k8s.io/controller-tools/cmd/controller-gen)

cd "$root"
rm -f manifests/crds/*.yaml
"$bin/controller-gen" crd:crdVersions=v1 paths=./apis/... output:crd:artifacts:config=manifests/crds
# controller-gen cannot mark core types (spec.nodeSelector is a core/v1
# NodeSelector); crdpatch adds their limits and rules.
go run ./hack/crdpatch manifests/crds/*.yaml
