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

# Proves that the scripts a new user's first `make test` or `make demo` runs
# work on a cold machine: the module, the code and CRD generators and the
# test binaries, each from an empty Go module cache and an empty binary cache.
#
# The Go build cache is kept (it only holds compiled packages keyed by their
# content, so it cannot hide a missing download), which keeps this cheap: the
# run downloads every module the scripts need and links the test binaries.
# Everything is built with -trimpath, whose cache keys do not name the module
# cache's folder: without it, a new GOMODCACHE would compile every
# dependency again.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"

scratch=$(mktemp -d "${TMPDIR:-/tmp}/kubeocean-cold.XXXXXX")
# Module caches are read-only unless asked otherwise; -modcacherw lets the
# cleanup remove them.
cleanup() { chmod -R u+w "$scratch" 2>/dev/null || true; rm -rf "$scratch"; }
trap cleanup EXIT

export GOMODCACHE="$scratch/gomodcache"
export GOFLAGS="${GOFLAGS:-$(go env GOFLAGS)} -modcacherw -trimpath"
export KUBEOCEAN_TESTBIN_CACHE="$scratch/testbin"
mkdir -p "$GOMODCACHE" "$KUBEOCEAN_TESTBIN_CACHE"

step() { # name command...
  local name=$1 start=$SECONDS
  shift
  echo "verify-cold: $name" >&2
  "$@" >"$scratch/$name.log" 2>&1 || {
    tail -40 "$scratch/$name.log" >&2
    echo "verify-cold: $name failed from an empty module cache" >&2
    exit 1
  }
  printf 'verify-cold: %s passed in %ds\n' "$name" $((SECONDS - start)) >&2
}

start=$SECONDS
step build go build ./...
step codegen hack/verify-codegen.sh
step crds hack/verify-crds.sh
step charts hack/verify-charts.sh
# The image builder is its own module (hack/image/go.mod): `make images`
# builds it, so its dependencies must download too.
step image go -C hack/image vet ./...
# `make verify` builds logcheck from its own tools module.
step logcheck go -C hack/tools/logcheck build -o /dev/null sigs.k8s.io/logtools/logcheck
step testbin hack/testbin.sh
dir=$(tail -1 "$scratch/testbin.log")
for bin in etcd kube-apiserver kube-controller-manager kube-scheduler kubectl kwok helm; do
  [ -x "$dir/$bin" ] || { echo "verify-cold: testbin did not produce $bin in $dir" >&2; exit 1; }
done
n=$(find "$dir/kwok-stages" -name '*.yaml' | wc -l)
[ "$n" -eq 5 ] || { echo "verify-cold: testbin copied $n kwok stage files, want 5" >&2; exit 1; }
printf 'verify-cold: every step passed from an empty module cache in %ds (%s of modules downloaded)\n' \
  $((SECONDS - start)) "$(du -sh "$GOMODCACHE" | cut -f1)" >&2
