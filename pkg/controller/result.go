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

package controller

import (
	"errors"
	"time"
)

// Result tells the worker loop what to do with a key after a successful
// reconcile.
type Result struct {
	// RequeueAfter, when positive, reconciles the key again after this long,
	// e.g. at the next time-window boundary. The failure count is reset.
	RequeueAfter time.Duration
}

// RequeueAfter is shorthand for a Result that comes back after d.
func RequeueAfter(d time.Duration) Result { return Result{RequeueAfter: d} }

// terminalError marks an error that retrying cannot fix, such as a spec the
// user must correct. The key is not requeued; a later change to the object
// enqueues it again.
type terminalError struct{ err error }

func (e *terminalError) Error() string { return e.err.Error() }
func (e *terminalError) Unwrap() error { return e.err }

// Terminal wraps err so the worker loop logs it and drops the key instead of
// retrying with backoff. Terminal(nil) is nil.
func Terminal(err error) error {
	if err == nil {
		return nil
	}
	return &terminalError{err: err}
}

// IsTerminal reports whether err, or an error it wraps, was made by Terminal.
func IsTerminal(err error) bool {
	var t *terminalError
	return errors.As(err, &t)
}
