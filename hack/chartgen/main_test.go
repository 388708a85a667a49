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
	"reflect"
	"strings"
	"testing"
)

func TestEscapeTemplates(t *testing.T) {
	got := escapeTemplates("name: {{ .Name }}\nargs: {{ json .Args }}\n")
	want := "name: {{`{{ .Name }}`}}\nargs: {{`{{ json .Args }}`}}\n"
	if got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestSubstitutePodSecurity(t *testing.T) {
	in := "# confined to kubeocean-worker\nresourceNames: [\"kubeocean-worker\"]\nother: kubeocean-worker-2\nflow: kubeocean-syncer.kubeocean-worker\nrole: kubeocean-syncer:kubeocean-worker\nmetadata:\n  name: kubeocean-worker\n  labels:\n    pod-security.kubernetes.io/enforce: baseline\n    pod-security.kubernetes.io/enforce-version: \"latest\"\n"
	got := substituteMountNamespace(substitutePodSecurity(in))
	for _, want := range []string{
		"  name: {{ .Values.mountNamespace.name }}\n",
		"# confined to kubeocean-worker\n",
		`resourceNames: ["{{ .Values.mountNamespace.name }}"]`,
		"other: kubeocean-worker-2\n",
		"flow: kubeocean-syncer.{{ .Values.mountNamespace.name }}\n",
		"role: kubeocean-syncer:{{ .Values.mountNamespace.name }}\n",
		`    pod-security.kubernetes.io/enforce: {{ index .Values.mountNamespace.podSecurity "enforce" | default "baseline" | quote }}`,
		`    pod-security.kubernetes.io/enforce-version: {{ index .Values.mountNamespace.podSecurity "enforce-version" | default "latest" | quote }}`,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("missing %q in\n%s", want, got)
		}
	}
}

func TestReplaceResources(t *testing.T) {
	in := "      containers:\n      - name: x\n        resources:\n          requests:\n            cpu: 1\n\n          limits: {}\n        securityContext: {}\n"
	got, err := replaceResources(in, ".Values.x.resources", 4)
	if err != nil {
		t.Fatal(err)
	}
	want := "      containers:\n      - name: x\n" +
		"        {{- with .Values.x.resources }}\n" +
		"        resources: {{- toYaml . | nindent 14 }}\n" +
		"        {{- else }}\n" +
		"        resources:\n          requests:\n            cpu: 1\n\n          limits: {}\n" +
		"        {{- end }}\n" +
		"        securityContext: {}\n"
	if got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	if _, err := replaceResources("a: 1\n", ".Values.x", 0); err == nil {
		t.Error("no resources block: want an error")
	}
}

func TestSubstituteManagerRefusesUnknownShape(t *testing.T) {
	if _, err := substituteManager("image: example/other:v1\n"); err == nil {
		t.Error("a manager without the Kubeocean images: want an error")
	}
}

func TestSubstituteSystemNamespace(t *testing.T) {
	in := "# kubeocean-system stays in comments\n" +
		"expression: request.userInfo.username == 'system:serviceaccount:kubeocean-system:kubeocean-syncer'\n" +
		"other: kubeocean-system-2 && request.namespace != 'kubeocean-system'\n"
	want := "# kubeocean-system stays in comments\n" +
		`expression: request.userInfo.username == 'system:serviceaccount:{{ include "kubeocean.namespace" . }}:kubeocean-syncer'` + "\n" +
		`other: kubeocean-system-2 && request.namespace != '{{ include "kubeocean.namespace" . }}'` + "\n"
	if got := substituteSystemNamespace(in); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}

func TestSubstituteQuota(t *testing.T) {
	in := "# counts, not compute\napiVersion: v1\nkind: ResourceQuota\nmetadata:\n  name: q\n  namespace: kubeocean-worker\nspec:\n  hard:\n    count/pods: \"10\"\n    secrets: \"20\"\n  scopes: []\n"
	got, err := substituteQuota(in)
	if err != nil {
		t.Fatal(err)
	}
	want := "{{- if .Values.mountNamespace.quota.enabled }}\n" +
		"# counts, not compute\napiVersion: v1\nkind: ResourceQuota\nmetadata:\n  name: q\n  namespace: kubeocean-worker\nspec:\n" +
		"  hard: {{- toYaml .Values.mountNamespace.quota.hard | nindent 4 }}\n" +
		"  scopes: []\n" +
		"{{- end }}\n"
	if got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	if hard := defaults["mountNamespace.quota.hard"]; !reflect.DeepEqual(hard, map[string]string{"count/pods": "10", "secrets": "20"}) {
		t.Errorf("default of mountNamespace.quota.hard = %v, want the manifest's limits", hard)
	}
	if _, err := substituteQuota("kind: ResourceQuota\nspec: {}\n"); err == nil {
		t.Error("a quota without limits: want an error")
	}
}
