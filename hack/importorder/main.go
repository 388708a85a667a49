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

// Command importorder checks that Go files group their imports as the house
// does: the standard library, then third-party modules, then
// github.com/kubeocean/kubeocean, each class one group, the groups apart by
// blank lines. gofmt sorts within a group; this checks the groups.
//
//	go run ./hack/importorder [-fix] [dir...]
//
// It lists each file that breaks the rule, with the line and why, and exits
// 1 if there is one. -fix rewrites them instead. Generated code (generated/,
// zz_generated*, "Code generated ... DO NOT EDIT."), testdata and the pinned
// tools modules under hack/tools are skipped.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"go/parser"
	"go/token"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

func main() {
	fixFlag := flag.Bool("fix", false, "regroup the imports of the files that break the rule")
	localPrefix := flag.String("local", "github.com/kubeocean/kubeocean", "import path prefix of the last group")
	flag.Parse()
	roots := flag.Args()
	if len(roots) == 0 {
		roots = []string{"."}
	}
	bad, err := run(roots, *localPrefix, *fixFlag, os.Stdout)
	if err != nil {
		fmt.Fprintln(os.Stderr, "importorder:", err)
		os.Exit(2)
	}
	if bad > 0 && !*fixFlag {
		fmt.Fprintf(os.Stderr, "%d files group their imports otherwise than standard, third-party, %s; run go run ./hack/importorder -fix\n", bad, *localPrefix)
		os.Exit(1)
	}
}

// run checks (or fixes) every Go file under roots and returns how many
// broke the rule.
func run(roots []string, localPrefix string, fixFiles bool, w io.Writer) (int, error) {
	bad := 0
	for _, root := range roots {
		err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() {
				if path != root && skipDir(path) {
					return filepath.SkipDir
				}
				return nil
			}
			if !strings.HasSuffix(path, ".go") || strings.HasPrefix(d.Name(), "zz_generated") {
				return nil
			}
			broke, err := checkFile(path, localPrefix, fixFiles, w)
			if broke {
				bad++
			}
			return err
		})
		if err != nil {
			return bad, err
		}
	}
	return bad, nil
}

func skipDir(path string) bool {
	slash := filepath.ToSlash(path)
	switch filepath.Base(path) {
	case "generated", "testdata", "vendor", "bin", "_output":
		return true
	}
	return strings.HasPrefix(filepath.Base(path), ".") || strings.HasSuffix(slash, "hack/tools")
}

var generatedMarker = regexp.MustCompile(`(?m)^// Code generated .* DO NOT EDIT\.$`)

func checkFile(path, localPrefix string, fixFiles bool, w io.Writer) (bool, error) {
	src, err := os.ReadFile(path)
	if err != nil {
		return false, err
	}
	if generatedMarker.Match(src) {
		return false, nil
	}
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, path, src, parser.ParseComments|parser.ImportsOnly)
	if err != nil {
		return false, err
	}
	probs := problems(fset, f, localPrefix)
	if len(probs) == 0 {
		return false, nil
	}
	if !fixFiles {
		for _, p := range probs {
			fmt.Fprintf(w, "%s:%s\n", path, p)
		}
		return true, nil
	}
	fixed, err := fix(src, localPrefix)
	if err != nil {
		return true, fmt.Errorf("%s: %w", path, err)
	}
	if !bytes.Equal(fixed, src) {
		fmt.Fprintln(w, path)
		return true, os.WriteFile(path, fixed, 0o644)
	}
	return true, nil
}
