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
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"sigs.k8s.io/yaml"
)

// templateAction is a Go template action already in a manifest, such as the
// fields of the syncer template.
var templateAction = regexp.MustCompile(`\{\{.*?\}\}`)

// escapeTemplates makes Helm print the manifest's own {{ ... }} as written:
// each becomes a Helm action printing a raw string.
func escapeTemplates(text string) string {
	return templateAction.ReplaceAllStringFunc(text, func(action string) string {
		return "{{`" + action + "`}}"
	})
}

var (
	// image is a Kubeocean image reference, as an image field or a flag value.
	image = regexp.MustCompile(`[^\s="']+/kubeocean-(manager|syncer):[^\s"']+`)
	// syncerModeFlag is the manager's choice of syncer mode.
	syncerModeFlag = regexp.MustCompile(`(?m)^(\s*- --syncer-mode=)deployment\s*$`)
	// serviceAccountField is in the pod spec, where the priority class goes.
	serviceAccountField = regexp.MustCompile(`(?m)^( *)serviceAccountName: .*$`)
	// resourcesField starts a container's resources block.
	resourcesField = regexp.MustCompile(`(?m)^( *)resources:\s*$`)
)

// substituteManager puts the values into the manager's Deployment: its and
// the syncer's image, the syncer mode and the manager's resources.
func substituteManager(text string) (string, error) {
	found := map[string]bool{}
	text = image.ReplaceAllStringFunc(text, func(ref string) string {
		which := image.FindStringSubmatch(ref)[1]
		found[which] = true
		expectDefault(which+".image.repository", ref[:strings.LastIndex(ref, ":")])
		return fmt.Sprintf(`{{ include "kubeocean.%sImage" . }}`, which)
	})
	if !found["manager"] || !found["syncer"] {
		return "", fmt.Errorf("want the manager's image and its --syncer-image, found %v", found)
	}
	if len(syncerModeFlag.FindAllString(text, -1)) != 1 {
		return "", fmt.Errorf("want one --syncer-mode=deployment argument")
	}
	text = syncerModeFlag.ReplaceAllString(text, "${1}{{ .Values.syncerMode }}")
	if len(serviceAccountField.FindAllString(text, -1)) != 1 {
		return "", fmt.Errorf("want one serviceAccountName in the pod spec")
	}
	text = serviceAccountField.ReplaceAllString(text, "${0}\n{{- with .Values.priorityClass.name }}\n${1}priorityClassName: {{ . }}\n{{- end }}")
	return replaceResources(text, ".Values.manager.resources", 0)
}

// replaceResources makes the one resources block of text a value: when it
// is set, its YAML replaces the block; when empty, the block stays as the
// manifest writes it (the syncer template is text, whose keys toYaml would
// reorder). extraIndent is what the caller indents text by afterwards.
func replaceResources(text, value string, extraIndent int) (string, error) {
	lines := strings.Split(text, "\n")
	var out []string
	replaced := 0
	for i := 0; i < len(lines); i++ {
		m := resourcesField.FindStringSubmatch(lines[i])
		if m == nil {
			out = append(out, lines[i])
			continue
		}
		indent := len(m[1])
		out = append(out, fmt.Sprintf("%s{{- with %s }}", m[1], value),
			fmt.Sprintf("%sresources: {{- toYaml . | nindent %d }}", m[1], indent+extraIndent+2),
			m[1]+"{{- else }}", lines[i])
		for i+1 < len(lines) && indentOf(lines[i+1]) > indent {
			i++
			out = append(out, lines[i])
		}
		out = append(out, m[1]+"{{- end }}")
		replaced++
	}
	if replaced != 1 {
		return "", fmt.Errorf("want one resources block, found %d", replaced)
	}
	return strings.Join(out, "\n"), nil
}

// indentOf counts leading spaces; a blank line counts as deeper, so it stays
// inside a block.
func indentOf(line string) int {
	if strings.TrimSpace(line) == "" {
		return 1 << 30
	}
	return len(line) - len(strings.TrimLeft(line, " "))
}

// withNamespace checks that a document of a kustomization with a
// namespace names it already, so that the chart renders it unchanged.
func withNamespace(d document, namespace string) error {
	if namespace != "" && d.key.namespace != namespace {
		return fmt.Errorf("%s: the kustomization sets namespace %s; name it in the manifest too", d.key, namespace)
	}
	return nil
}

// configMapTemplate renders a ConfigMap that the kustomization generates
// from files: the syncer templates, which are Go templates themselves, with
// the syncer's resources a value.
func configMapTemplate(dir string, gen configMapGenerator, namespace string) (string, error) {
	var b strings.Builder
	fmt.Fprintf(&b, "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s\n", gen.Name)
	if namespace != "" {
		fmt.Fprintf(&b, "  namespace: %s\n", namespace)
	}
	b.WriteString("data:\n")
	for _, f := range gen.Files {
		if strings.Contains(f, "=") {
			return "", fmt.Errorf("configMapGenerator %s: key=file entries are not supported", gen.Name)
		}
		data, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			return "", err
		}
		text := escapeTemplates(string(data))
		if strings.HasPrefix(filepath.Base(f), "deployment") {
			if text, err = replaceResources(text, ".Values.syncer.resources", 4); err != nil {
				return "", fmt.Errorf("%s: %w", f, err)
			}
		}
		fmt.Fprintf(&b, "  %s: |\n", filepath.Base(f))
		for _, line := range strings.Split(strings.TrimSuffix(text, "\n"), "\n") {
			if line == "" {
				b.WriteString("\n")
				continue
			}
			b.WriteString("    " + line + "\n")
		}
	}
	return b.String(), nil
}

// mountNamespaceRef is the mount namespace as a whole word of a YAML value:
// a name, a namespace, an item of resourceNames, a part of a name after
// ':' or '.' (kubeocean-syncer:kubeocean-worker).
var mountNamespaceRef = regexp.MustCompile(`(^|[^a-z0-9-])` + regexp.QuoteMeta(mountNamespace) + `([^a-z0-9-]|$)`)

// substituteMountNamespace replaces the mount namespace everywhere but in
// comments.
func substituteMountNamespace(text string) string {
	return replaceOutsideComments(text, mountNamespaceRef, "${1}{{ .Values.mountNamespace.name }}${2}")
}

// systemNamespaceRef is Kubeocean's namespace as a whole word of a YAML
// value, e.g. in system:serviceaccount:kubeocean-system:kubeocean-syncer.
var systemNamespaceRef = regexp.MustCompile(`(^|[^a-z0-9.-])` + regexp.QuoteMeta(systemNamespace) + `([^a-z0-9.-]|$)`)

// substituteSystemNamespace replaces Kubeocean's namespace by the chart's
// everywhere but in comments.
func substituteSystemNamespace(text string) string {
	return replaceOutsideComments(text, systemNamespaceRef, "${1}{{ include \"kubeocean.namespace\" . }}${2}")
}

// replaceOutsideComments replaces re by repl in every line that is not a
// comment.
func replaceOutsideComments(text string, re *regexp.Regexp, repl string) string {
	lines := strings.Split(text, "\n")
	for i, line := range lines {
		if strings.HasPrefix(strings.TrimSpace(line), "#") {
			continue
		}
		lines[i] = re.ReplaceAllString(line, repl)
	}
	return strings.Join(lines, "\n")
}

// podSecurityLabel is one Pod Security admission label of a namespace.
var podSecurityLabel = regexp.MustCompile(`(?m)^(\s+)pod-security\.kubernetes\.io/((?:enforce|audit|warn)(?:-version)?):\s*(\S+)\s*$`)

// substitutePodSecurity lets mountNamespace.podSecurity.<mode> override each
// level the manifest sets, which stays the default.
func substitutePodSecurity(text string) string {
	return podSecurityLabel.ReplaceAllStringFunc(text, func(line string) string {
		m := podSecurityLabel.FindStringSubmatch(line)
		level := strings.Trim(m[3], `"'`)
		return fmt.Sprintf(`%spod-security.kubernetes.io/%s: {{ index .Values.mountNamespace.podSecurity %q | default %q | quote }}`,
			m[1], m[2], m[2], level)
	})
}

// hardField starts a ResourceQuota's spec.hard block.
var hardField = regexp.MustCompile(`(?m)^( *)hard:\s*$`)

// substituteQuota makes the mount namespace's ResourceQuota optional
// (mountNamespace.quota.enabled) and its limits a value
// (mountNamespace.quota.hard), whose defaults are the manifest's.
func substituteQuota(text string) (string, error) {
	var quota struct {
		Spec struct {
			Hard map[string]string `json:"hard"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal([]byte(text), &quota); err != nil {
		return "", err
	}
	if len(quota.Spec.Hard) == 0 {
		return "", fmt.Errorf("want a ResourceQuota with spec.hard")
	}
	expectDefault("mountNamespace.quota.enabled", true)
	expectDefault("mountNamespace.quota.hard", quota.Spec.Hard)
	lines := strings.Split(text, "\n")
	var out []string
	replaced := 0
	for i := 0; i < len(lines); i++ {
		m := hardField.FindStringSubmatch(lines[i])
		if m == nil {
			out = append(out, lines[i])
			continue
		}
		indent := len(m[1])
		out = append(out, fmt.Sprintf("%shard: {{- toYaml .Values.mountNamespace.quota.hard | nindent %d }}", m[1], indent+2))
		for i+1 < len(lines) && indentOf(lines[i+1]) > indent {
			i++
		}
		replaced++
	}
	if replaced != 1 {
		return "", fmt.Errorf("want one hard block, found %d", replaced)
	}
	return "{{- if .Values.mountNamespace.quota.enabled }}\n" + ensureNewline(strings.Join(out, "\n")) + "{{- end }}\n", nil
}
