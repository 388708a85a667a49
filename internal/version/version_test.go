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
	"runtime/debug"
	"strings"
	"testing"
)

func TestFillFromBuild(t *testing.T) {
	tests := []struct {
		name                 string
		linked               Info
		build                debug.BuildInfo
		wantVersion, wantRev string
	}{
		{
			name:        "toolchain stamp",
			build:       buildInfo("v0.3.1", "0123abc", "false"),
			wantVersion: "v0.3.1", wantRev: "0123abc",
		},
		{
			name:        "modified tree",
			build:       buildInfo("(devel)", "0123abc", "true"),
			wantVersion: "", wantRev: "0123abc-dirty",
		},
		{
			name:        "link-time values win",
			linked:      Info{GitVersion: "v1.0.0", GitCommit: "feed"},
			build:       buildInfo("v0.3.1", "0123abc", "true"),
			wantVersion: "v1.0.0", wantRev: "feed",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			info := tt.linked
			fillFromBuild(&info, &tt.build)
			if info.GitVersion != tt.wantVersion || info.GitCommit != tt.wantRev {
				t.Fatalf("got %q %q, want %q %q", info.GitVersion, info.GitCommit, tt.wantVersion, tt.wantRev)
			}
		})
	}
}

func TestGetNeverEmpty(t *testing.T) {
	info := Get()
	for name, v := range map[string]string{"version": info.GitVersion, "commit": info.GitCommit, "date": info.BuildDate, "go": info.GoVersion} {
		if v == "" {
			t.Errorf("%s is empty", name)
		}
	}
	if !strings.Contains(info.String(), info.GoVersion) {
		t.Errorf("String() = %q lacks the Go version", info.String())
	}
}

func buildInfo(version, revision, modified string) debug.BuildInfo {
	return debug.BuildInfo{Main: debug.Module{Version: version}, Settings: []debug.BuildSetting{
		{Key: "vcs.revision", Value: revision}, {Key: "vcs.modified", Value: modified},
	}}
}
