#!/usr/bin/env bash
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
