package health

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/lightllm-go/lightllm/pkg/config"
	"github.com/lightllm-go/lightllm/pkg/gpu"
)

// rig drives a Monitor with fakes: a settable clock, engine load, probe
// result and role list, and records restart requests and probe calls.
type rig struct {
	m        *Monitor
	now      time.Time
	engine   Engine
	probeErr error
	probes   int
	roles    []RoleInfo
	gpu      GPUReading
	gpuErr   error
	restarts []string
}

func newRig(t *testing.T) *rig {
	t.Helper()
	r := &rig{now: time.Unix(1_700_000_000, 0)}
	r.roles = []RoleInfo{
		{Role: "metric", Pid: 10, Ready: true}, {Role: "router", Pid: 11, Ready: true},
		{Role: "detokenizer", Pid: 12, Ready: true}, {Role: "infer", Pid: 13, Ready: true},
		{Role: "apiserver", Pid: 14, Ready: true}, {Role: "health", Pid: 15, Ready: true},
	}
	r.m = &Monitor{
		Interval: 10 * time.Second, ProgressTimeout: 60 * time.Second, HeartbeatTimeout: 30 * time.Second,
		Failures: 3, Log: zerolog.Nop(),
		Now:    func() time.Time { return r.now },
		Engine: func() (Engine, error) { return r.engine, nil },
		Probe:  func(context.Context) error { r.probes++; return r.probeErr },
		Roles: func(context.Context) ([]RoleInfo, error) {
			out := append([]RoleInfo(nil), r.roles...)
			for i := range out {
				if out[i].LastBeat.IsZero() {
					out[i].LastBeat = r.now
				}
			}
			return out, nil
		},
		Restart: func(_ context.Context, role, reason string) error {
			r.restarts = append(r.restarts, role)
			return nil
		},
	}
	return r
}

// step advances the clock by one interval and runs a check.
func (r *rig) step(t *testing.T) Report {
	t.Helper()
	r.now = r.now.Add(r.m.Interval)
	return r.m.Check(context.Background())
}

func (r *rig) role(name string) *RoleInfo {
	for i := range r.roles {
		if r.roles[i].Role == name {
			return &r.roles[i]
		}
	}
	return nil
}

func TestNFailuresGiveOneRestart(t *testing.T) {
	r := newRig(t)
	r.probeErr = errors.New("timeout")
	var got []int // restart count after each step
	for i := 0; i < 7; i++ {
		rep := r.step(t)
		got = append(got, len(r.restarts))
		if rep.Status != Unhealthy || rep.Ready {
			t.Fatalf("step %d: status %v ready %v, want unhealthy and not ready", i, rep.Status, rep.Ready)
		}
	}
	// Failures=3: a request at the 3rd and the 6th failed check, no more.
	if want := []int{0, 0, 1, 1, 1, 2, 2}; !equal(got, want) {
		t.Fatalf("restart requests after each check %v, want %v", got, want)
	}
	for _, role := range r.restarts {
		if role != "infer" {
			t.Fatalf("restarted %q, want infer", role)
		}
	}
}

func TestRecoveryResetsCount(t *testing.T) {
	r := newRig(t)
	seq := []bool{false, false, true, false, false, true, false, false, false}
	for i, ok := range seq {
		r.probeErr = nil
		if !ok {
			r.probeErr = errors.New("boom")
		}
		rep := r.step(t)
		if ok && (rep.Status != Healthy || !rep.Ready || rep.Failures != nil) {
			t.Fatalf("step %d: a passing check must be healthy and ready with no failures, got %+v", i, rep)
		}
	}
	if len(r.restarts) != 1 {
		t.Fatalf("restarts %v, want exactly one (only the last three checks failed in a row)", r.restarts)
	}
}

func TestNewProcessResetsCount(t *testing.T) {
	r := newRig(t)
	r.probeErr = errors.New("boom")
	r.step(t)
	r.step(t)
	r.role("infer").Pid = 99 // restarted by someone else in between
	r.step(t)
	if len(r.restarts) != 0 {
		t.Fatalf("restarts %v: a new infer process must start its count afresh", r.restarts)
	}
}

func TestPassiveRuleWhenBusy(t *testing.T) {
	tests := map[string]struct {
		engine  func(now time.Time) Engine
		steps   int
		target  string // "" = healthy throughout
		restart bool
	}{
		"progressing": {
			engine: func(now time.Time) Engine { return Engine{Running: 4, LastProgress: now.Add(-time.Second)} },
			steps:  5,
		},
		"wedged engine": {
			engine: func(now time.Time) Engine { return Engine{Running: 4, LastProgress: now.Add(-2 * time.Minute)} },
			steps:  10, target: "infer", restart: true,
		},
		"stuck queue": {
			engine: func(now time.Time) Engine { return Engine{Waiting: 2, LastProgress: now.Add(-2 * time.Minute)} },
			steps:  10, target: "router", restart: true,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			r := newRig(t)
			r.probeErr = errors.New("the probe must not run while busy")
			for i := 0; i < tc.steps; i++ {
				r.engine = tc.engine(r.now.Add(r.m.Interval))
				rep := r.step(t)
				// The first busy check starts the clock (busySince): a stale
				// mark counts only once the engine has been busy for longer
				// than ProgressTimeout (60 s = 6 intervals), from step 7 on.
				if stale := tc.target != "" && i >= 7; stale != (rep.Status == Unhealthy) {
					t.Fatalf("step %d: %v %+v, want unhealthy=%v", i, rep.Status, rep.Findings, stale)
				}
				for _, f := range rep.Findings {
					if f.Status == Unhealthy && f.Target != tc.target {
						t.Fatalf("step %d: finding %+v, want target %q", i, f, tc.target)
					}
				}
			}
			if r.probes != 0 {
				t.Errorf("probe ran %d times while busy", r.probes)
			}
			if tc.restart != (len(r.restarts) > 0) {
				t.Errorf("restarts %v, want restart=%v", r.restarts, tc.restart)
			}
		})
	}
}

// A first long prefill after a long idle time is not a stall: the clock
// starts when the engine becomes busy (LightLLM PR #1432).
func TestBusyAfterIdleIsNotStale(t *testing.T) {
	r := newRig(t)
	idleSince := r.now.Add(-time.Hour)
	r.engine = Engine{LastProgress: idleSince}
	r.step(t) // idle: probe passes
	r.engine = Engine{Running: 1, LastProgress: idleSince}
	for i := 0; i < 7; i++ { // 60 s of prefill
		if rep := r.step(t); rep.Status != Healthy {
			t.Fatalf("step %d: %v %+v", i, rep.Status, rep.Findings)
		}
	}
	if rep := r.step(t); rep.Status != Unhealthy {
		t.Fatalf("70 s busy without progress: %v, want unhealthy", rep.Status)
	}
}

// Right after a busy, progressing check the idle engine is not probed; an
// idle infer's fresh LastProgress alone (it refreshes it while idle) does
// not skip the probe, or the probe would never run on a real server.
func TestProbeSkippedAfterRecentProgress(t *testing.T) {
	r := newRig(t)
	r.engine = Engine{Running: 2, LastProgress: r.now.Add(r.m.Interval)}
	r.step(t) // busy and progressing
	r.probeErr = errors.New("must not be called")
	r.engine = Engine{LastProgress: r.now}
	r.now = r.now.Add(r.m.Interval / 2) // the next check comes early
	if rep := r.m.Check(context.Background()); rep.Status != Healthy || r.probes != 0 || !rep.Ready {
		t.Fatalf("status %v probes %d ready %v", rep.Status, r.probes, rep.Ready)
	}
	r.probeErr = nil
	r.engine = Engine{LastProgress: r.now.Add(r.m.Interval - time.Millisecond)} // idle, freshly refreshed
	if rep := r.step(t); rep.Status != Healthy || r.probes != 1 {
		t.Fatalf("idle a whole interval: status %v, %d probes, want 1", rep.Status, r.probes)
	}
}

func TestProbeErrorTargets(t *testing.T) {
	tests := map[string]struct {
		err     error
		status  Status
		restart string
	}{
		"plain error":    {errors.New("x"), Unhealthy, "infer"},
		"apiserver down": {&ProbeError{Target: "apiserver", Status: Unhealthy, Err: errors.New("refused")}, Unhealthy, "apiserver"},
		"draining":       {&ProbeError{Target: "apiserver", Status: Degraded, Err: errors.New("503")}, Degraded, ""},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			r := newRig(t)
			r.probeErr = tc.err
			var rep Report
			for i := 0; i < 3; i++ {
				rep = r.step(t)
			}
			if rep.Status != tc.status {
				t.Errorf("status %v, want %v", rep.Status, tc.status)
			}
			if want := tc.restart; (want == "") != (len(r.restarts) == 0) || (want != "" && r.restarts[0] != want) {
				t.Errorf("restarts %v, want %q", r.restarts, want)
			}
		})
	}
}

func TestRolesNotReadySkipEngine(t *testing.T) {
	r := newRig(t)
	r.probeErr = errors.New("must not run while infer loads")
	r.role("infer").Ready, r.role("infer").State = false, "starting"
	for i := 0; i < 5; i++ {
		rep := r.step(t)
		if rep.Status != Degraded || rep.Ready || r.probes != 0 {
			t.Fatalf("step %d: status %v ready %v probes %d", i, rep.Status, rep.Ready, r.probes)
		}
		if !strings.Contains(rep.Findings[0].What, "infer not ready (starting)") {
			t.Fatalf("finding %+v", rep.Findings)
		}
	}
	if len(r.restarts) != 0 {
		t.Fatalf("restarts %v while a role was starting", r.restarts)
	}
	r.role("infer").Ready = true
	if rep := r.step(t); rep.Status != Unhealthy || r.probes != 1 {
		t.Fatalf("after ready: %v, probes %d", rep.Status, r.probes)
	}
}

func TestStaleHeartbeat(t *testing.T) {
	r := newRig(t)
	r.role("router").LastBeat = r.now // frozen from now on
	var rep Report
	for i := 0; i < 6; i++ {
		rep = r.step(t)
	}
	// 60 s silent with a 30 s timeout: unhealthy from the 4th check (40 s).
	if rep.Status != Unhealthy || len(r.restarts) != 1 || r.restarts[0] != "router" {
		t.Fatalf("status %v restarts %v, want one router restart", rep.Status, r.restarts)
	}
	if !strings.Contains(rep.Findings[0].What, "router (pid 11) silent for 1m0s") {
		t.Fatalf("finding %+v", rep.Findings)
	}
}

func TestGPUFindings(t *testing.T) {
	tests := map[string]struct {
		reading GPUReading
		err     error
		status  Status
	}{
		"fine":      {GPUReading{Readings: gpu.Readings{TempC: 40}}, nil, Healthy},
		"hot":       {GPUReading{Problems: []gpu.Problem{{What: "hot"}}}, nil, Degraded},
		"xid":       {GPUReading{Problems: []gpu.Problem{{Fatal: true, What: "XID 79"}}}, nil, Unhealthy},
		"read fail": {GPUReading{}, errors.New("GPU is lost"), Unhealthy},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			r := newRig(t)
			r.m.CheckInferProcess = true
			var gotPid int
			r.m.GPU = func(pid int) (GPUReading, error) { gotPid = pid; return tc.reading, tc.err }
			rep := r.step(t)
			if rep.Status != tc.status {
				t.Fatalf("status %v, want %v (%+v)", rep.Status, tc.status, rep.Findings)
			}
			if gotPid != 13 {
				t.Errorf("GPU check got infer pid %d, want 13", gotPid)
			}
			if tc.err == nil && (rep.GPU == nil || rep.GPU.TempC != tc.reading.Readings.TempC) {
				t.Errorf("report GPU readings %+v", rep.GPU)
			}
		})
	}
}

func TestRestartRequestFailureIsNotFatal(t *testing.T) {
	r := newRig(t)
	r.probeErr = errors.New("boom")
	calls := 0
	r.m.Restart = func(context.Context, string, string) error { calls++; return errors.New("no supervisor") }
	for i := 0; i < 6; i++ {
		r.step(t)
	}
	if calls != 2 {
		t.Fatalf("restart calls %d, want 2 (one per %d failures)", calls, r.m.Failures)
	}
}

func TestReportJSON(t *testing.T) {
	rep := Report{Status: Degraded, Findings: []Finding{{Target: "infer", Source: SourceGPU, Status: Unhealthy, What: "x"}}}
	var back Report
	if err := json.Unmarshal(rep.JSON(), &back); err != nil {
		t.Fatal(err)
	}
	if back.Status != Degraded || back.Findings[0].Status != Unhealthy {
		t.Fatalf("round trip %+v", back)
	}
	if !strings.Contains(string(rep.JSON()), `"status": "degraded"`) {
		t.Fatalf("status not written by name: %s", rep.JSON())
	}
	var s Status
	if err := s.UnmarshalText([]byte("sick")); err == nil {
		t.Fatal("unknown status name accepted")
	}
}

func TestNewMonitorFromConfig(t *testing.T) {
	cfg := config.DefaultConfig()
	cfg.Backend = config.BackendCUDA
	m := NewMonitor(&cfg, zerolog.Nop())
	if m.Interval != cfg.HealthInterval.D() || m.ProgressTimeout != cfg.HealthTimeout.D() || m.Failures != 3 || !m.CheckInferProcess {
		t.Fatalf("%+v", m)
	}
	m.Interval = 0
	if err := m.Run(context.Background()); err == nil {
		t.Fatal("Run with a zero interval must fail")
	}
}

func equal(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
