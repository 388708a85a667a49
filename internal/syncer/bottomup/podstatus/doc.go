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

// Package podstatus is the bottom-up syncer's physical pod controller. For
// every pod Kubeocean created in the binding's mount namespace it copies the
// physical pod's status to the virtual pod it stands for, records the
// mapping (the physical pod's namespace, name and UID) on the virtual pod
// with its first status write, and deletes physical pods whose
// virtual pod is gone, so nothing is left running for a pod nobody owns.
package podstatus
