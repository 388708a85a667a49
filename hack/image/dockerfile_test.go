package main

import (
	"bufio"
	"encoding/json"
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
	from   string // image, without --platform and "AS name"
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
			fields := strings.Fields(args)
			fields = slices.DeleteFunc(fields, func(s string) bool { return strings.HasPrefix(s, "--") })
			stages = append(stages, dockerStage{from: fields[0]})
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
		t.Fatalf("final stage has no %s", cmd)
	}
	return all[len(all)-1]
}

// TestDockerfilesMatchBuilder keeps cmd/*/Dockerfile and this Go builder from
// drifting apart: same entrypoint, user, workdir and labels in the final
// stage, and the same static build flags in the build stage.
func TestDockerfilesMatchBuilder(t *testing.T) {
	for _, bin := range []string{"kubeocean-manager", "kubeocean-syncer"} {
		t.Run(bin, func(t *testing.T) {
			stages := parseDockerfile(t, filepath.Join(repoRoot, "cmd", bin, "Dockerfile"))
			if len(stages) != 2 {
				t.Fatalf("%d stages, want build + final", len(stages))
			}
			tag, err := name.NewTag("ghcr.io/kubeocean/"+bin+":v0", name.StrictValidation)
			if err != nil {
				t.Fatal(err)
			}
			want := imageConfig(&options{name: bin, tag: tag, source: defaultSource, platform: v1.Platform{OS: "linux", Architecture: "amd64"}}).Config
			checkFinalStage(t, stages[1], want)
			checkBuildStage(t, stages[0], bin)
		})
	}
}

func checkFinalStage(t *testing.T, final dockerStage, want v1.Config) {
	t.Helper()
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
	// The entrypoint first; companions (kubeocean-dns) under /usr/local/bin,
	// where the builder's --extra-binary puts them.
	copies := final.all("COPY")
	if len(copies) == 0 || !strings.HasPrefix(copies[0], "--from=build ") || !strings.HasSuffix(copies[0], " "+want.Entrypoint[0]) {
		t.Errorf("COPY %q, want --from=build ... %s first", copies, want.Entrypoint[0])
	}
	for _, extra := range copies[min(1, len(copies)):] {
		if !strings.HasPrefix(extra, "--from=build ") || !strings.Contains(extra, " /usr/local/bin/") {
			t.Errorf("COPY %q, want --from=build ... /usr/local/bin/<name>", extra)
		}
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

func checkBuildStage(t *testing.T, build dockerStage, bin string) {
	t.Helper()
	goVersion := goDirective(t)
	m := regexp.MustCompile(`^golang:(\d+\.\d+)\.\d+(-[a-z]+)?(@sha256:[0-9a-f]{64})?$`).FindStringSubmatch(build.from)
	if m == nil || m[1] != goVersion {
		t.Errorf("build base %q, want golang:%s.<patch> (pinned, matching go.mod)", build.from, goVersion)
	}
	run := strings.Join(build.all("RUN"), " ")
	for _, s := range []string{"CGO_ENABLED=0", "-trimpath", `-ldflags "-s -w"`, "-o /out/" + bin, "./cmd/" + bin} {
		if !strings.Contains(run, s) {
			t.Errorf("build stage RUN lacks %q", s)
		}
	}
	copied := strings.Join(build.all("COPY"), "\n")
	for _, dir := range localPackageDirs(t, bin) {
		if !strings.Contains(copied, dir+"/ "+dir+"/") {
			t.Errorf("build stage does not COPY %s/, which ./cmd/%s imports", dir, bin)
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
		t.Fatalf("go list: %v", err)
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
