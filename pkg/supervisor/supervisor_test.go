package supervisor

import (
	"context"
	"errors"
	"os"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lightllm-go/lightllm/pkg/config"
	"github.com/lightllm-go/lightllm/pkg/rolectl"
)

func TestLaunchInOrderThenStop(t *testing.T) {
	cfg := testConfig(t)
	var orderErr []string
	h := newHarness(t, cfg, nil, nil, func(h *harness, spec Spec) {
		// Every role of an earlier stage must be ready before this one starts.
		st := h.sup.Status()
		for i, stage := range LaunchStages() {
			if slices.Contains(stage, spec.Role) {
				break
			}
			for _, r := range LaunchStages()[i] {
				if !roleOf(st, r).Ready {
					orderErr = append(orderErr, spec.Role+" started before "+r+" was ready")
				}
			}
		}
		if spec.Args[0] != "--config" || spec.Args[1] != cfg.ConfigPath() {
			orderErr = append(orderErr, "args "+strings.Join(spec.Args, " "))
		}
	})
	h.run()
	st := h.waitRunning()
	if len(orderErr) > 0 {
		t.Fatalf("launch order: %v", orderErr)
	}
	want := []string{"metric", "router", "detokenizer", "infer", "apiserver", "health"}
	h.mu.Lock()
	got := slices.Clone(h.started)
	h.mu.Unlock()
	if !slices.Equal(got, want) {
		t.Fatalf("start order %v, want %v", got, want)
	}

	// The control socket serves status; files are where the layout says.
	remote := h.status()
	if remote.Instance != cfg.Instance || remote.SupervisorPid != os.Getpid() || len(remote.Roles) != 6 {
		t.Fatalf("remote status %+v", remote)
	}
	pids := map[int]bool{}
	for _, r := range st.Roles {
		if r.Pid == 0 || pids[r.Pid] || r.Restarts != 0 || r.State != rolectl.StateReady {
			t.Fatalf("role %+v", r)
		}
		pids[r.Pid] = true
		if _, err := os.Stat(cfg.SocketPath(r.Role)); err != nil {
			t.Errorf("socket of %s: %v", r.Role, err)
		}
	}
	saved, err := config.Load(cfg.ConfigPath())
	if err != nil || saved.Instance != cfg.Instance || !saved.Resolved {
		t.Fatalf("saved config: %v %+v", err, saved)
	}
	state, err := ReadStateFile(cfg.StatePath())
	if err != nil || state.SupervisorPid != os.Getpid() || len(state.Roles) != 6 || state.Roles[0].Pid == 0 {
		t.Fatalf("state file: %v %+v", err, state)
	}

	// A second supervisor for the same instance refuses to start.
	other, err := New(Options{Config: cfg, FindBinary: func(string) (string, error) { return "/bin/true", nil }})
	if err != nil {
		t.Fatal(err)
	}
	if err := other.Run(context.Background()); !errors.Is(err, ErrAlreadyRunning) {
		t.Fatalf("second supervisor: %v", err)
	}

	if _, err := rolectl.Call(context.Background(), cfg.ControlSocketPath(), rolectl.Request{Op: rolectl.OpStop}); err != nil {
		t.Fatalf("stop: %v", err)
	}
	if err := h.wait(30 * time.Second); err != nil {
		t.Fatalf("Run after stop: %v", err)
	}
	h.assertAllGone()
}

func TestKill9RestartsOnlyThatRole(t *testing.T) {
	cfg := testConfig(t)
	h := newHarness(t, cfg, nil, nil, nil)
	h.run()
	before := h.waitRunning()
	for i, victim := range []string{config.RoleDetokenizer, config.RoleRouter, config.RoleMetric} {
		old := roleOf(before, victim).Pid
		if err := syscall.Kill(old, syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		after := h.waitUntil(victim+" restarted", 60*time.Second, func(st rolectl.Status) bool {
			r := roleOf(st, victim)
			return r.Ready && r.Pid != old && r.Pid != 0
		})
		r := roleOf(after, victim)
		if r.Restarts != 1 || !strings.Contains(r.LastExit, "SIGKILL") {
			t.Errorf("%s: restarts=%d last exit %q", victim, r.Restarts, r.LastExit)
		}
		for _, o := range before.Roles {
			if o.Role == victim {
				continue
			}
			if n := roleOf(after, o.Role); n.Pid != o.Pid || n.Restarts != o.Restarts {
				t.Errorf("kill %s (#%d) disturbed %s: pid %d→%d restarts %d", victim, i, o.Role, o.Pid, n.Pid, n.Restarts)
			}
		}
		before = after
	}
	h.cancel() // what SIGTERM does in cmd/lightllm
	if err := h.wait(30 * time.Second); err != nil {
		t.Fatalf("Run: %v", err)
	}
	h.assertAllGone()
}

func TestRestartBudgetStopsCleanly(t *testing.T) {
	cfg := testConfig(t)
	cfg.RestartBudget = 2
	// router serves on its first start and crashes right after every later one.
	h := newHarness(t, cfg, [][]string{{config.RoleMetric}, {config.RoleRouter}}, func(role string, n int) string {
		if role == config.RoleRouter && n > 0 {
			return "crash"
		}
		return ""
	}, nil)
	h.run()
	st := h.waitRunning()
	_ = syscall.Kill(roleOf(st, config.RoleRouter).Pid, syscall.SIGKILL)
	err := h.wait(60 * time.Second)
	if !errors.Is(err, ErrRestartBudget) || !strings.Contains(err.Error(), "role router failed 3 times") {
		t.Fatalf("want the restart-budget error naming router, got %v", err)
	}
	h.mu.Lock()
	starts := h.starts[config.RoleRouter]
	h.mu.Unlock()
	if starts != 3 { // first start + 2 restarts
		t.Errorf("router started %d times, want 3", starts)
	}
	h.assertAllGone()
}

// TestCrashLoopDegradesAndRecovers: with the default --restart_budget 0 a
// role that cannot start (its model file unreadable, say) is reported
// crash-looping while the other roles keep running, and is retried until
// the cause goes away; then it serves again with no human restart.
func TestCrashLoopDegradesAndRecovers(t *testing.T) {
	cfg := testConfig(t)
	cfg.RestartBudget = 0
	const failing = 5 // starts 1..5 after the first fail before ready
	h := newHarness(t, cfg, [][]string{{config.RoleMetric}, {config.RoleRouter}}, func(role string, n int) string {
		if role == config.RoleRouter && n > 0 && n <= failing {
			return "fail"
		}
		return ""
	}, nil)
	h.run()
	st := h.waitRunning()
	metricPid := roleOf(st, config.RoleMetric).Pid
	_ = syscall.Kill(roleOf(st, config.RoleRouter).Pid, syscall.SIGKILL)
	h.waitUntil("router crash-looping", 30*time.Second, func(st rolectl.Status) bool {
		r := roleOf(st, config.RoleRouter)
		return r.CrashLooping && r.FailuresInARow >= crashLoopAfter && !r.Ready
	})
	if m := roleOf(h.status(), config.RoleMetric); m.Pid != metricPid || !m.Ready {
		t.Fatalf("metric role disturbed by router's crash loop: %+v", m)
	}
	st = h.waitUntil("router recovered", 60*time.Second, func(st rolectl.Status) bool {
		r := roleOf(st, config.RoleRouter)
		return r.Ready && !r.CrashLooping
	})
	h.mu.Lock()
	starts := h.starts[config.RoleRouter]
	h.mu.Unlock()
	if starts != failing+2 || st.Phase != rolectl.PhaseRunning {
		t.Fatalf("router started %d times (want %d), phase %s", starts, failing+2, st.Phase)
	}
	if !strings.Contains(h.out.String(), `"crash_looping":true`) {
		t.Errorf("no log line marks the crash loop:\n%s", h.out.String())
	}
	h.cancel()
	if err := h.wait(30 * time.Second); err != nil {
		t.Fatalf("Run: %v", err)
	}
	h.assertAllGone()
}

func TestLaunchFailureShowsStderr(t *testing.T) {
	tests := map[string]struct {
		mutate   func(*config.Config)
		stages   [][]string
		behavior behaviorFunc
		want     []string
	}{
		"exits before ready": {
			behavior: func(role string, _ int) string {
				if role == config.RoleInfer {
					return "fail"
				}
				return ""
			},
			want: []string{"role infer exited before the launch completed (exit status 1)", "boom: cannot load model weights"},
		},
		"never ready": {
			mutate: func(c *config.Config) { c.ReadyTimeout = config.Duration(time.Second) },
			stages: [][]string{{config.RoleMetric}, {config.RoleAPIServer}, {config.RoleHealth}},
			behavior: func(role string, _ int) string {
				if role == config.RoleAPIServer {
					return "noready"
				}
				return ""
			},
			want: []string{"role apiserver did not report ready within --ready_timeout 1s"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			cfg := testConfig(t)
			if tc.mutate != nil {
				tc.mutate(cfg)
			}
			h := newHarness(t, cfg, tc.stages, tc.behavior, nil)
			h.run()
			err := h.wait(60 * time.Second)
			if !errors.Is(err, ErrLaunch) {
				t.Fatalf("want ErrLaunch, got %v", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
			h.mu.Lock()
			_, healthStarted := h.starts[config.RoleHealth]
			h.mu.Unlock()
			if healthStarted {
				t.Error("launch went on past the failed role")
			}
			h.assertAllGone()
		})
	}
}

func TestRestartRequests(t *testing.T) {
	cfg := testConfig(t)
	// health asks for an infer restart once it is up (the first time only).
	stages := [][]string{{config.RoleRouter}, {config.RoleInfer}, {config.RoleHealth}}
	h := newHarness(t, cfg, stages, func(role string, n int) string {
		if role == config.RoleHealth && n == 0 {
			return "restart-infer"
		}
		return ""
	}, nil)
	h.run()
	h.waitUntil("infer restarted at health's request", 60*time.Second, func(st rolectl.Status) bool {
		r := roleOf(st, config.RoleInfer)
		return st.Phase == rolectl.PhaseRunning && r.Restarts == 1 && r.Ready
	})

	// The operator's `lightllm restart router`.
	old := roleOf(h.status(), config.RoleRouter).Pid
	if _, err := rolectl.Call(context.Background(), cfg.ControlSocketPath(), rolectl.Request{Op: rolectl.OpRestart, Target: "router"}); err != nil {
		t.Fatal(err)
	}
	st := h.waitUntil("router restarted", 60*time.Second, func(st rolectl.Status) bool {
		r := roleOf(st, config.RoleRouter)
		return r.Ready && r.Pid != old && r.Pid != 0
	})
	if r := roleOf(st, config.RoleRouter); r.Restarts != 1 || !strings.Contains(r.LastExit, "exit status 0") {
		t.Errorf("router after restart: %+v (a requested restart is a clean SIGTERM stop)", r)
	}
	_, err := rolectl.Call(context.Background(), cfg.ControlSocketPath(), rolectl.Request{Op: rolectl.OpRestart, Target: "nosuch"})
	if err == nil || !strings.Contains(err.Error(), `unknown role "nosuch"`) {
		t.Fatalf("restart of an unknown role: %v", err)
	}
	// Messages from a process that is not the role's current one are refused.
	_, err = rolectl.Call(context.Background(), cfg.ControlSocketPath(), rolectl.Request{Op: rolectl.OpReady, Role: "router", Pid: old})
	if err == nil {
		t.Fatal("ready from a replaced pid accepted")
	}
	h.cancel()
	if err := h.wait(30 * time.Second); err != nil {
		t.Fatal(err)
	}
	h.assertAllGone()
}

func TestWedgedRoleIsKilledAndRestarted(t *testing.T) {
	cfg := testConfig(t)
	cfg.HeartbeatTimeout = config.Duration(time.Second)
	h := newHarness(t, cfg, [][]string{{config.RoleRouter, config.RoleInfer}}, func(role string, n int) string {
		if role == config.RoleInfer && n == 0 {
			return "wedge"
		}
		return ""
	}, nil)
	h.run()
	st := h.waitUntil("wedged infer replaced", 60*time.Second, func(st rolectl.Status) bool {
		r := roleOf(st, config.RoleInfer)
		return st.Phase == rolectl.PhaseRunning && r.Restarts == 1 && r.Ready
	})
	if r := roleOf(st, config.RoleInfer); !strings.Contains(r.LastExit, "SIGKILL") {
		t.Errorf("infer last exit %q, want SIGKILL", r.LastExit)
	}
	if r := roleOf(st, config.RoleRouter); r.Restarts != 0 {
		t.Errorf("router restarted too: %+v", r)
	}
	h.cancel()
	if err := h.wait(30 * time.Second); err != nil {
		t.Fatal(err)
	}
	h.assertAllGone()
}

func TestStopEscalatesToSIGKILL(t *testing.T) {
	cfg := testConfig(t)
	cfg.StopTimeout = config.Duration(2 * time.Second) // the router must stop cleanly within it, even under -race
	h := newHarness(t, cfg, [][]string{{config.RoleRouter, config.RoleDetokenizer}}, func(role string, _ int) string {
		if role == config.RoleDetokenizer {
			return "ignoreterm"
		}
		return ""
	}, nil)
	h.run()
	h.waitRunning()
	start := time.Now()
	h.cancel()
	if err := h.wait(30 * time.Second); err != nil {
		t.Fatal(err)
	}
	if r := roleOf(h.sup.Status(), config.RoleDetokenizer); r.LastExit != "killed by SIGKILL" {
		t.Errorf("detokenizer last exit %q", r.LastExit)
	}
	if r := roleOf(h.sup.Status(), config.RoleRouter); r.LastExit != "exit status 0" {
		t.Errorf("router last exit %q, want a clean exit", r.LastExit)
	}
	if d := time.Since(start); d > 20*time.Second {
		t.Errorf("stop took %s", d)
	}
	h.assertAllGone()
}
