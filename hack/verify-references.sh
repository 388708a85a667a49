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

# Fails when a tracked file names a document that is not in this repository:
# the design document (design.md) or a behaviour spec (spec/….md, "spec §4",
# "spec bottomup-syncer.md"). A reader of the repository has neither, so a
# comment or doc says its point itself or links a document under docs/ or a
# package doc. CHANGELOG.md keeps history as it was written.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

pattern='design\.md|spec/[A-Za-z0-9_.-]+\.md|\bspec [A-Za-z0-9_-]+\.md|\(spec §|\bspec §'
if hits=$(git grep -n -I -E "$pattern" -- . \
	':(exclude)CHANGELOG.md' ':(exclude)hack/verify-references.sh'); then
	echo "references to documents outside the repository:" >&2
	echo "$hits" >&2
	echo "say the point in a few words or link a document under docs/" >&2
	exit 1
fi
