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

import (
	"maps"
	"testing"
)

func TestMergeKeys(t *testing.T) {
	never := func(string) bool { return false }
	for name, tc := range map[string]struct {
		current, last, desired map[string]string
		enforced               func(string) bool
		want                   map[string]string
	}{
		"in step":                {current: map[string]string{"a": "1"}, last: map[string]string{"a": "1"}, desired: map[string]string{"a": "1"}, enforced: Always, want: map[string]string{"a": "1"}},
		"others' key stays":      {current: map[string]string{"a": "1", "x": "y"}, last: map[string]string{"a": "1"}, desired: map[string]string{"a": "1"}, enforced: Always, want: map[string]string{"a": "1", "x": "y"}},
		"our change is carried":  {current: map[string]string{"a": "1", "x": "y"}, last: map[string]string{"a": "1"}, desired: map[string]string{"a": "2"}, enforced: never, want: map[string]string{"a": "2", "x": "y"}},
		"dropped key goes":       {current: map[string]string{"a": "1", "b": "2"}, last: map[string]string{"a": "1", "b": "2"}, desired: map[string]string{"a": "1"}, enforced: Always, want: map[string]string{"a": "1"}},
		"unchanged: live stands": {current: map[string]string{"a": "edited"}, last: map[string]string{"a": "1"}, desired: map[string]string{"a": "1"}, enforced: never, want: map[string]string{"a": "edited"}},
		"enforced: put back":     {current: map[string]string{"a": "edited"}, last: map[string]string{"a": "1"}, desired: map[string]string{"a": "1"}, enforced: Always, want: map[string]string{"a": "1"}},
		"nothing recorded":       {current: map[string]string{"x": "y"}, desired: map[string]string{"a": "1"}, enforced: never, want: map[string]string{"a": "1", "x": "y"}},
	} {
		t.Run(name, func(t *testing.T) {
			got := Apply(tc.current, MergeKeys(tc.current, tc.last, tc.desired, tc.enforced))
			if !maps.Equal(got, tc.want) {
				t.Errorf("merged %v, want %v", got, tc.want)
			}
			if again := MergeKeys(got, tc.desired, tc.desired, tc.enforced); len(again) != 0 {
				t.Errorf("a second merge patches %v", again)
			}
		})
	}
}
