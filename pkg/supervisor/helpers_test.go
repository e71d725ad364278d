package supervisor

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/lightllm-go/lightllm/pkg/config"
	"github.com/lightllm-go/lightllm/pkg/rolectl"
)

// The test binary doubles as every role binary (and, for the signal tests,
// as a supervisor process): TestMain dispatches on this variable.
const (
	envTestMode     = "LIGHTLLM_SUPERVISOR_TEST_MODE" // "child" | "supervisor"
	envTestBehavior = "LIGHTLLM_TEST_BEHAVIOR"        // see testChild
)

func TestMain(m *testing.M) {
	switch os.Getenv(envTestMode) {
	case "child":
		os.Exit(rolectl.Main(os.Getenv(rolectl.EnvRole), testChild))
	case "supervisor":
		os.Exit(testSupervisorMain())
	}
	os.Exit(m.Run())
}

// testChild plays a role. Behaviours ($LIGHTLLM_TEST_BEHAVIOR):
//
//	""              attach "shm" + bind a socket, report ready, serve until SIGTERM
//	fail            print an error and exit 1 before ready
//	noready         bind, never report ready
//	crash           report ready, then exit 1 at once
//	ignoreterm      report ready, then ignore SIGTERM
//	wedge           report ready, then withhold heartbeats (progress check fails)
//	restart-infer   report ready, then ask the supervisor to restart infer
func testChild(ctx context.Context, cfg *config.Config, log zerolog.Logger, ctl *rolectl.Controller) error {
	role := ctl.Role()
	if !cfg.Resolved || cfg.Instance != os.Getenv(rolectl.EnvInstance) {
		return fmt.Errorf("child got config instance=%q resolved=%v", cfg.Instance, cfg.Resolved)
	}
	behavior := os.Getenv(envTestBehavior)
	if behavior == "fail" {
		fmt.Fprintln(os.Stderr, "boom: cannot load model weights")
		return errors.New("load model: boom")
	}
	if err := os.WriteFile(cfg.ShmPath(role), []byte("slots"), 0o600); err != nil {
		return err
	}
	if role == config.RoleAPIServer { // the supervisor's API socket is fd 3
		f := os.NewFile(3, "api")
		l, err := net.FileListener(f)
		f.Close()
		if err != nil || os.Getenv(config.EnvListenFD) != "3" {
			return fmt.Errorf("listener check failed: %s=%q: %v", config.EnvListenFD, os.Getenv(config.EnvListenFD), err)
		}
		l.Close()
	}
	sock := cfg.SocketPath(role)
	_ = os.Remove(sock)
	l, err := net.Listen("unix", sock)
	if err != nil {
		return err
	}
	defer l.Close()
	if behavior == "noready" {
		<-ctx.Done()
		return nil
	}
	if err := ctl.Ready(ctx); err != nil {
		return err
	}
	switch behavior {
	case "crash":
		return errors.New("crashed after ready")
	case "ignoreterm":
		time.Sleep(time.Hour)
	case "wedge":
		ctl.SetProgressCheck(func() error { return errors.New("engine loop stuck") })
	case "restart-infer":
		for ctx.Err() == nil {
			if err := ctl.RequestRestart(ctx, config.RoleInfer, "test: engine wedged"); err == nil {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	<-ctx.Done()
	return nil
}

// testConfig is a resolved config with short timings, files in temp dirs.
func testConfig(t *testing.T) *config.Config {
	t.Helper()
	c := config.DefaultConfig()
	c.Instance = fmt.Sprintf("t%d", time.Now().UnixNano()%1e9)
	base, err := os.MkdirTemp("", "llsup")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	c.RunDir = filepath.Join(base, "run")
	c.ShmDir = filepath.Join(base, "lightllm-"+c.Instance)
	c.Resolved, c.ModelDir = true, "/models/test"
	c.MaxReqTotalLen, c.MaxTotalTokenNum, c.BatchMaxTokens, c.ChunkedPrefillSize = 512, 4096, 16384, 8192
	ports := freePorts(t, 2)
	c.Port, c.MetricPort = ports[0], ports[1]
	c.ReadyTimeout = config.Duration(30 * time.Second) // -race on a loaded 2-core machine
	c.StopTimeout = config.Duration(5 * time.Second)
	c.GracefulTimeout = 0
	c.RestartBackoff, c.RestartBackoffMax = config.Duration(20*time.Millisecond), config.Duration(200*time.Millisecond)
	c.RestartBudget, c.RestartWindow = 3, config.Duration(time.Minute)
	c.HeartbeatInterval, c.HeartbeatTimeout = config.Duration(100*time.Millisecond), 0
	c.LogFormat = "json"
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	return &c
}

// freePorts are n distinct TCP ports nobody listens on now (the
// supervisor checks): all are held open until all are chosen.
func freePorts(t *testing.T, n int) []int {
	t.Helper()
	var ports []int
	for i := 0; i < n; i++ {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports
}

// syncBuffer collects the children's output for failure messages.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// harness runs a Supervisor in-process with the test binary as every role.
type harness struct {
	t      *testing.T
	cfg    *config.Config
	sup    *Supervisor
	out    *syncBuffer
	cancel context.CancelFunc
	errc   chan error

	mu      sync.Mutex
	starts  map[string]int
	started []string
	pids    map[int]bool // every child pid ever started
}

// behaviorFunc picks a role's behaviour for its n-th start (0-based).
type behaviorFunc func(role string, n int) string

// newHarness builds the supervisor; stages nil means all six roles in
// LightLLM's order (fewer roles keep the -race run short: a race-enabled
// child takes about a second to start on the shared CI machine).
func newHarness(t *testing.T, cfg *config.Config, stages [][]string, behave behaviorFunc, onStart func(h *harness, spec Spec)) *harness {
	t.Helper()
	h := &harness{t: t, cfg: cfg, out: &syncBuffer{}, errc: make(chan error, 1), starts: map[string]int{}, pids: map[int]bool{}}
	sp := newSpawner(h.out)
	t.Cleanup(sp.close) // the spawner thread's exit SIGKILLs any straggler
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	log := zerolog.New(h.out).With().Str("role", "supervisor").Logger()
	var stopOrder [][]string
	if stages != nil {
		stopOrder = slices.Clone(stages)
		slices.Reverse(stopOrder)
	}
	h.sup, err = New(Options{
		Config: cfg, Log: log, Output: h.out, Stages: stages, StopOrder: stopOrder,
		FindBinary: func(string) (string, error) { return exe, nil },
		StartProcess: func(spec Spec) (Process, error) {
			h.mu.Lock()
			n := h.starts[spec.Role]
			h.starts[spec.Role]++
			h.started = append(h.started, spec.Role)
			h.mu.Unlock()
			if onStart != nil {
				onStart(h, spec)
			}
			b := ""
			if behave != nil {
				b = behave(spec.Role, n)
			}
			spec.Env = append(spec.Env, envTestMode+"=child", envTestBehavior+"="+b)
			p, err := sp.start(spec)
			if err == nil {
				h.mu.Lock()
				h.pids[p.Pid()] = true
				h.mu.Unlock()
			}
			return p, err
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func (h *harness) run() {
	ctx, cancel := context.WithCancel(context.Background())
	h.cancel = cancel
	go func() { h.errc <- h.sup.Run(ctx) }()
	h.t.Cleanup(func() {
		cancel()
		select {
		case <-h.errc:
		case <-time.After(30 * time.Second):
			h.t.Errorf("supervisor did not stop")
		}
	})
}

// wait returns Run's error, failing the test after timeout.
func (h *harness) wait(timeout time.Duration) error {
	h.t.Helper()
	select {
	case err := <-h.errc:
		h.errc <- err // for the cleanup
		return err
	case <-time.After(timeout):
		h.t.Fatalf("supervisor still running after %s; output:\n%s", timeout, h.out.String())
		return nil
	}
}

func (h *harness) status() rolectl.Status {
	h.t.Helper()
	resp, err := rolectl.Call(context.Background(), h.cfg.ControlSocketPath(), rolectl.Request{Op: rolectl.OpStatus})
	if err != nil {
		h.t.Fatalf("status: %v\noutput:\n%s", err, h.out.String())
	}
	return *resp.Status
}

func (h *harness) waitUntil(what string, timeout time.Duration, cond func(rolectl.Status) bool) rolectl.Status {
	h.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		st := h.sup.Status()
		if cond(st) {
			return st
		}
		if time.Now().After(deadline) {
			h.t.Fatalf("timed out waiting for %s; status %+v\noutput:\n%s", what, st, h.out.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (h *harness) waitRunning() rolectl.Status {
	h.t.Helper()
	return h.waitUntil("all roles ready", 60*time.Second, func(st rolectl.Status) bool {
		if st.Phase != rolectl.PhaseRunning {
			return false
		}
		for _, r := range st.Roles {
			if !r.Ready {
				return false
			}
		}
		return true
	})
}

func roleOf(st rolectl.Status, role string) rolectl.RoleStatus {
	for _, r := range st.Roles {
		if r.Role == role {
			return r
		}
	}
	return rolectl.RoleStatus{}
}

// assertAllGone checks that no child ever started is alive and the
// instance's shm dir and sockets are removed.
func (h *harness) assertAllGone() {
	h.t.Helper()
	h.mu.Lock()
	defer h.mu.Unlock()
	for pid := range h.pids {
		if alive(pid) {
			h.t.Errorf("child pid %d still alive", pid)
		}
	}
	assertNoInstanceFiles(h.t, h.cfg)
}

func assertNoInstanceFiles(t *testing.T, cfg *config.Config) {
	t.Helper()
	if _, err := os.Stat(cfg.ShmDir); !os.IsNotExist(err) {
		t.Errorf("shm dir %s still exists (%v)", cfg.ShmDir, err)
	}
	entries, _ := os.ReadDir(cfg.RunDir)
	for _, e := range entries {
		t.Errorf("run dir entry left: %s", e.Name())
	}
}

// alive reports whether pid exists and is not a zombie.
func alive(pid int) bool {
	if err := syscall.Kill(pid, 0); err != nil {
		return false
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	s := string(b)
	for i := len(s) - 1; i >= 0; i-- {
		if s[i] == ')' {
			return !(len(s) > i+2 && s[i+2] == 'Z')
		}
	}
	return true
}
