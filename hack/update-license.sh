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
