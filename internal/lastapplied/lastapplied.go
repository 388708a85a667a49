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

package lastapplied

import "k8s.io/utils/ptr"

// MergeKeys is the patch of one string map from last applied to desired,
// against current, the live map: keys whose desired value changed since
// last applied are set, keys dropped since last applied are removed; a key
// the live object already has right is left out. A key whose desired
// value did not change keeps its live value, unless enforced says it must
// be put back. nil values delete.
func MergeKeys(current, last, desired map[string]string, enforced func(string) bool) map[string]*string {
	patch := map[string]*string{}
	for k, v := range desired {
		if lastValue, ok := last[k]; ok && lastValue == v && !enforced(k) {
			continue // unchanged on our side: the live value stands
		}
		if currentValue, ok := current[k]; ok && currentValue == v {
			continue
		}
		patch[k] = ptr.To(v)
	}
	for k := range last {
		if _, ok := desired[k]; ok {
			continue
		}
		if _, ok := current[k]; ok {
			patch[k] = nil
		}
	}
	return patch
}

// Apply returns current with patch applied (nil values delete); current is
// not modified. An empty result is nil.
func Apply(current map[string]string, patch map[string]*string) map[string]string {
	out := make(map[string]string, len(current)+len(patch))
	for k, v := range current {
		out[k] = v
	}
	for k, v := range patch {
		if v == nil {
			delete(out, k)
		} else {
			out[k] = *v
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// Always enforces every key: a desired key is put back whenever the live
// value differs.
func Always(string) bool { return true }
