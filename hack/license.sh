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

# Shared by verify-license.sh and update-license.sh (sourced, not run): which
# files carry the license header, what it is, and how to read and add it.
# The header is hack/boilerplate.go.txt, the one the code generators write;
# shell scripts carry the same words as # comments, after the #! line. Go
# files may start with a //go:build block, which the header follows, as in
# the generated files.

license_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
license_go=$(cat "$license_root/hack/boilerplate.go.txt")
# The comment's words without /* and */, each line behind "# ".
license_sh=$(printf '%s\n' "$license_go" | grep -v -x -e '/\*' -e '\*/' | sed -e 's/^/# /' -e 's/ $//')

# license_files prints the hand-written Go files and shell scripts: not the
# generated ones (generated/, zz_generated*, "Code generated ... DO NOT
# EDIT."), not test data, not the pinned tools modules.
license_files() {
  git -C "$license_root" ls-files -- '*.go' '*.sh' |
    grep -v -E '(^|/)(generated|testdata)/|(^|/)zz_generated|^hack/tools/' |
    while IFS= read -r f; do
      [ -f "$license_root/$f" ] || continue
      case $f in *.go) grep -q -m1 -E '^// Code generated .* DO NOT EDIT\.$' "$license_root/$f" && continue ;; esac
      echo "$f"
    done
}

# license_lead_lines counts the lines kept before the header: the #! line
# of a script, or the //go:build block of a Go file and its blank line.
license_lead_lines() { # file
  case $1 in
    *.sh) head -1 "$1" | grep -q '^#!' && echo 1 || echo 0 ;;
    *.go) awk '/^\/\/go:build |^\/\/ \+build / { n++; next }
               n && /^$/ { n++; exit } { exit } END { print n + 0 }' "$1" ;;
  esac
}

license_header_for() { # file
  case $1 in *.sh) echo "$license_sh" ;; *) echo "$license_go" ;; esac
}

# has_license: the header follows the lead at once (no blank line before it
# in a script; in a Go file the //go:build block ends with one).
has_license() { # file
  local file=$1 lead want got
  lead=$(license_lead_lines "$file")
  want=$(license_header_for "$file")
  got=$(tail -n +"$((lead + 1))" "$file" | head -n "$(wc -l <<<"$want")")
  [ "$got" = "$want" ]
}

# add_license writes the header after the lead and a blank line after it.
add_license() { # file
  local file=$1 lead tmp
  lead=$(license_lead_lines "$file")
  tmp=$(mktemp "$file.XXXXXX")
  {
    head -n "$lead" "$file"
    license_header_for "$file"
    echo
    tail -n +"$((lead + 1))" "$file"
  } >"$tmp"
  chmod --reference="$file" "$tmp"
  mv "$tmp" "$file"
}
