#!/usr/bin/env bash
# Fails when the charts' generated templates drift from the plain manifests.
set -euo pipefail
exec "$(dirname "${BASH_SOURCE[0]}")/verify-generated.sh" update-charts.sh manifests/charts
