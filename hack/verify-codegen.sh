#!/usr/bin/env bash
# Fails when generated/ or the generated deepcopy functions drift from the API types.
set -euo pipefail
exec "$(dirname "${BASH_SOURCE[0]}")/verify-generated.sh" update-codegen.sh generated apis
