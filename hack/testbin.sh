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

# Builds the control-plane binaries the integration and end-to-end tests run
# (kube-apiserver, kube-controller-manager, kube-scheduler, kubectl, etcd, kwok, helm) from the
# pinned tools modules under hack/tools, into a cache outside the repository.
#
# Works from a cold machine: every module it reads is downloaded first (an
# empty GOMODCACHE is fine), and nothing is taken from a module folder that
# `go build` alone would not have fetched.
#
# Each binary is cached under a key of its tools module (go.mod, go.sum), its
# package and its link flags, so pinning a new kwok rebuilds only kwok. The
# printed folder holds links to the binaries of the current set and the kwok
# stage files. Prints the folder on stdout; everything else goes to stderr.
#
#   KUBEOCEAN_TESTBIN_CACHE  cache root (default: $XDG_CACHE_HOME or ~/.cache, + /kubeocean/testbin)
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
tools="$root/hack/tools"
kube_version=v1.36.3
version_pkg=k8s.io/component-base/version
kube_ldflags="-X $version_pkg.gitVersion=$kube_version -X $version_pkg.gitMajor=1 -X $version_pkg.gitMinor=36 -X $version_pkg.gitTreeState=clean"
# helm reports its pinned version (helm version, .Capabilities.HelmVersion)
# and, as its release builds do, the Kubernetes minor of its client-go as the
# default .Capabilities.KubeVersion of `helm template` (else v1.20, which the
# charts' kubeVersion refuses); both are read from hack/tools/helm/go.mod.
helm_version=$(awk '$1 == "helm.sh/helm/v3" {print $2}' "$tools/helm/go.mod")
helm_kube_minor=$(awk '$1 == "k8s.io/client-go" {split($2, v, "."); print v[2]}' "$tools/helm/go.mod")
helm_pkg=helm.sh/helm/v3/pkg
helm_ldflags="-X helm.sh/helm/v3/internal/version.version=$helm_version"
for p in chartutil lint/rules; do
  helm_ldflags+=" -X $helm_pkg/$p.k8sVersionMajor=1 -X $helm_pkg/$p.k8sVersionMinor=$helm_kube_minor"
done
# Stage files kwok needs beside it, relative to kustomize/stage in its module.
kwok_stages=(node/fast/node-initialize.yaml node/heartbeat-with-lease/node-heartbeat-with-lease.yaml
  pod/fast/pod-ready.yaml pod/fast/pod-complete.yaml pod/fast/pod-delete.yaml)

cache_root=${KUBEOCEAN_TESTBIN_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/kubeocean/testbin}
objects="$cache_root/objects"

log() { printf 'testbin: %s\n' "$*" >&2; }
hash() { sha256sum | cut -c1-16; }

# recipe lists what is built, one line per binary: module-dir package output ldflags.
recipe() {
  printf '%s\n' \
    "kube go.etcd.io/etcd/server/v3 etcd" \
    "kube k8s.io/kubernetes/cmd/kube-apiserver kube-apiserver $kube_ldflags" \
    "kube k8s.io/kubernetes/cmd/kube-controller-manager kube-controller-manager $kube_ldflags" \
    "kube k8s.io/kubernetes/cmd/kube-scheduler kube-scheduler $kube_ldflags" \
    "kube k8s.io/kubernetes/cmd/kubectl kubectl $kube_ldflags" \
    "kwok sigs.k8s.io/kwok/cmd/kwok kwok" \
    "helm helm.sh/helm/v3/cmd/helm helm $helm_ldflags"
}

# object_key names one binary's build: its tools module's pins and its recipe line.
object_key() { # module line
  { cat "$tools/$1/go.mod" "$tools/$1/go.sum"; printf '%s\n' "$2"; } | hash
}

build() { # module package output [ldflags...]
  local mod=$1 pkg=$2 out=$3
  shift 3
  local ldflags="$*" line="$mod $pkg $out $*"
  local obj
  obj="$objects/$out-$(object_key "$mod" "$line")"
  if [ ! -x "$obj" ]; then
    log "building $out from $pkg (minutes on a cold cache)"
    local start=$SECONDS
    (cd "$tools/$mod" && CGO_ENABLED=0 go build -trimpath -ldflags "-s -w $ldflags" -o "$obj.tmp" "$pkg")
    mv "$obj.tmp" "$obj"
    log "built $out in $((SECONDS - start))s"
  fi
  ln -sfn "$obj" "$dir/$out"
}

# The stage files come from the kwok module folder, which `go mod download`
# fills; `go list -m` alone would print an empty folder on a cold cache.
copy_kwok_stages() {
  local stages="$dir/kwok-stages"
  [ -f "$stages/.done" ] && return
  local kwok_dir
  kwok_dir=$(cd "$tools/kwok" && go mod download sigs.k8s.io/kwok && go list -m -f '{{.Dir}}' sigs.k8s.io/kwok)
  if [ -z "$kwok_dir" ] || [ ! -d "$kwok_dir/kustomize/stage" ]; then
    echo "testbin: the kwok module has no stage folder at '$kwok_dir'" >&2
    return 1
  fi
  rm -rf "$stages" && mkdir -p "$stages"
  for f in "${kwok_stages[@]}"; do
    cp "$kwok_dir/kustomize/stage/$f" "$stages/$(echo "$f" | tr / _)"
  done
  chmod u+w "$stages"/*
  touch "$stages/.done"
}

set_key=$({ recipe; printf '%s\n' "${kwok_stages[@]}"; for m in kube kwok helm; do cat "$tools/$m/go.mod" "$tools/$m/go.sum"; done; } | hash)
dir="$cache_root/$set_key"
mkdir -p "$dir" "$objects"
# One builder at a time per cache: parallel test runs wait instead of racing
# on the same outputs.
exec 9>"$cache_root/.lock"
flock 9

while read -r mod pkg out ldflags; do
  # shellcheck disable=SC2086 # the link flags are words
  build "$mod" "$pkg" "$out" $ldflags
done < <(recipe)
copy_kwok_stages

echo "$dir"
