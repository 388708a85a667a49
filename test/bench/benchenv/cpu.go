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

package benchenv

import (
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/kubeocean/kubeocean/test/controlplane"
)

// ticksPerSecond is USER_HZ on Linux, the unit of /proc/<pid>/stat times.
const ticksPerSecond = 100

// Processes names the processes whose CPU a benchmark reports: every
// component of its clusters ("virtual/kube-apiserver", "physical/kwok",
// ...), the syncer and the benchmark process itself.
type Processes map[string]int

// ClusterProcesses are the components of clusters, named
// "<cluster>/<component>", with this benchmark process as "benchmark" and,
// when set, the syncer.
func ClusterProcesses(syncer *Syncer, clusters ...*controlplane.Cluster) Processes {
	procs := Processes{"benchmark": os.Getpid()}
	for _, c := range clusters {
		for name, pid := range c.Pids() {
			procs[c.Name+"/"+name] = pid
		}
	}
	if syncer != nil {
		procs["syncer"] = syncer.Pid()
	}
	return procs
}

// CPUSample is the CPU time (user + system, in ticks) each process has
// used so far.
type CPUSample map[string]int64

// SampleCPU reads the CPU time of every process; one that ended is left
// out.
func (p Processes) SampleCPU() CPUSample {
	s := CPUSample{}
	for name, pid := range p {
		if ticks, err := cpuTicks(pid); err == nil {
			s[name] = ticks
		}
	}
	return s
}

// CPUSeconds is the CPU seconds each process used between two samples.
func CPUSeconds(before, after CPUSample) map[string]float64 {
	out := map[string]float64{}
	for name, t := range after {
		if b, ok := before[name]; ok {
			out[name] = float64(t-b) / ticksPerSecond
		}
	}
	return out
}

// PrintCPU prints, per process, the CPU seconds of each phase and per unit
// of work (per pod, per node) in the phases' columns; phases are the
// column titles, cpu[i] the seconds of phase i, per[i] its unit count.
func PrintCPU(title string, phases []string, cpu []map[string]float64, per []float64, unit string) {
	names := map[string]bool{}
	for _, c := range cpu {
		for n := range c {
			names[n] = true
		}
	}
	fmt.Printf("\n%s\n", title)
	w := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	header := []string{"process"}
	for _, p := range phases {
		header = append(header, p+" (s)", "ms/"+unit)
	}
	fmt.Fprintln(w, strings.Join(header, "\t")+"\t")
	totals := make([]float64, len(phases))
	for _, n := range slices.Sorted(maps.Keys(names)) {
		row := []string{n}
		for i := range phases {
			s, ok := cpu[i][n]
			if !ok {
				row = append(row, "-", "-")
				continue
			}
			totals[i] += s
			row = append(row, fmt.Sprintf("%.2f", s), fmt.Sprintf("%.2f", s*1000/per[i]))
		}
		fmt.Fprintln(w, strings.Join(row, "\t")+"\t")
	}
	row := []string{"all"}
	for i := range phases {
		row = append(row, fmt.Sprintf("%.2f", totals[i]), fmt.Sprintf("%.2f", totals[i]*1000/per[i]))
	}
	fmt.Fprintln(w, strings.Join(row, "\t")+"\t")
	w.Flush()
}

// CoresBusy is how many cores the processes of cpu (CPU seconds by
// process) kept busy on average over wall.
func CoresBusy(cpu map[string]float64, wall time.Duration) float64 {
	var total float64
	for _, s := range cpu {
		total += s
	}
	return total / wall.Seconds()
}
