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

package main

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/format"
	"go/parser"
	"go/token"
	"slices"
	"strconv"
	"strings"
)

// class is an import's group; groups appear in this order.
type class int

const (
	standard class = iota
	thirdParty
	local
)

var classNames = [...]string{"standard library", "third-party", "local"}

func classify(path, localPrefix string) class {
	if path == localPrefix || strings.HasPrefix(path, localPrefix+"/") {
		return local
	}
	// As goimports decides it: a standard package's first element has no dot.
	first, _, _ := strings.Cut(path, "/")
	if !strings.Contains(first, ".") {
		return standard
	}
	return thirdParty
}

// block is one parenthesised import declaration, its specs split into the
// groups the blank lines make.
type block struct {
	decl   *ast.GenDecl
	groups [][]*ast.ImportSpec
}

func blocks(fset *token.FileSet, f *ast.File) []block {
	var out []block
	for _, d := range f.Decls {
		gd, ok := d.(*ast.GenDecl)
		if !ok || gd.Tok != token.IMPORT || !gd.Lparen.IsValid() {
			continue
		}
		b := block{decl: gd}
		lastLine := 0
		for _, s := range gd.Specs {
			spec := s.(*ast.ImportSpec)
			line := fset.Position(specStart(spec)).Line
			if len(b.groups) == 0 || line > lastLine+1 {
				b.groups = append(b.groups, nil)
			}
			b.groups[len(b.groups)-1] = append(b.groups[len(b.groups)-1], spec)
			lastLine = fset.Position(specEnd(spec)).Line
		}
		out = append(out, b)
	}
	return out
}

func specStart(s *ast.ImportSpec) token.Pos {
	if s.Doc != nil {
		return s.Doc.Pos()
	}
	return s.Pos()
}

func specEnd(s *ast.ImportSpec) token.Pos {
	if s.Comment != nil {
		return s.Comment.End()
	}
	return s.End()
}

func specClass(s *ast.ImportSpec, localPrefix string) class {
	path, err := strconv.Unquote(s.Path.Value)
	if err != nil {
		return thirdParty
	}
	return classify(path, localPrefix)
}

// problems says what is wrong with a file's import groups: a group that
// mixes classes, a class split over groups, or classes out of order. No
// problems means the file is grouped as the house wants.
func problems(fset *token.FileSet, f *ast.File, localPrefix string) []string {
	var out []string
	for _, b := range blocks(fset, f) {
		var seen []class
		for _, g := range b.groups {
			c := specClass(g[0], localPrefix)
			for _, s := range g[1:] {
				if sc := specClass(s, localPrefix); sc != c {
					out = append(out, fmt.Sprintf("%d: %s import %s in a group with %s imports",
						fset.Position(s.Pos()).Line, classNames[sc], s.Path.Value, classNames[c]))
				}
			}
			switch {
			case slices.Contains(seen, c):
				out = append(out, fmt.Sprintf("%d: a second group of %s imports", fset.Position(g[0].Pos()).Line, classNames[c]))
			case len(seen) > 0 && seen[len(seen)-1] > c:
				out = append(out, fmt.Sprintf("%d: %s imports after %s imports", fset.Position(g[0].Pos()).Line, classNames[c], classNames[seen[len(seen)-1]]))
			}
			seen = append(seen, c)
		}
	}
	return out
}

// fix regroups every import block: one group per class, in order, each
// spec keeping its comments and, within its class, its place. gofmt then
// sorts each group. A block with a comment of its own (not a spec's) is
// left alone, since moving specs around it could change what it says.
func fix(src []byte, localPrefix string) ([]byte, error) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "", src, parser.ParseComments|parser.ImportsOnly)
	if err != nil {
		return nil, err
	}
	var out bytes.Buffer
	done := 0
	for _, b := range blocks(fset, f) {
		if floatingComment(f, b.decl) {
			return nil, fmt.Errorf("line %d: a comment in the import block belongs to no import; regroup by hand", fset.Position(b.decl.Pos()).Line)
		}
		byClass := make([][]string, len(classNames))
		for _, s := range b.decl.Specs {
			spec := s.(*ast.ImportSpec)
			text := string(src[fset.Position(specStart(spec)).Offset:fset.Position(specEnd(spec)).Offset])
			c := specClass(spec, localPrefix)
			byClass[c] = append(byClass[c], "\t"+text)
		}
		var groups []string
		for _, g := range byClass {
			if len(g) > 0 {
				groups = append(groups, strings.Join(g, "\n"))
			}
		}
		out.Write(src[done : fset.Position(b.decl.Lparen).Offset+1])
		out.WriteString("\n" + strings.Join(groups, "\n\n") + "\n")
		done = fset.Position(b.decl.Rparen).Offset
	}
	out.Write(src[done:])
	return format.Source(out.Bytes())
}

func floatingComment(f *ast.File, d *ast.GenDecl) bool {
	attached := map[*ast.CommentGroup]bool{}
	for _, s := range d.Specs {
		spec := s.(*ast.ImportSpec)
		attached[spec.Doc], attached[spec.Comment] = true, true
	}
	for _, cg := range f.Comments {
		if cg.Pos() > d.Lparen && cg.End() < d.Rparen && !attached[cg] {
			return true
		}
	}
	return false
}
