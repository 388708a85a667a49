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

// Package syncertemplate renders the objects of a ClusterBinding's syncer
// (in deployment mode) from Go templates: every *.yaml and *.yml file of a
// folder, in name order, each holding one or more YAML documents. The
// rendered documents are decoded strictly into the client-go kinds the
// manager knows how to keep (a Deployment, exactly one, plus ServiceAccounts
// and ConfigMaps), so a typo in a template fails loudly, at load time when
// possible.
//
// A Source re-reads the folder periodically (a mounted ConfigMap changes in
// place) and reports when the templates changed, so that a template change
// rolls out to every syncer.
package syncertemplate
