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

// Package secretwatch caches a set of Secrets named one by one, each through
// its own list and watch on its name (a field selector on metadata.name in
// its namespace), started and stopped as the set changes. The manager
// watches this way the kubeconfig Secrets its ClusterBindings reference, and
// no other Secret of the virtual cluster: its memory and the events it
// decodes do not grow with the Secrets the cluster holds.
package secretwatch
