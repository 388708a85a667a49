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

// Package leaderelection runs work only while this process holds a
// coordination.k8s.io Lease, on top of client-go's leader election. Losing
// the lease ends the work and makes Run return an error so the process exits
// and restarts as a candidate; a requested shutdown drains the work first and
// then releases the lease so a standby takes over at once.
package leaderelection
