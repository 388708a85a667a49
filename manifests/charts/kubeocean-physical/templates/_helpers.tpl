{{/* Refuses values the templates cannot render correctly. */}}
{{- define "kubeocean-physical.validate" -}}
{{- if ne .Release.Namespace "kubeocean-system" }}
{{- fail (printf "install into the namespace kubeocean-system (--namespace kubeocean-system --create-namespace), not %s" .Release.Namespace) }}
{{- end }}
{{- if eq .Values.mountNamespace.name "kubeocean-system" }}
{{- fail "mountNamespace.name must not be kubeocean-system, where the syncer's identity lives" }}
{{- end }}
{{- end }}
