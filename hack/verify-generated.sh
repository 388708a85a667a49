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

# Shared body of the verify-* scripts: runs an update script on a copy of the
# tree and fails when the listed paths differ from what is checked in.
#   verify-generated.sh <update-script> <path>...
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
update=$1
shift

scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
tar -C "$root" --exclude=./.git --exclude=./bin -cf - . | tar -C "$scratch" -xf -

(cd "$scratch" && "hack/$update" >/dev/null)
status=0
for path in "$@"; do
  if ! diff -Nqr "$root/$path" "$scratch/$path" >/dev/null; then
    diff -Nur "$root/$path" "$scratch/$path" | head -50 >&2 || true
    echo "$path is out of date: run hack/$update" >&2
    status=1
  fi
done
exit $status
