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

package syncertemplate

import (
	"context"
	"sync/atomic"
	"time"

	"k8s.io/klog/v2"
)

// DefaultPollInterval is how often a Source re-reads its folder. Reading a
// few small files is cheap, and a mounted ConfigMap itself only changes
// about once a minute.
const DefaultPollInterval = 10 * time.Second

// Source holds the current templates of a folder. Polling rather than
// watching the files keeps working across the symlink swaps with which the
// kubelet updates a mounted ConfigMap.
type Source struct {
	dir     string
	current atomic.Pointer[Templates]
}

// NewSource loads the templates of dir; see Load.
func NewSource(dir string) (*Source, error) {
	t, err := Load(dir)
	if err != nil {
		return nil, err
	}
	s := &Source{dir: dir}
	s.current.Store(t)
	return s, nil
}

// Current returns the templates in force.
func (s *Source) Current() *Templates { return s.current.Load() }

// Reload re-reads the folder and, when its content changed and the new
// templates are valid, puts them in force. It reports whether they changed;
// invalid templates leave the previous ones in force.
func (s *Source) Reload() (bool, error) {
	contents, err := readDir(s.dir)
	if err != nil {
		return false, err
	}
	previous := s.current.Load()
	t, err := parse(s.dir, contents)
	if err != nil {
		return false, err
	}
	if previous != nil && previous.hash == t.hash {
		return false, nil
	}
	s.current.Store(t)
	return true, nil
}

// Watch reloads the templates every interval until ctx ends and calls
// onChange after each change. A broken edit is logged once per content and
// the templates in force stay.
func (s *Source) Watch(ctx context.Context, interval time.Duration, onChange func()) error {
	logger := klog.FromContext(ctx).WithValues("syncerTemplateDir", s.dir)
	ticker := time.NewTicker(interval)
	defer ticker.Stop()
	var lastErr string
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-ticker.C:
		}
		changed, err := s.Reload()
		switch {
		case err != nil:
			if err.Error() != lastErr {
				logger.Error(err, "Syncer templates are invalid; keeping the previous ones")
				lastErr = err.Error()
			}
		case changed:
			lastErr = ""
			logger.Info("Syncer templates changed; rolling them out", "templateHash", s.Current().Hash()[:12])
			onChange()
		}
	}
}
