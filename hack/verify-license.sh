#!/usr/bin/env bash
# Fails listing the hand-written Go files and shell scripts that do not
# start with the license header (hack/boilerplate.go.txt);
# hack/update-license.sh adds it.
set -euo pipefail
# shellcheck source=hack/license.sh
source "$(dirname "${BASH_SOURCE[0]}")/license.sh"
cd "$license_root"

missing=()
while IFS= read -r f; do
  has_license "$f" || missing+=("$f")
done < <(license_files)
if [ ${#missing[@]} -gt 0 ]; then
  printf '%s\n' "${missing[@]}" >&2
  echo "${#missing[@]} files lack the license header (hack/boilerplate.go.txt); run hack/update-license.sh" >&2
  exit 1
fi
