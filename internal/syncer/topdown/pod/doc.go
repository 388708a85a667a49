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

// Package pod is the top-down syncer's virtual pod controller. For every
// pod the virtual cluster's scheduler placed on a virtual node of this
// binding it copies the objects the pod uses (through the dependents
// library), creates the physical pod, under the name the name rule gives, in
// the binding's mount namespace pinned to the physical node behind the
// virtual node, keeps its labels, annotations, deadline and images in step,
// issues the pod a service-account token of the virtual cluster, and
// finishes a deleted virtual pod once its physical pod is gone. A virtual
// pod whose physical pod vanished is marked Failed.
//
// The concerns it calls on live beside it: package preflight judges a pod
// before anything of it is made (Pod Security, host ports, volume sources,
// DaemonSets, the lender's allowances) and remembers the pods refused;
// package podidentity makes and renews the token Secret that gives the
// physical pod the virtual pod's identity; package podspec computes the
// physical pod and the patches that keep it in step; package nametaken
// writes the binding's condition on physical names taken by others.
//
// The bottom-up pod-status controller does the rest of the round trip:
// physical status and UID back to the virtual pod, and deletion of physical
// pods whose virtual pod is gone.
package pod
