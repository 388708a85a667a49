#!/usr/bin/env bash
# Builds the control-plane binaries the integration and end-to-end tests run
# (kube-apiserver, kube-controller-manager, kube-scheduler, kubectl, etcd, kwok) from the
# pinned tools modules under hack/tools, into a cache outside the repository.
#
# The cache folder is keyed by a hash of the tools modules and this script, so
# a change of pinned versions builds a fresh set while an unchanged set is
# reused. Prints the folder on stdout; everything else goes to stderr.
#
#   KUBEOCEAN_TESTBIN_CACHE  cache root (default: $XDG_CACHE_HOME or ~/.cache, + /kubeocean/testbin)
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
tools="$root/hack/tools"
kube_version=v1.36.3

cache_root=${KUBEOCEAN_TESTBIN_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/kubeocean/testbin}
key=$(cat "$tools"/kube/go.mod "$tools"/kube/go.sum "$tools"/kwok/go.mod "$tools"/kwok/go.sum "${BASH_SOURCE[0]}" | sha256sum | cut -c1-16)
dir="$cache_root/$key"

log() { printf 'testbin: %s\n' "$*" >&2; }

build() { # module-dir package output [ldflags]
  local mod=$1 pkg=$2 out=$3 ldflags=${4:-}
  if [ -x "$dir/$out" ]; then
    return
  fi
  log "building $out from $pkg (this takes minutes on a cold cache)"
  local start=$SECONDS
  (cd "$mod" && CGO_ENABLED=0 go build -trimpath -ldflags "-s -w $ldflags" -o "$dir/$out.tmp" "$pkg")
  mv "$dir/$out.tmp" "$dir/$out"
  log "built $out in $((SECONDS - start))s"
}

mkdir -p "$dir"
# One builder at a time per cache folder: parallel test runs wait instead of
# racing on the same outputs.
exec 9>"$dir/.lock"
flock 9

version_pkg=k8s.io/component-base/version
kube_ldflags="-X $version_pkg.gitVersion=$kube_version -X $version_pkg.gitMajor=1 -X $version_pkg.gitMinor=36 -X $version_pkg.gitTreeState=clean"
build "$tools/kube" go.etcd.io/etcd/server/v3 etcd
build "$tools/kube" k8s.io/kubernetes/cmd/kube-apiserver kube-apiserver "$kube_ldflags"
build "$tools/kube" k8s.io/kubernetes/cmd/kube-controller-manager kube-controller-manager "$kube_ldflags"
build "$tools/kube" k8s.io/kubernetes/cmd/kube-scheduler kube-scheduler "$kube_ldflags"
build "$tools/kube" k8s.io/kubernetes/cmd/kubectl kubectl "$kube_ldflags"
build "$tools/kwok" sigs.k8s.io/kwok/cmd/kwok kwok

# kwok needs its stage definitions next to it.
if [ ! -f "$dir/kwok-stages/.done" ]; then
  kwok_dir=$(cd "$tools/kwok" && go list -m -f '{{.Dir}}' sigs.k8s.io/kwok)
  mkdir -p "$dir/kwok-stages"
  for f in node/fast/node-initialize.yaml node/heartbeat-with-lease/node-heartbeat-with-lease.yaml \
    pod/fast/pod-ready.yaml pod/fast/pod-complete.yaml pod/fast/pod-delete.yaml; do
    cp "$kwok_dir/kustomize/stage/$f" "$dir/kwok-stages/$(echo "$f" | tr / _)"
  done
  chmod u+w "$dir"/kwok-stages/*
  touch "$dir/kwok-stages/.done"
fi

echo "$dir"
