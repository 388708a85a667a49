#!/usr/bin/env bash
# Renders the generated templates of the Helm charts (manifests/charts/*/
# templates/generated-*, crds/generated-*) from the plain manifests in
# manifests/crds, manifests/rbac and manifests/deploy, which stay the one
# source of truth. Run it after editing any of them.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
go run ./hack/chartgen --root .
