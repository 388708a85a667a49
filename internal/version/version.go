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
