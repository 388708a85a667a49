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

package app

import (
	"fmt"
	"runtime/debug"
	"strconv"

	"github.com/spf13/pflag"
	"k8s.io/klog/v2"
)

// DefaultGCPercent is the garbage-collection target Kubeocean's binaries run
// with. Their heap is mostly informer caches, which live as long as the
// process, while the garbage is short-lived (decoded watch events, request
// bodies). Go's default of 100 lets the heap grow to twice the caches
// before collecting; 50 keeps it within one and a half times, for about one
// more percent of a core spent collecting (make bench-bottomup measures
// both).
const DefaultGCPercent = 50

// GCOptions set the Go garbage collector's target.
type GCOptions struct {
	// Percent is how far, in percent of the live heap, the heap may grow
	// before the next collection: GOGC.
	Percent int
	// set records that --gc-percent was given, so it overrides GOGC.
	set bool
}

// AddFlags registers --gc-percent on fs.
func (o *GCOptions) AddFlags(fs *pflag.FlagSet) {
	fs.Var((*gcPercentValue)(o), "gc-percent", "Garbage-collection target: how far, in percent of the live heap, the heap may grow before "+
		"the next collection, as the GOGC environment variable sets it. A GOGC variable takes precedence over the default, the flag over both.")
}

// gcPercentValue is --gc-percent: a positive integer that, once given,
// overrides GOGC.
type gcPercentValue GCOptions

func (v *gcPercentValue) Set(s string) error {
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 {
		return fmt.Errorf("must be a positive integer")
	}
	v.Percent, v.set = n, true
	return nil
}

func (v *gcPercentValue) String() string { return strconv.Itoa(v.Percent) }
func (v *gcPercentValue) Type() string   { return "int" }

// Apply sets the target: the flag when given, else GOGC when the
// environment sets it (the runtime already follows it), else the default.
// getenv is os.Getenv outside tests.
func (o *GCOptions) Apply(logger klog.Logger, getenv func(string) string) {
	if env := getenv("GOGC"); env != "" && !o.set {
		logger.Info("Garbage-collection target from the environment", "GOGC", env)
		return
	}
	debug.SetGCPercent(o.Percent)
	logger.V(2).Info("Garbage-collection target", "gcPercent", o.Percent)
}
