package rolectl

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/lightllm-go/lightllm/pkg/config"
)

// fakeSupervisor records requests on a control socket and answers ok.
type fakeSupervisor struct {
	mu   sync.Mutex
	reqs []Request
}

func (f *fakeSupervisor) serve(t *testing.T, path string) {
	l, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			var req Request
			if err := ReadMessage(bufio.NewReader(c), &req); err == nil {
				f.mu.Lock()
				f.reqs = append(f.reqs, req)
				f.mu.Unlock()
				resp := Response{OK: true}
				if req.Op == OpStatus {
					resp.Status = &Status{Instance: "fake", Roles: []RoleStatus{{Role: "router", Pid: 42, State: StateReady, Ready: true}}}
				}
				_ = WriteMessage(c, resp)
			}
			c.Close()
		}
	}()
}

func (f *fakeSupervisor) count(op string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, r := range f.reqs {
		if r.Op == op {
			n++
		}
	}
	return n
}

// notifyListener collects sd_notify datagrams.
func notifyListener(t *testing.T, path string) func() []string {
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: path, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	var mu sync.Mutex
	var got []string
	go func() {
		buf := make([]byte, 256)
		for {
			n, err := conn.Read(buf)
			if err != nil {
				return
			}
			mu.Lock()
			got = append(got, string(buf[:n]))
			mu.Unlock()
		}
	}()
	return func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), got...)
	}
}

func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func countOf(list []string, s string) int {
	n := 0
	for _, x := range list {
		if x == s {
			n++
		}
	}
	return n
}

func TestControllerSupervisorAndSystemd(t *testing.T) {
	dir := t.TempDir()
	sup := &fakeSupervisor{}
	sup.serve(t, filepath.Join(dir, "sup.sock"))
	notes := notifyListener(t, filepath.Join(dir, "notify.sock"))
	t.Setenv(EnvControlSocket, filepath.Join(dir, "sup.sock"))
	t.Setenv("NOTIFY_SOCKET", filepath.Join(dir, "notify.sock"))
	t.Setenv("WATCHDOG_USEC", "100000")
	t.Setenv("WATCHDOG_PID", strconv.Itoa(os.Getpid()))

	cfg := config.DefaultConfig()
	cfg.HeartbeatInterval = config.Duration(40 * time.Millisecond)
	ctl := New("router", &cfg, zerolog.Nop())
	if !ctl.Supervised() {
		t.Fatal("not supervised")
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := ctl.Ready(ctx); err != nil {
		t.Fatal(err)
	}
	if err := ctl.Ready(ctx); err != nil { // idempotent
		t.Fatal(err)
	}
	select {
	case <-ctl.ReadyC():
	default:
		t.Fatal("ReadyC not closed")
	}
	if sup.count(OpReady) != 1 {
		t.Fatalf("ready sent %d times", sup.count(OpReady))
	}
	eventually(t, "READY=1", func() bool { return countOf(notes(), "READY=1") == 1 })

	hbDone := make(chan struct{})
	go func() { defer close(hbDone); ctl.Heartbeat(ctx) }()
	eventually(t, "heartbeats and watchdog", func() bool {
		return sup.count(OpHeartbeat) >= 3 && countOf(notes(), "WATCHDOG=1") >= 3
	})

	// A failing progress check withholds both.
	ctl.SetProgressCheck(func() error { return errors.New("stuck") })
	time.Sleep(60 * time.Millisecond) // let an in-flight beat finish
	hb, wd := sup.count(OpHeartbeat), countOf(notes(), "WATCHDOG=1")
	time.Sleep(200 * time.Millisecond)
	if sup.count(OpHeartbeat) != hb || countOf(notes(), "WATCHDOG=1") != wd {
		t.Fatal("heartbeat sent while the progress check fails")
	}
	ctl.SetProgressCheck(nil)
	eventually(t, "heartbeats resume", func() bool { return sup.count(OpHeartbeat) > hb })
	cancel()
	<-hbDone

	if err := ctl.RequestRestart(context.Background(), "infer", "wedged"); err != nil {
		t.Fatal(err)
	}
	st, err := ctl.Status(context.Background())
	if err != nil || st.Instance != "fake" || len(st.Roles) != 1 {
		t.Fatalf("status %+v %v", st, err)
	}
	sup.mu.Lock()
	last := sup.reqs[len(sup.reqs)-2]
	sup.mu.Unlock()
	if last.Op != OpRestart || last.Target != "infer" || last.Role != "router" || last.Pid != os.Getpid() {
		t.Fatalf("restart request %+v", last)
	}
	ctl.Stopping()
	eventually(t, "STOPPING=1", func() bool { return countOf(notes(), "STOPPING=1") == 1 })
}

func TestStandaloneAndNotRunning(t *testing.T) {
	t.Setenv("NOTIFY_SOCKET", "")
	ctl := NewStandalone("apiserver", zerolog.Nop())
	if ctl.Supervised() {
		t.Fatal("standalone is supervised")
	}
	if err := ctl.Ready(context.Background()); err != nil {
		t.Fatal(err)
	}
	<-ctl.ReadyC()
	if err := ctl.RequestRestart(context.Background(), "infer", "x"); !errors.Is(err, ErrNotRunning) {
		t.Fatalf("want ErrNotRunning, got %v", err)
	}
	_, err := Call(context.Background(), filepath.Join(t.TempDir(), "none.sock"), Request{Op: OpStatus})
	if !errors.Is(err, ErrNotRunning) {
		t.Fatalf("want ErrNotRunning, got %v", err)
	}
}

func TestReadMessageLimits(t *testing.T) {
	var v Request
	if err := ReadMessage(bufio.NewReader(strings.NewReader(`{"op":"status"}`+"\n")), &v); err != nil || v.Op != "status" {
		t.Fatalf("%v %+v", err, v)
	}
	long := strings.Repeat("x", maxMessage+10) + "\n"
	if err := ReadMessage(bufio.NewReader(strings.NewReader(long)), &v); err == nil {
		t.Fatal("oversized message accepted")
	}
	if err := ReadMessage(bufio.NewReader(strings.NewReader("{bad\n")), &v); err == nil {
		t.Fatal("bad JSON accepted")
	}
}

func TestMainExitCodes(t *testing.T) {
	t.Setenv(config.EnvRunDir, t.TempDir())
	t.Setenv(EnvControlSocket, "")
	t.Setenv(EnvSupervisorPid, "")
	t.Setenv("NOTIFY_SOCKET", "")
	model := t.TempDir()
	if err := os.WriteFile(filepath.Join(model, "config.json"),
		[]byte(`{"max_position_embeddings": 256, "num_hidden_layers": 2, "num_attention_heads": 2, "hidden_size": 16, "eos_token_id": 2}`), 0o644); err != nil {
		t.Fatal(err)
	}
	base := []string{"--model_dir", model, "--max_total_token_num", "4096", "--metric_port", "9999", "--log_format", "json"}
	cleanStop := func(ctx context.Context, cfg *config.Config, _ zerolog.Logger, ctl *Controller) error {
		if err := ctl.Ready(ctx); err != nil {
			return err
		}
		_ = syscall.Kill(os.Getpid(), syscall.SIGTERM) // caught: Main's NotifyContext is active
		<-ctx.Done()
		return nil
	}
	tests := map[string]struct {
		args   []string
		env    map[string]string
		run    RunFunc
		code   int
		stdout string
		stderr string
	}{
		"help":         {args: []string{"--help"}, code: 0},
		"bad flag":     {args: []string{"--bogus"}, code: 2, stderr: "unknown flag"},
		"stray arg":    {args: append(base, "extra"), code: 2, stderr: "unexpected arguments"},
		"check-config": {args: append(base, "--check-config"), code: 0, stdout: `"max_req_total_len": 256`},
		"no model":     {args: []string{"--metric_port", "9999"}, code: 1, stderr: "--model_dir"},
		"role error": {args: base, code: 1, stderr: "engine exploded", run: func(context.Context, *config.Config, zerolog.Logger, *Controller) error {
			return errors.New("engine exploded")
		}},
		"early return": {args: base, code: 1, stderr: "without being asked to stop", run: func(context.Context, *config.Config, zerolog.Logger, *Controller) error {
			return nil
		}},
		"clean stop": {args: base, code: 0, stderr: `"message":"stopped"`, run: cleanStop},
		"orphaned":   {args: base, code: 1, env: map[string]string{EnvSupervisorPid: "1"}, stderr: "supervisor 1 is gone"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			run := tc.run
			if run == nil {
				run = func(context.Context, *config.Config, zerolog.Logger, *Controller) error {
					return errors.New("must not run")
				}
			}
			var stdout, stderr bytes.Buffer
			code := MainWith("router", run, MainOptions{Args: tc.args, Stdout: &stdout, Stderr: &stderr})
			if code != tc.code || !strings.Contains(stdout.String(), tc.stdout) || !strings.Contains(stderr.String(), tc.stderr) {
				t.Fatalf("code %d (want %d)\nstdout: %s\nstderr: %s", code, tc.code, stdout.String(), stderr.String())
			}
			if name == "check-config" {
				var c config.Config
				if err := json.Unmarshal(stdout.Bytes(), &c); err != nil || !c.Resolved || c.EosID[0] != 2 {
					t.Fatalf("check-config output: %v %+v", err, c)
				}
			}
		})
	}
}

// TestPipelineProcs: the pipeline roles get the cores infer's threads
// leave, never fewer than one.
func TestPipelineProcs(t *testing.T) {
	for _, c := range []struct{ cpus, threads, want int }{
		{2, 1, 1}, {2, 2, 1}, {2, 0, 1}, {16, 8, 8}, {16, 15, 1}, {16, 32, 1}, {1, 1, 1},
	} {
		if got := pipelineProcs(c.cpus, c.threads); got != c.want {
			t.Errorf("pipelineProcs(%d, %d) = %d, want %d", c.cpus, c.threads, got, c.want)
		}
	}
}

// TestRoleNice: infer is never lowered, the apiserver follows
// --apiserver_nice alone, every other role --pipeline_nice.
func TestRoleNice(t *testing.T) {
	cfg := &config.Config{PipelineNice: 7, APIServerNice: 2}
	for _, c := range []struct {
		role, flag string
		nice       int
	}{
		{config.RoleInfer, "", 0},
		{config.RoleAPIServer, "apiserver_nice", 2},
		{config.RoleRouter, "pipeline_nice", 7},
		{config.RoleDetokenizer, "pipeline_nice", 7},
		{config.RoleMetric, "pipeline_nice", 7},
		{config.RoleHealth, "pipeline_nice", 7},
	} {
		if flag, nice := roleNice(c.role, cfg); flag != c.flag || nice != c.nice {
			t.Errorf("roleNice(%s) = %q %d, want %q %d", c.role, flag, nice, c.flag, c.nice)
		}
	}
}
