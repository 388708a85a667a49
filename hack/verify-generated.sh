#!/usr/bin/env bash
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
