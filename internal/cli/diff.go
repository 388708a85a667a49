/*
Copyright The Kubeocean Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

package cli

import (
	"fmt"
	"strings"
)

// diffContext is how many unchanged lines a hunk shows around a change.
const diffContext = 3

// unifiedDiff is a unified diff of two texts by lines (longest common
// subsequence; the objects bind prints are a few hundred lines at most),
// or "" when they are equal.
func unifiedDiff(fromName, toName, from, to string) string {
	a, b := splitLines(from), splitLines(to)
	ops := diffLines(a, b)
	var out strings.Builder
	for start := 0; start < len(ops); {
		// Find the next change, then extend the hunk while changes are
		// closer than twice the context.
		first := start
		for first < len(ops) && ops[first].kind == ' ' {
			first++
		}
		if first == len(ops) {
			break
		}
		lo := max(first-diffContext, start)
		hi, equal := first, 0
		for i := first; i < len(ops); i++ {
			if ops[i].kind != ' ' {
				hi, equal = i+1, 0
				continue
			}
			if equal++; equal > 2*diffContext {
				break
			}
		}
		hi = min(hi+diffContext, len(ops))
		if out.Len() == 0 {
			fmt.Fprintf(&out, "--- %s\n+++ %s\n", fromName, toName)
		}
		writeHunk(&out, ops[lo:hi])
		start = hi
	}
	return out.String()
}

type diffOp struct {
	kind         byte // ' ', '-', '+'
	line         string
	aLine, bLine int // 1-based line numbers in a and b where the op starts
}

func writeHunk(out *strings.Builder, ops []diffOp) {
	aCount, bCount := 0, 0
	for _, op := range ops {
		if op.kind != '+' {
			aCount++
		}
		if op.kind != '-' {
			bCount++
		}
	}
	aStart, bStart := ops[0].aLine, ops[0].bLine
	if aCount == 0 {
		aStart--
	}
	if bCount == 0 {
		bStart--
	}
	fmt.Fprintf(out, "@@ -%d,%d +%d,%d @@\n", aStart, aCount, bStart, bCount)
	for _, op := range ops {
		fmt.Fprintf(out, "%c%s\n", op.kind, op.line)
	}
}

func diffLines(a, b []string) []diffOp {
	// lcs[i][j]: length of the longest common subsequence of a[i:], b[j:].
	lcs := make([][]int, len(a)+1)
	for i := range lcs {
		lcs[i] = make([]int, len(b)+1)
	}
	for i := len(a) - 1; i >= 0; i-- {
		for j := len(b) - 1; j >= 0; j-- {
			if a[i] == b[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	var ops []diffOp
	i, j := 0, 0
	for i < len(a) || j < len(b) {
		switch {
		case i < len(a) && j < len(b) && a[i] == b[j]:
			ops = append(ops, diffOp{' ', a[i], i + 1, j + 1})
			i, j = i+1, j+1
		case i < len(a) && (j == len(b) || lcs[i+1][j] >= lcs[i][j+1]):
			ops = append(ops, diffOp{'-', a[i], i + 1, j + 1})
			i++
		default:
			ops = append(ops, diffOp{'+', b[j], i + 1, j + 1})
			j++
		}
	}
	return ops
}

func splitLines(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(strings.TrimSuffix(s, "\n"), "\n")
}
