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

// Package timewindow evaluates the time windows of a ResourceLeasingPolicy:
// whether a policy lends its nodes at a given instant, which window is open,
// and when that next changes, so that controllers can requeue exactly at the
// next boundary instead of polling.
//
// Windows are read in wall-clock time of the policy's time zone:
//   - a window opens at Start (inclusive) and closes at End (exclusive);
//   - End before Start crosses midnight, and the window belongs to the day it
//     opens on; End equal to Start lasts a whole day;
//   - on daylight-saving days a wall-clock time that does not exist opens or
//     closes the window at the moment the clock jumps, and one that happens
//     twice means its first occurrence.
package timewindow
