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

package compact

import (
	"slices"
	"strconv"
	"strings"
	"unique"

	corev1 "k8s.io/api/core/v1"
)

// requestSet is what a pod requests, in milli-units, without its pod slot:
// a comparable value, so that the pods of one workload, which request the
// same, share one copy of it (unique.Handle) and each PodUsage holds only a
// pointer.
type requestSet struct {
	// head holds the first amounts by resource name; CPU, memory and one
	// more cover nearly every pod. Unused entries are zero.
	head [3]Amount
	// tail encodes any further amounts as "name=milli" joined by ",".
	tail string
}

// internRequests returns the shared copy of amounts, which must hold each
// resource once.
func internRequests(amounts []Amount) unique.Handle[requestSet] {
	amounts = slices.Clone(amounts)
	slices.SortFunc(amounts, func(a, b Amount) int { return strings.Compare(string(a.Name), string(b.Name)) })
	var set requestSet
	n := copy(set.head[:], amounts)
	var tail []string
	for _, a := range amounts[n:] {
		tail = append(tail, string(a.Name)+"="+strconv.FormatInt(a.Milli, 10))
	}
	set.tail = strings.Join(tail, ",")
	return unique.Make(set)
}

// amounts lists the set, sorted by resource name.
func (s requestSet) amounts() []Amount {
	var out []Amount
	for _, a := range s.head {
		if a.Name != "" {
			out = append(out, a)
		}
	}
	if s.tail == "" {
		return out
	}
	for _, pair := range strings.Split(s.tail, ",") {
		name, milli, _ := strings.Cut(pair, "=")
		v, err := strconv.ParseInt(milli, 10, 64)
		if err != nil {
			panic("compact: a request set encoded by internRequests does not parse: " + pair)
		}
		out = append(out, Amount{Name: corev1.ResourceName(name), Milli: v})
	}
	return out
}
