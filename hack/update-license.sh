#!/usr/bin/env bash
# Adds the license header (hack/boilerplate.go.txt) to the hand-written Go
# files and shell scripts that lack it, after a #! line or //go:build block;
# prints each file it changes.
set -euo pipefail
# shellcheck source=hack/license.sh
source "$(dirname "${BASH_SOURCE[0]}")/license.sh"
cd "$license_root"

while IFS= read -r f; do
  has_license "$f" && continue
  add_license "$f"
  echo "$f"
done < <(license_files)
