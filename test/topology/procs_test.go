// Package topology runs the scale-out deployment on this machine (ZooKeeper,
// ClickHouse 2 shards x 2 replicas, two gateways, two writers, two API
// servers on one PostgreSQL, nginx in front) from the shipped configs/ files,
// sends a steady load through nginx and injects faults. scripts/topology.sh
// installs the programs, starts PostgreSQL and runs it with GLASSBOX_TOPOLOGY=1.
package topology

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// need returns an environment variable scripts/topology.sh sets. Without
// GLASSBOX_TOPOLOGY=1 the test is not wanted and skips; once wanted, a missing
// piece fails under CI=true and skips elsewhere.
func need(t *testing.T, name string) string {
	t.Helper()
	v := os.Getenv(name)
	if v == "" {
		missing(t, name+" is not set; run scripts/topology.sh")
	}
	return v
}

func missing(t *testing.T, msg string) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatal(msg)
	}
	t.Skip(msg)
}

// program finds an installed program: on PATH or at one of the paths given.
func program(t *testing.T, name string, paths ...string) string {
	t.Helper()
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	for _, p := range paths {
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	missing(t, name+" is not installed; scripts/topology.sh installs it")
	return ""
}

// proc is one server process of the topology. Its pid is recorded under
// the run's directory so that scripts/topology.sh can stop what a crashed
// test left running.
type proc struct {
	name  string
	path  string
	args  []string
	env   []string
	log   string
	pids  string
	ready func() error
	cmd   *exec.Cmd
	done  chan struct{}
}

func (p *proc) running() bool {
	if p.done == nil {
		return false
	}
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}

// start launches the process and waits until ready answers.
func (p *proc) start(t *testing.T) time.Duration {
	t.Helper()
	require.False(t, p.running(), "%s already runs", p.name)
	logf, err := os.OpenFile(p.log, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	require.NoError(t, err)
	defer logf.Close()
	fmt.Fprintf(logf, "---- start %s\n", time.Now().Format(time.RFC3339Nano))
	begin := time.Now()
	p.cmd = exec.Command(p.path, p.args...)
	p.cmd.Env = append(os.Environ(), p.env...)
	p.cmd.Stdout, p.cmd.Stderr = logf, logf
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	require.NoError(t, p.cmd.Start(), p.name)
	require.NoError(t, os.WriteFile(filepath.Join(p.pids, p.name+".pid"), []byte(strconv.Itoa(p.cmd.Process.Pid)), 0o600))
	p.done = make(chan struct{})
	go func(cmd *exec.Cmd, done chan struct{}) { _ = cmd.Wait(); close(done) }(p.cmd, p.done)
	deadline := time.Now().Add(90 * time.Second)
	for {
		if !p.running() {
			t.Fatalf("%s exited during start-up:\n%s", p.name, p.tail())
		}
		err := p.ready()
		if err == nil {
			return time.Since(begin)
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s not ready after 90s (%v):\n%s", p.name, err, p.tail())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// signal sends sig and waits until the process is gone, sending SIGKILL
// after grace; it reports whether the process ended within grace.
func (p *proc) signal(t *testing.T, sig syscall.Signal, grace time.Duration) bool {
	t.Helper()
	if !p.running() {
		return true
	}
	_ = p.cmd.Process.Signal(sig)
	clean := true
	select {
	case <-p.done:
	case <-time.After(grace):
		t.Logf("%s still runs %s after %v; killing it", p.name, grace, sig)
		_ = p.cmd.Process.Kill()
		<-p.done
		clean = false
	}
	_ = os.Remove(filepath.Join(p.pids, p.name+".pid"))
	return clean
}

// tail is the end of the process's log, for failure messages.
func (p *proc) tail() string {
	b, _ := os.ReadFile(p.log)
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	return string(b)
}

// httpOK is a readiness probe: GET url answers 200.
func httpOK(url string) func() error {
	client := &http.Client{Timeout: 2 * time.Second}
	return func() error {
		resp, err := client.Get(url)
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("GET %s: %d", url, resp.StatusCode)
		}
		return nil
	}
}

// zkServing is ZooKeeper's readiness: srvr says it serves (ruok answers
// while it still loads, and ClickHouse started then exits).
func zkServing(addr string) func() error {
	return func() error {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err != nil {
			return err
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(2 * time.Second))
		if _, err := c.Write([]byte("srvr")); err != nil {
			return err
		}
		buf := make([]byte, 4096)
		var out strings.Builder
		for {
			n, err := c.Read(buf)
			out.Write(buf[:n])
			if err != nil {
				break
			}
		}
		if !strings.Contains(out.String(), "Mode: standalone") {
			return fmt.Errorf("zookeeper not serving yet")
		}
		return nil
	}
}
