#!/usr/bin/env bash
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
