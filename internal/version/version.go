package version

import (
	"fmt"
	"runtime"
	"runtime/debug"
)

// Set with -ldflags -X at link time; empty otherwise.
var (
	gitVersion string
	gitCommit  string
	buildDate  string
)

// Info describes the running binary.
type Info struct {
	GitVersion string `json:"gitVersion"`
	GitCommit  string `json:"gitCommit"`
	BuildDate  string `json:"buildDate"`
	GoVersion  string `json:"goVersion"`
	Platform   string `json:"platform"`
}

// Get returns the running binary's Info.
func Get() Info {
	info := Info{
		GitVersion: gitVersion, GitCommit: gitCommit, BuildDate: buildDate,
		GoVersion: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH,
	}
	if build, ok := debug.ReadBuildInfo(); ok {
		fillFromBuild(&info, build)
	}
	if info.GitVersion == "" {
		info.GitVersion = "v0.0.0-unknown"
	}
	if info.GitCommit == "" {
		info.GitCommit = "unknown"
	}
	if info.BuildDate == "" {
		info.BuildDate = "unknown"
	}
	return info
}

// fillFromBuild fills what the linker did not set from the toolchain's
// stamp.
func fillFromBuild(info *Info, build *debug.BuildInfo) {
	if info.GitVersion == "" && build.Main.Version != "" && build.Main.Version != "(devel)" {
		info.GitVersion = build.Main.Version
	}
	settings := map[string]string{}
	for _, s := range build.Settings {
		settings[s.Key] = s.Value
	}
	if info.GitCommit == "" && settings["vcs.revision"] != "" {
		info.GitCommit = settings["vcs.revision"]
		if settings["vcs.modified"] == "true" {
			info.GitCommit += "-dirty"
		}
	}
	if info.BuildDate == "" {
		info.BuildDate = settings["vcs.time"]
	}
}

// String is the one line that --version prints.
func (i Info) String() string {
	return fmt.Sprintf("%s (commit %s, built %s, %s, %s)", i.GitVersion, i.GitCommit, i.BuildDate, i.GoVersion, i.Platform)
}
