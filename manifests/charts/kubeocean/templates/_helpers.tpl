{{/* The namespace the manifests name; the chart is installed into it. */}}
{{- define "kubeocean.namespace" -}}kubeocean-system{{- end }}

{{/* Refuses values the templates cannot render correctly. */}}
{{- define "kubeocean.validate" -}}
{{- if ne .Release.Namespace (include "kubeocean.namespace" .) }}
{{- fail (printf "install into the namespace %s (--namespace %s --create-namespace), not %s" (include "kubeocean.namespace" .) (include "kubeocean.namespace" .) .Release.Namespace) }}
{{- end }}
{{- if not (has .Values.syncerMode (list "deployment" "in-process")) }}
{{- fail (printf "syncerMode must be deployment or in-process, not %q" .Values.syncerMode) }}
{{- end }}
{{- if and .Values.priorityClass.create (not .Values.priorityClass.name) }}
{{- fail "priorityClass.create needs priorityClass.name" }}
{{- end }}
{{- end }}

{{- define "kubeocean.image" -}}
{{- $tag := .image.tag | default .chart.AppVersion }}
{{- if eq $tag "latest" }}{{ fail (printf "%s: pin a tag, not latest" .image.repository) }}{{ end }}
{{- printf "%s:%s" .image.repository $tag }}
{{- end }}

{{- define "kubeocean.managerImage" -}}
{{ include "kubeocean.image" (dict "image" .Values.manager.image "chart" .Chart) }}
{{- end }}

{{- define "kubeocean.syncerImage" -}}
{{ include "kubeocean.image" (dict "image" .Values.syncer.image "chart" .Chart) }}
{{- end }}

{{/* Labels of the objects only the chart has (not the generated ones). */}}
{{- define "kubeocean.labels" -}}
app.kubernetes.io/part-of: kubeocean
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end }}
