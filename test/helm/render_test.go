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

package helm

import (
	"encoding/json"
	"strings"
	"testing"
)

// pinImages is the value substitution the chart makes with its defaults:
// the :latest of the plain manifests becomes the chart's appVersion.
func pinImages(version string) func(string) string {
	return func(s string) string {
		for _, name := range []string{"kubeocean-manager", "kubeocean-syncer"} {
			s = strings.ReplaceAll(s, "ghcr.io/kubeocean/"+name+":latest", "ghcr.io/kubeocean/"+name+":"+version)
		}
		return s
	}
}

// The release namespace, which `helm install --create-namespace` creates
// and so the charts leave out.
const systemNamespaceKey = "Namespace " + systemNamespace

// TestChartsRenderThePlainManifests: with the defaults (and, for the
// virtual chart, either syncer mode) each chart renders object for object
// what `kubectl apply -k` of the plain manifests applies, images aside.
// The RBAC audit of test/e2e runs on the plain manifests, so it covers what
// the charts install.
func TestChartsRenderThePlainManifests(t *testing.T) {
	version := appVersion(t, virtualChart)
	if v := appVersion(t, physicalChart); v != version {
		t.Fatalf("the charts' appVersions differ: %s and %s", version, v)
	}
	tests := []struct {
		name  string
		chart string
		args  []string
		want  func(t *testing.T) objects
	}{{
		name:  "virtual, deployment mode",
		chart: virtualChart,
		want: func(t *testing.T) objects {
			return kustomize(t, "manifests/rbac/virtual").add(kustomize(t, "manifests/deploy")).add(kustomize(t, "manifests/admission")).
				add(readManifest(t, "manifests/crds/kubeocean.io_clusterbindings.yaml")).without(systemNamespaceKey)
		},
	}, {
		name:  "virtual, in-process mode",
		chart: virtualChart,
		args:  []string{"--set", "syncerMode=in-process"},
		want: func(t *testing.T) objects {
			deploy := kustomize(t, "manifests/deploy").mapStrings(func(s string) string {
				if s == "--syncer-mode=deployment" {
					return "--syncer-mode=in-process"
				}
				return s
			})
			return kustomize(t, "manifests/rbac/in-process").add(deploy).add(kustomize(t, "manifests/admission")).
				add(readManifest(t, "manifests/crds/kubeocean.io_clusterbindings.yaml")).without(systemNamespaceKey)
		},
	}, {
		name:  "physical",
		chart: physicalChart,
		want: func(t *testing.T) objects {
			return kustomize(t, "manifests/rbac/physical").
				add(readManifest(t, "manifests/crds/kubeocean.io_resourceleasingpolicies.yaml")).without(systemNamespaceKey)
		},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := helmTemplate(t, tc.chart, tc.args...)
			want := tc.want(t).mapStrings(pinImages(version))
			if len(want) < 5 {
				t.Fatalf("only %d objects in the manifests: %v", len(want), want.keys())
			}
			diffObjects(t, got, want)
		})
	}
}

// TestChartValues: each value changes what it names and nothing else, and
// values that cannot work are refused.
func TestChartValues(t *testing.T) {
	t.Run("images", func(t *testing.T) {
		got := helmTemplate(t, virtualChart, "--set", "manager.image.repository=registry.example/mgr",
			"--set", "manager.image.tag=v9", "--set", "syncer.image.tag=v8")
		js := marshal(t, got["Deployment kubeocean-system/kubeocean-manager"])
		for _, want := range []string{`"image":"registry.example/mgr:v9"`, `"--syncer-image=ghcr.io/kubeocean/kubeocean-syncer:v8"`} {
			if !strings.Contains(js, want) {
				t.Errorf("manager Deployment lacks %s: %s", want, js)
			}
		}
	})
	t.Run("resources", func(t *testing.T) {
		got := helmTemplate(t, virtualChart, "--set", "manager.resources.limits.memory=2Gi",
			"--set", "syncer.resources.requests.cpu=700m")
		if js := marshal(t, got["Deployment kubeocean-system/kubeocean-manager"]); !strings.Contains(js, `"limits":{"memory":"2Gi"}`) {
			t.Errorf("manager resources not set: %s", js)
		}
		cm := got["ConfigMap kubeocean-system/kubeocean-syncer-template"]
		data, _ := cm["data"].(map[string]any)
		tmpl, _ := data["deployment.yaml"].(string)
		if !strings.Contains(tmpl, "cpu: 700m") || !strings.Contains(tmpl, "{{ .BindingName }}") {
			t.Errorf("syncer template without the resources or its own fields:\n%s", tmpl)
		}
	})
	t.Run("mount namespace", func(t *testing.T) {
		got := helmTemplate(t, physicalChart, "--set", "mountNamespace.name=tenant-a",
			"--set", "mountNamespace.podSecurity.enforce=restricted")
		if _, ok := got["Namespace tenant-a"]; !ok {
			t.Fatalf("no Namespace tenant-a in %v", got.keys())
		}
		for k, obj := range got {
			if strings.Contains(marshal(t, obj), "kubeocean-worker") {
				t.Errorf("%s still names kubeocean-worker", k)
			}
		}
		plain := kustomize(t, "manifests/rbac/physical")["Namespace kubeocean-worker"]
		if labels := nestedMap(plain, "metadata", "labels"); labels["pod-security.kubernetes.io/enforce"] != nil {
			if l := nestedMap(got["Namespace tenant-a"], "metadata", "labels"); l["pod-security.kubernetes.io/enforce"] != "restricted" {
				t.Errorf("enforce level not set: %v", l)
			}
		} else {
			t.Log("the plain mount namespace has no Pod Security label yet; podSecurity has nothing to override")
		}
	})
	t.Run("mount namespace quota", func(t *testing.T) {
		const key = "ResourceQuota kubeocean-worker/kubeocean-mount-namespace"
		plain := nestedMap(kustomize(t, "manifests/rbac/physical")[key], "spec", "hard")
		if len(plain) == 0 {
			t.Fatalf("the plain manifests ship no %s", key)
		}
		got := helmTemplate(t, physicalChart, "--set-string", "mountNamespace.quota.hard.secrets=300",
			"--set", "mountNamespace.quota.hard.persistentvolumeclaims=null", "--set-string", "mountNamespace.quota.hard.services=5")
		hard := nestedMap(got[key], "spec", "hard")
		want := map[string]any{}
		for k, v := range plain {
			want[k] = v
		}
		want["secrets"], want["services"] = "300", "5"
		delete(want, "persistentvolumeclaims")
		if marshal(t, hard) != marshal(t, want) {
			t.Errorf("quota limits %v, want %v: the keys set changed, the others kept", hard, want)
		}
		if off := helmTemplate(t, physicalChart, "--set", "mountNamespace.quota.enabled=false"); off[key] != nil {
			t.Errorf("%s rendered with mountNamespace.quota.enabled=false", key)
		}
	})
	t.Run("optional objects", func(t *testing.T) {
		got := helmTemplate(t, virtualChart, "--set", "priorityClass.name=kubeocean-critical",
			"--set", "priorityClass.create=true", "--set", "podDisruptionBudget.enabled=true",
			"--set", "metrics.serviceMonitor.enabled=true",
			"--set", "metrics.serviceMonitor.prometheusServiceAccount.name=prometheus",
			"--set", "metrics.serviceMonitor.prometheusServiceAccount.namespace=monitoring")
		for _, k := range []string{"PriorityClass kubeocean-critical", "PodDisruptionBudget kubeocean-system/kubeocean-manager",
			"Service kubeocean-system/kubeocean-manager-metrics", "ServiceMonitor kubeocean-system/kubeocean-manager",
			"Service kubeocean-system/kubeocean-syncer-metrics", "ServiceMonitor kubeocean-system/kubeocean-syncer",
			"ClusterRoleBinding kubeocean-metrics-reader"} {
			if _, ok := got[k]; !ok {
				t.Errorf("no %s in %v", k, got.keys())
			}
		}
		// Both binaries serve /metrics with --metrics-secure: the monitors
		// scrape over HTTPS with Prometheus's token, which the shipped
		// reader role allows.
		for _, name := range []string{"kubeocean-manager", "kubeocean-syncer"} {
			endpoints, _ := nestedMap(got["ServiceMonitor kubeocean-system/"+name], "spec")["endpoints"].([]any)
			endpoint, _ := endpoints[0].(map[string]any)
			if len(endpoints) != 1 || endpoint["scheme"] != "https" || endpoint["bearerTokenFile"] == nil {
				t.Errorf("ServiceMonitor %s scrapes %v, want https with the bearer token", name, endpoints)
			}
		}
		if _, ok := got["ClusterRole kubeocean-metrics-reader"]; !ok {
			t.Errorf("no ClusterRole kubeocean-metrics-reader in %v", got.keys())
		}
		spec := nestedMap(got["Deployment kubeocean-system/kubeocean-manager"], "spec", "template", "spec")
		if spec["priorityClassName"] != "kubeocean-critical" {
			t.Errorf("manager pods have priorityClassName %v", spec["priorityClassName"])
		}
		// What the PDB and the Service select are the manager's pods.
		podLabels := nestedMap(got["Deployment kubeocean-system/kubeocean-manager"], "spec", "template", "metadata", "labels")
		for _, sel := range []map[string]any{
			nestedMap(got["PodDisruptionBudget kubeocean-system/kubeocean-manager"], "spec", "selector", "matchLabels"),
			nestedMap(got["Service kubeocean-system/kubeocean-manager-metrics"], "spec", "selector"),
		} {
			for k, v := range sel {
				if podLabels[k] != v {
					t.Errorf("selector %v does not select the manager's pods (%v)", sel, podLabels)
				}
			}
		}
	})
	for name, tc := range map[string]struct {
		chart string
		args  []string
		want  string
	}{
		"latest tag":         {virtualChart, []string{"--set", "manager.image.tag=latest"}, "not latest"},
		"unknown mode":       {virtualChart, []string{"--set", "syncerMode=sidecar"}, "syncerMode must be"},
		"other namespace":    {virtualChart, []string{"--namespace", "default"}, "install into the namespace kubeocean-system"},
		"physical namespace": {physicalChart, []string{"--namespace", "default"}, "install into the namespace kubeocean-system"},
	} {
		t.Run("refuses "+name, func(t *testing.T) {
			_, err := runHelm(t.Context(), append([]string{"template", "kubeocean", tc.chart, "--namespace", systemNamespace}, tc.args...)...)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want an error with %q", err, tc.want)
			}
		})
	}
}

// TestLint: helm's own checks of both charts, strict (warnings fail).
func TestLint(t *testing.T) {
	for _, chart := range []string{virtualChart, physicalChart} {
		if out, err := runHelm(t.Context(), "lint", "--strict", "--namespace", systemNamespace, chart); err != nil {
			t.Errorf("%v\n%s", err, out)
		}
	}
}

func marshal(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func nestedMap(obj map[string]any, path ...string) map[string]any {
	for _, p := range path {
		obj, _ = obj[p].(map[string]any)
	}
	return obj
}
