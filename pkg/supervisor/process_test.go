package supervisor

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/lightllm-go/lightllm/pkg/config"
	"github.com/lightllm-go/lightllm/pkg/rolectl"
)

const envTestConfig = "LIGHTLLM_TEST_CONFIG"

// testSupervisorMain is what cmd/lightllm's launch does, in miniature: a
// supervisor process whose roles are this test binary.
func testSupervisorMain() int {
	cfg, err := config.Load(os.Getenv(envTestConfig))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	exe, err := os.Executable()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	os.Setenv(envTestMode, "child") // inherited by the roles
	sup, err := New(Options{
		Config:     cfg,
		Log:        zerolog.New(os.Stderr).With().Str("role", "supervisor").Logger(),
		FindBinary: func(string) (string, error) { return exe, nil },
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	if err := sup.Run(ctx); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// TestSignalsToSupervisorProcess runs a real supervisor process: SIGTERM
// stops every role and removes the instance's files; SIGKILL of the
// supervisor kills every role through Pdeathsig, and CleanupStale (what
// `lightllm stop` and the next launch do) removes the files it left.
func TestSignalsToSupervisorProcess(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT, syscall.SIGKILL} {
		t.Run(sigName(sig), func(t *testing.T) {
			if sig == syscall.SIGINT && testing.Short() {
				t.Skip("SIGINT takes the SIGTERM path; skipped in -short")
			}
			cfg := testConfig(t)
			path := filepath.Join(t.TempDir(), "cfg.json")
			if err := cfg.Save(path); err != nil {
				t.Fatal(err)
			}
			out := &syncBuffer{}
			cmd := exec.Command(exe)
			cmd.Env = append(os.Environ(), envTestMode+"=supervisor", envTestConfig+"="+path)
			cmd.Stdout, cmd.Stderr = out, out
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			waitc := make(chan error, 1)
			go func() { waitc <- cmd.Wait() }()
			t.Cleanup(func() { _ = cmd.Process.Kill() })

			var st *rolectl.Status
			deadline := time.Now().Add(60 * time.Second)
			for st == nil {
				resp, err := rolectl.Call(context.Background(), cfg.ControlSocketPath(), rolectl.Request{Op: rolectl.OpStatus})
				if err == nil && resp.Status.Phase == rolectl.PhaseRunning {
					st = resp.Status
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("supervisor process never got to running: %v\n%s", err, out.String())
				}
				time.Sleep(50 * time.Millisecond)
			}
			var pids []int
			for _, r := range st.Roles {
				pids = append(pids, r.Pid)
			}
			if err := cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			select {
			case err := <-waitc:
				if sig != syscall.SIGKILL && err != nil {
					t.Fatalf("supervisor exit after %s: %v\n%s", sigName(sig), err, out.String())
				}
			case <-time.After(60 * time.Second):
				t.Fatalf("supervisor still running after %s\n%s", sigName(sig), out.String())
			}
			deadline = time.Now().Add(10 * time.Second)
			for _, p := range pids {
				for alive(p) {
					if time.Now().After(deadline) {
						t.Fatalf("role pid %d survived the supervisor's %s", p, sigName(sig))
					}
					time.Sleep(20 * time.Millisecond)
				}
			}
			if sig == syscall.SIGKILL {
				did, err := CleanupStale(cfg, zerolog.Nop())
				if err != nil || len(did) == 0 {
					t.Fatalf("CleanupStale after SIGKILL: %v %v", did, err)
				}
			}
			assertNoInstanceFiles(t, cfg)
		})
	}
}

func TestBackoff(t *testing.T) {
	tests := []struct {
		n    int
		want time.Duration
	}{{0, 100 * time.Millisecond}, {1, 200 * time.Millisecond}, {3, 800 * time.Millisecond}, {4, time.Second}, {60, time.Second}}
	for _, tc := range tests {
		if got := backoff(100*time.Millisecond, time.Second, tc.n); got != tc.want {
			t.Errorf("backoff(n=%d) = %s, want %s", tc.n, got, tc.want)
		}
	}
}

func TestLastLines(t *testing.T) {
	in := strings.Repeat("x\n", 30) + "last\n"
	got := lastLines(in, 3)
	if got != "    x\n    x\n    last" {
		t.Fatalf("%q", got)
	}
	if lastLines(" \n", 3) != "" {
		t.Fatal("blank output must give nothing")
	}
}

func TestFindRoleBinary(t *testing.T) {
	dir := t.TempDir()
	for _, n := range []string{"lightllm-router", "metric"} {
		if err := os.WriteFile(filepath.Join(dir, n), []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	_ = os.WriteFile(filepath.Join(dir, "infer"), []byte("not executable"), 0o644)
	t.Setenv("PATH", dir)
	tests := map[string]struct {
		role, want string
	}{
		"installed name": {"router", filepath.Join(dir, "lightllm-router")},
		"bare name":      {"metric", filepath.Join(dir, "metric")},
		"not executable": {"infer", ""},
		"missing":        {"health", ""},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := FindRoleBinary(tc.role)
			if tc.want == "" {
				if err == nil || !strings.Contains(err.Error(), "lightllm-"+tc.role) {
					t.Fatalf("want a not-found error, got %q %v", got, err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("got %q %v, want %q", got, err, tc.want)
			}
		})
	}
}

func TestNewRejectsBadOptions(t *testing.T) {
	cfg := testConfig(t)
	unresolved := *cfg
	unresolved.Resolved = false
	tests := map[string]Options{
		"no config":  {},
		"unresolved": {Config: &unresolved},
		"duplicate":  {Config: cfg, Stages: [][]string{{"router"}, {"router"}}},
		"stop order": {Config: cfg, Stages: [][]string{{"router"}}, StopOrder: [][]string{{"infer"}}},
	}
	for name, o := range tests {
		t.Run(name, func(t *testing.T) {
			if _, err := New(o); err == nil {
				t.Fatal("accepted")
			}
		})
	}
}
