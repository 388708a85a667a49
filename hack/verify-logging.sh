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

# Fails when code logs otherwise than contextually: klog's global functions
# (checked by sigs.k8s.io/logtools/logcheck, pinned in hack/tools/logcheck,
# with the exceptions in hack/logcheck.conf), or a klog.Background() or
# klog.TODO() logger in a package whose functions receive a context, which
# should log with klog.FromContext(ctx) instead.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"

mkdir -p bin/tools
go -C hack/tools/logcheck build -o "$root/bin/tools/logcheck" sigs.k8s.io/logtools/logcheck
status=0
bin/tools/logcheck -config hack/logcheck.conf ./... || status=1

# The same exceptions as hack/logcheck.conf: the binaries' wiring.
wiring='^(cmd/|internal/app/|test/(bench/[^/]+|demo)/main\.go$)'
while IFS= read -r hit; do
  file=${hit%%:*}
  [[ $file =~ $wiring ]] && continue
  if git grep -q --untracked -F 'context.Context' -- "$(dirname "$file")/*.go"; then
    echo "$hit: the package receives a context; log with klog.FromContext(ctx)" >&2
    status=1
  fi
done < <(git grep -n --untracked -E '\bklog\.(Background|TODO)\(\)' -- '*.go' ':!generated/' ':!hack/tools/' || true)
exit $status
