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
	"strconv"
	"strings"

	"github.com/spf13/pflag"
)

// IntVar registers an integer flag that refuses values below min, with an
// error in words instead of strconv's.
func IntVar(fs *pflag.FlagSet, p *int, name string, min int, usage string) {
	fs.Var(&intValue{p: p, min: min}, name, usage)
}

// PositiveFloat32Var registers a flag for a number above zero, such as a
// rate of queries per second.
func PositiveFloat32Var(fs *pflag.FlagSet, p *float32, name, usage string) {
	fs.Var(&positiveFloat32Value{p: p}, name, usage)
}

type intValue struct {
	p   *int
	min int
}

func (v *intValue) Set(s string) error {
	n, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil {
		return fmt.Errorf("not a whole number")
	}
	if n < v.min {
		return fmt.Errorf("must be at least %d", v.min)
	}
	*v.p = n
	return nil
}

func (v *intValue) String() string { return strconv.Itoa(*v.p) }
func (v *intValue) Type() string   { return "int" }

type positiveFloat32Value struct{ p *float32 }

func (v *positiveFloat32Value) Set(s string) error {
	f, err := strconv.ParseFloat(strings.TrimSpace(s), 32)
	if err != nil {
		return fmt.Errorf("not a number")
	}
	if f <= 0 {
		return fmt.Errorf("must be greater than 0")
	}
	*v.p = float32(f)
	return nil
}

func (v *positiveFloat32Value) String() string {
	return strconv.FormatFloat(float64(*v.p), 'g', -1, 32)
}
func (v *positiveFloat32Value) Type() string { return "float" }
