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
	"bufio"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
)

const repoRoot = "../.."

type dockerInstr struct{ cmd, args string }

type dockerStage struct {
	name   string // "AS name", or empty
	from   string // image or stage, without --platform and "AS name"
	instrs []dockerInstr
}

// parseDockerfile understands just enough of the syntax used here: comments,
// line continuations and one instruction per logical line.
func parseDockerfile(t *testing.T, path string) []dockerStage {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	var stages []dockerStage
	var logical string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(line, "#") || (line == "" && logical == "") {
			continue
		}
		if cont, ok := strings.CutSuffix(line, `\`); ok {
			logical += cont + " "
			continue
		}
		logical += line
		cmd, args, _ := strings.Cut(logical, " ")
		logical = ""
		cmd, args = strings.ToUpper(cmd), strings.Join(strings.Fields(args), " ")
		if cmd == "FROM" {
			fields := slices.DeleteFunc(strings.Fields(args), func(s string) bool { return strings.HasPrefix(s, "--") })
			st := dockerStage{from: fields[0]}
			if len(fields) == 3 && strings.EqualFold(fields[1], "AS") {
				st.name = fields[2]
			}
			stages = append(stages, st)
			continue
		}
		if len(stages) == 0 {
			t.Fatalf("%s: %s before FROM", path, cmd)
		}
		stages[len(stages)-1].instrs = append(stages[len(stages)-1].instrs, dockerInstr{cmd, args})
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return stages
}

// resolve returns the stage as Docker runs it: the instructions of the
// stages it is built FROM first, its own after, and the image at the root.
func resolve(t *testing.T, stages []dockerStage, s dockerStage) dockerStage {
	t.Helper()
	for depth := 0; ; depth++ {
		i := slices.IndexFunc(stages, func(p dockerStage) bool { return p.name != "" && p.name == s.from })
		if i < 0 {
			return s
		}
		if depth > len(stages) {
			t.Fatalf("stage %s: FROM loop", s.name)
		}
		p := stages[i]
		s = dockerStage{name: s.name, from: p.from, instrs: append(slices.Clone(p.instrs), s.instrs...)}
	}
}

func (s dockerStage) all(cmd string) []string {
	var out []string
	for _, in := range s.instrs {
		if in.cmd == cmd {
			out = append(out, in.args)
		}
	}
	return out
}

// last mirrors Docker: only the last USER/ENTRYPOINT/WORKDIR takes effect.
func (s dockerStage) last(t *testing.T, cmd string) string {
	t.Helper()
	all := s.all(cmd)
	if len(all) == 0 {
		t.Fatalf("target has no %s", cmd)
	}
	return all[len(all)-1]
}

// TestDockerfileMatchesTable keeps the Dockerfile and images.go, the one
// definition of what each image holds, from drifting apart: one target per
// image and no other, each holding the table's binaries where the builder
// puts them, with the builder's entrypoint, user, workdir and labels; and a
// build stage that compiles every command statically.
func TestDockerfileMatchesTable(t *testing.T) {
	stages := parseDockerfile(t, filepath.Join(repoRoot, "Dockerfile"))
	byName := map[string]dockerStage{}
	for _, s := range stages {
		byName[s.name] = s
	}
	build, ok := byName["build"]
	if !ok {
		t.Fatal("no stage named build")
	}
	checkBuildStage(t, build, commands())
	var targets []string
	for _, s := range stages {
		if s.name != "build" && s.name != "base" {
			targets = append(targets, s.name)
		}
	}
	if !slices.Equal(targets, imageNames()) {
		t.Errorf("Dockerfile targets %q, want images.go's %q (and the stages build and base)", targets, imageNames())
	}
	for _, spec := range images {
		t.Run(spec.name, func(t *testing.T) {
			target, ok := byName[spec.name]
			if !ok {
				t.Fatalf("no target %s", spec.name)
			}
			tag, err := name.NewTag("ghcr.io/kubeocean/"+spec.name+":v0", name.StrictValidation)
			if err != nil {
				t.Fatal(err)
			}
			opts := &options{tag: tag, source: defaultSource, platform: v1.Platform{OS: "linux", Architecture: "amd64"}}
			spec.fromBinDir(opts, "/out")
			checkTarget(t, resolve(t, stages, target), opts)
		})
	}
}

func checkTarget(t *testing.T, final dockerStage, opts *options) {
	t.Helper()
	want := imageConfig(opts).Config
	if !strings.HasPrefix(final.from, "gcr.io/distroless/static") || !strings.Contains(final.from, ":nonroot") {
		t.Errorf("final base %q, want distroless static :nonroot", final.from)
	}
	if user := final.last(t, "USER"); user != want.User || strings.HasPrefix(user, "0") || strings.HasPrefix(user, "root") {
		t.Errorf("USER %q, want %q", user, want.User)
	}
	var entrypoint []string
	if err := json.Unmarshal([]byte(final.last(t, "ENTRYPOINT")), &entrypoint); err != nil {
		t.Fatalf("ENTRYPOINT must be exec (JSON) form: %v", err)
	}
	if !slices.Equal(entrypoint, want.Entrypoint) || len(final.all("CMD")) != 0 {
		t.Errorf("ENTRYPOINT %q CMD %q, want %q and no CMD", entrypoint, final.all("CMD"), want.Entrypoint)
	}
	if wd := final.last(t, "WORKDIR"); wd != want.WorkingDir {
		t.Errorf("WORKDIR %q, want %q", wd, want.WorkingDir)
	}
	// Exactly the builder's files: the entrypoint, then the companions under
	// /usr/local/bin, where --extra-binary puts them.
	wantCopies := []string{"--from=build " + opts.binary + " " + want.Entrypoint[0]}
	for _, extra := range opts.extras {
		wantCopies = append(wantCopies, "--from=build "+extra+" /usr/local/bin/"+filepath.Base(extra))
	}
	if copies := final.all("COPY"); !slices.Equal(copies, wantCopies) {
		t.Errorf("COPY %q, want %q", copies, wantCopies)
	}
	labels := strings.Join(final.all("LABEL"), " ")
	for k, v := range want.Labels {
		if k == "org.opencontainers.image.version" {
			v = "${VERSION}"
		}
		if !strings.Contains(labels, k+`="`+v+`"`) {
			t.Errorf("LABEL lacks %s=%q: %s", k, v, labels)
		}
	}
}

func checkBuildStage(t *testing.T, build dockerStage, cmds []string) {
	t.Helper()
	goVersion := goDirective(t)
	m := regexp.MustCompile(`^golang:(\d+\.\d+)\.\d+(-[a-z]+)?(@sha256:[0-9a-f]{64})?$`).FindStringSubmatch(build.from)
	if m == nil || m[1] != goVersion {
		t.Errorf("build base %q, want golang:%s.<patch> (pinned, matching go.mod)", build.from, goVersion)
	}
	run := strings.Join(build.all("RUN"), " ")
	for _, s := range []string{"CGO_ENABLED=0", "-trimpath", `-ldflags "-s -w"`, "-o /out/ "} {
		if !strings.Contains(run, s) {
			t.Errorf("build stage RUN lacks %q", s)
		}
	}
	copied := strings.Join(build.all("COPY"), "\n")
	for _, cmd := range cmds {
		if !regexp.MustCompile(`\./cmd/` + regexp.QuoteMeta(cmd) + `(\s|$)`).MatchString(run) {
			t.Errorf("build stage RUN does not build ./cmd/%s", cmd)
		}
		for _, dir := range localPackageDirs(t, cmd) {
			if !strings.Contains(copied, dir+"/ "+dir+"/") {
				t.Errorf("build stage does not COPY %s/, which ./cmd/%s imports", dir, cmd)
			}
		}
	}
}

func goDirective(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^go (\d+\.\d+)`).FindSubmatch(b)
	if m == nil {
		t.Fatal("go.mod has no go directive")
	}
	return string(m[1])
}

// localPackageDirs lists the top-level repository directories the binary is
// compiled from, so a new import of, say, internal/ breaks this test rather
// than the Docker build.
func localPackageDirs(t *testing.T, bin string) []string {
	t.Helper()
	cmd := exec.Command("go", "list", "-deps", "-f", "{{if .Module}}{{if .Module.Main}}{{.Dir}}{{end}}{{end}}", "./cmd/"+bin)
	cmd.Dir = repoRoot
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderrOf(err))
	}
	root, err := filepath.Abs(repoRoot)
	if err != nil {
		t.Fatal(err)
	}
	var dirs []string
	for _, d := range strings.Fields(string(out)) {
		rel, err := filepath.Rel(root, d)
		if err != nil {
			t.Fatal(err)
		}
		top, _, _ := strings.Cut(filepath.ToSlash(rel), "/")
		if !slices.Contains(dirs, top) {
			dirs = append(dirs, top)
		}
	}
	if len(dirs) == 0 {
		t.Fatal("go list found no packages of this module")
	}
	return dirs
}

func stderrOf(err error) []byte {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.Stderr
	}
	return nil
}
