#!/usr/bin/env bash
# Fails when manifests/crds/ drifts from the markers on the API types.
set -euo pipefail
exec "$(dirname "${BASH_SOURCE[0]}")/verify-generated.sh" update-crds.sh manifests/crds
