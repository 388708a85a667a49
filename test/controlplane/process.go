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

package controlplane

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// stopGracePeriod is how long a component gets between SIGTERM and SIGKILL.
// A variable only so that tests of the escalation do not wait this long.
var stopGracePeriod = 5 * time.Second

// errPortInUse marks a start that failed because a port we picked was taken
// between picking and binding; only those starts are worth retrying.
var errPortInUse = errors.New("port already in use")

// process is one running component with its log file.
type process struct {
	name    string
	cmd     *exec.Cmd
	logPath string
	started time.Time
	done    chan struct{} // closed once the process has been reaped
	waitErr error         // valid after done is closed
}

// startProcess runs bin with args, stdout and stderr appended to
// <dir>/<name>.log. The child gets its own process group, so that stopping
// it reaches anything it forked and a Ctrl-C on the terminal does not kill it
// before we stop components in order, and is killed if this process dies.
func startProcess(dir, name, bin string, args, env []string) (*process, error) {
	logPath := filepath.Join(dir, name+".log")
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	defer logFile.Close() // the child holds its own descriptor
	fmt.Fprintf(logFile, "+ %s %s\n", bin, strings.Join(args, " "))

	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	cmd.Stdout = logFile
	cmd.Stderr = logFile
	cmd.Env = append(os.Environ(), env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	p := &process{name: name, cmd: cmd, logPath: logPath, started: time.Now(), done: make(chan struct{})}
	go func() {
		p.waitErr = cmd.Wait()
		close(p.done)
	}()
	return p, nil
}

// exited reports whether the process has ended.
func (p *process) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// stop sends SIGTERM to the process group, then SIGKILL once the grace period
// is over, and returns when the process has been reaped.
func (p *process) stop() {
	if p.exited() {
		return
	}
	pgid := p.cmd.Process.Pid // Setpgid makes the child the group leader
	_ = syscall.Kill(-pgid, syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(stopGracePeriod):
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		<-p.done
	}
}

// exitError describes an early exit, with the end of the log so the reason is
// in the error itself (the log file may be deleted with the test folder).
func (p *process) exitError() error {
	err := fmt.Errorf("%s exited early (%v); last lines of %s:\n%s", p.name, p.waitErr, p.logPath, p.tail(20))
	if p.logContains("address already in use") {
		return fmt.Errorf("%w: %w", errPortInUse, err)
	}
	return err
}

func (p *process) logContains(s string) bool {
	data, err := os.ReadFile(p.logPath)
	return err == nil && bytes.Contains(data, []byte(s))
}

// tail returns the last n lines of the log.
func (p *process) tail(n int) string {
	data, err := readTail(p.logPath, 256<<10)
	if err != nil {
		return fmt.Sprintf("(cannot read log: %v)", err)
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// readTail reads at most max bytes from the end of a file; logs of a long
// test can be large and only their end matters.
func readTail(path string, max int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if info.Size() > max {
		if _, err := f.Seek(-max, io.SeekEnd); err != nil {
			return nil, err
		}
	}
	return io.ReadAll(f)
}

// freePorts picks n distinct free loopback ports. All listeners stay open
// until every port is chosen so the kernel cannot hand out one port twice.
// Another process can still take a port before our component binds it; Start
// retries for that case.
func freePorts(n int) ([]int, error) {
	ports := make([]int, 0, n)
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("picking a free port: %w", err)
		}
		defer l.Close()
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

func loopbackURL(scheme string, port int) string {
	return scheme + "://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
}
