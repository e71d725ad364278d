package health

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/lightllm-go/lightllm/pkg/config"
	"github.com/lightllm-go/lightllm/pkg/gpu"
)

// Engine is the engine's load as the router and infer publish it in shm.
type Engine struct {
	Running, Waiting int64
	// LastProgress is when infer last produced a token (zero: never).
	LastProgress time.Time
}

// RoleInfo is one role as the supervisor (or shm) sees it.
type RoleInfo struct {
	Role  string
	Pid   int
	Ready bool
	State string // supervisor state when known ("starting", "backoff", ...)
	// LastBeat is the last heartbeat; zero when the source has none.
	LastBeat time.Time
}

// GPUReading is one NVML check of the pinned device.
type GPUReading struct {
	Readings gpu.Readings
	Problems []gpu.Problem
}

// ProbeError says which role a failed probe points at, and whether it is a
// fault at all (an overloaded or draining apiserver answering 429/503 is
// not).
type ProbeError struct {
	Target string
	Status Status
	Err    error
}

func (e *ProbeError) Error() string { return e.Err.Error() }
func (e *ProbeError) Unwrap() error { return e.Err }

// pipeline are the roles a request crosses: the engine checks mean nothing
// while one of them is not ready.
func pipeline() []string {
	return []string{config.RoleAPIServer, config.RoleRouter, config.RoleDetokenizer, config.RoleInfer}
}

// Monitor is the health role's state machine. Its dependencies are function
// fields, so tests drive it without processes; nil fields skip their checks.
// One Check runs at a time.
type Monitor struct {
	// Probe runs a real tiny generation (POST /generate, max_new_tokens 1).
	Probe func(ctx context.Context) error
	// Engine reads the load counters.
	Engine func() (Engine, error)
	// Roles lists the other roles.
	Roles func(ctx context.Context) ([]RoleInfo, error)
	// GPU reads the pinned device; inferPid is 0 when infer's process
	// should not be checked (not ready, CPU backend).
	GPU func(inferPid int) (GPUReading, error)
	// Loops reads the request path's loop heartbeats (the stall watch).
	Loops func() ([]LoopBeat, error)
	// Restart asks the supervisor to restart a role.
	Restart func(ctx context.Context, role, reason string) error
	// Publish receives every report (metrics, status file); optional.
	Publish func(Report)
	// Now is the clock (default time.Now).
	Now func() time.Time

	// Interval is the time between checks (--health_interval).
	Interval time.Duration
	// ProgressTimeout is how long a busy engine may go without progress,
	// and the probe's timeout (--health_timeout, LightLLM's HEALTH_TIMEOUT).
	ProgressTimeout time.Duration
	// HeartbeatTimeout is how old a role's heartbeat may get; 0 disables.
	HeartbeatTimeout time.Duration
	// StallTimeout is how long a request-path loop may go without turning
	// before the stall watch reports it (--stall_timeout); 0 disables.
	StallTimeout time.Duration
	// Failures is how many consecutive failed checks of a role trigger a
	// restart request (--health_failures).
	Failures int
	// CheckInferProcess makes the GPU check require infer's pid among the
	// device's compute processes (CUDA backend).
	CheckInferProcess bool
	Log               zerolog.Logger

	checking  sync.Mutex // serialises Check; guards the fields below
	fails     map[string]int
	busySince time.Time
	// busyProgress is when a check last found the engine busy and
	// progressing.
	busyProgress time.Time
	engineOK     bool           // the engine answered at least once
	lastRoles    map[string]int // pid per role at the last check

	mu     sync.Mutex // guards last and stalls: Report must not wait for a probe
	last   Report
	stalls []Finding // the stall watch's current findings

	// publishing serialises storing last and Publish between Check and the
	// stall watch, so reports are published in the order they are stored.
	publishing sync.Mutex
}

// NewMonitor returns a monitor with the intervals and threshold of cfg.
// The caller sets the function fields.
func NewMonitor(cfg *config.Config, log zerolog.Logger) *Monitor {
	return &Monitor{
		Interval:          cfg.HealthInterval.D(),
		ProgressTimeout:   cfg.HealthTimeout.D(),
		HeartbeatTimeout:  cfg.HeartbeatTimeout.D(),
		StallTimeout:      cfg.StallTimeout.D(),
		Failures:          cfg.HealthFailures,
		CheckInferProcess: cfg.Backend == config.BackendCUDA,
		Log:               log,
	}
}

func (m *Monitor) now() time.Time {
	if m.Now != nil {
		return m.Now()
	}
	return time.Now()
}

// Report returns the last report (zero before the first Check).
func (m *Monitor) Report() Report {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.last
}

// Run checks every Interval, and watches the loop heartbeats every
// stallEvery, until ctx is done.
func (m *Monitor) Run(ctx context.Context) error {
	if m.Interval <= 0 {
		return fmt.Errorf("health: interval must be positive, got %v", m.Interval)
	}
	var wg sync.WaitGroup
	defer wg.Wait()
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	wg.Add(1)
	go m.watchStalls(wctx, &wg)
	t := time.NewTicker(m.Interval)
	defer t.Stop()
	for {
		m.Check(ctx)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
}

// Check runs one cycle: roles and heartbeats, the engine (passive rule when
// busy, probe when idle), the GPU; then counts consecutive failures per
// role and asks for a restart of a role that reached Failures.
func (m *Monitor) Check(ctx context.Context) Report {
	m.checking.Lock()
	defer m.checking.Unlock()
	now := m.now()
	rep := Report{At: now}

	roles, notReady := m.checkRoles(ctx, now, &rep)
	pipelineUp := true
	for _, r := range pipeline() {
		if notReady[r] {
			pipelineUp = false
		}
	}
	if pipelineUp {
		m.checkEngine(ctx, now, &rep)
	} else {
		m.busySince = time.Time{} // the engine restarts: measure anew
	}
	if m.GPU != nil {
		pid := 0
		if r, ok := roles[config.RoleInfer]; ok && r.Ready && m.CheckInferProcess {
			pid = r.Pid
		}
		m.checkGPU(pid, &rep)
	}

	rep.Status = worst(rep.Findings)
	rep.Ready = len(notReady) == 0 && m.engineOK && rep.Status != Unhealthy
	m.count(ctx, &rep) // before the stall findings: they never count
	m.publishing.Lock()
	defer m.publishing.Unlock()
	m.mu.Lock()
	rep = withStalls(rep, m.stalls)
	m.last = rep
	m.mu.Unlock()
	if m.Publish != nil {
		m.Publish(rep)
	}
	return rep
}

func (m *Monitor) add(rep *Report, target, source string, s Status, format string, args ...any) {
	rep.Findings = append(rep.Findings, Finding{Target: target, Source: source, Status: s, What: fmt.Sprintf(format, args...)})
}

// checkRoles reports roles that are not ready (degraded: the supervisor
// handles them) and ready roles whose heartbeat is too old (unhealthy).
func (m *Monitor) checkRoles(ctx context.Context, now time.Time, rep *Report) (map[string]RoleInfo, map[string]bool) {
	byRole := map[string]RoleInfo{}
	notReady := map[string]bool{}
	if m.Roles == nil {
		return byRole, notReady
	}
	list, err := m.Roles(ctx)
	if err != nil {
		m.add(rep, "", SourceRoles, Degraded, "cannot list roles: %v", err)
		return byRole, notReady
	}
	pids := map[string]int{}
	for _, r := range list {
		byRole[r.Role] = r
		pids[r.Role] = r.Pid
		if r.Role == config.RoleHealth {
			continue
		}
		if !r.Ready {
			notReady[r.Role] = true
			m.add(rep, r.Role, SourceRoles, Degraded, "%s not ready (%s)", r.Role, orUnknown(r.State))
			continue
		}
		if m.HeartbeatTimeout > 0 && !r.LastBeat.IsZero() {
			if age := now.Sub(r.LastBeat); age > m.HeartbeatTimeout {
				m.add(rep, r.Role, SourceHeartbeat, Unhealthy, "%s (pid %d) silent for %v (heartbeat timeout %v)",
					r.Role, r.Pid, age.Round(time.Millisecond), m.HeartbeatTimeout)
			}
		}
	}
	// A role with a new process starts its failure count afresh.
	for role, pid := range pids {
		if old, ok := m.lastRoles[role]; ok && old != pid {
			delete(m.fails, role)
		}
	}
	m.lastRoles = pids
	return byRole, notReady
}

// checkEngine applies LightLLM's rules: when busy, the engine must have
// made progress within ProgressTimeout (passive); when idle, a real tiny
// generation must succeed (active), unless the engine made progress within
// the last Interval anyway.
func (m *Monitor) checkEngine(ctx context.Context, now time.Time, rep *Report) {
	if m.Engine == nil {
		m.engineOK = true // nothing to check against: trust the roles
		return
	}
	e, err := m.Engine()
	if err != nil {
		m.add(rep, "", SourceProgress, Degraded, "cannot read engine load: %v", err)
		return
	}
	busy := e.Running > 0 || e.Waiting > 0
	switch {
	case !busy:
		m.busySince = time.Time{}
	case m.busySince.IsZero():
		// Count from when we first saw it busy, so a first long prefill
		// after idle is not a stall (LightLLM PR #1432).
		m.busySince = now
	}
	if busy {
		last := e.LastProgress
		if m.busySince.After(last) {
			last = m.busySince
		}
		if age := now.Sub(last); age > m.ProgressTimeout {
			target := config.RoleInfer
			if e.Running == 0 { // requests wait, none run: nothing admits them
				target = config.RoleRouter
			}
			m.add(rep, target, SourceProgress, Unhealthy, "no progress for %v with %d running and %d waiting (timeout %v)",
				age.Round(time.Millisecond), e.Running, e.Waiting, m.ProgressTimeout)
			return
		}
		m.engineOK = true
		m.busyProgress = now
		return
	}
	// Skip the probe when this monitor saw the engine busy and progressing
	// within the last Interval: it just served something. Infer's own
	// LastProgress cannot tell, since an idle infer refreshes it too (so
	// that the apiserver's /health rule holds after a long idle time).
	if !m.busyProgress.IsZero() && now.Sub(m.busyProgress) < m.Interval {
		m.engineOK = true
		return
	}
	if m.Probe == nil {
		m.engineOK = true
		return
	}
	pctx, cancel := context.WithTimeout(ctx, m.ProgressTimeout)
	err = m.Probe(pctx)
	cancel()
	if err == nil {
		m.engineOK = true
		return
	}
	if ctx.Err() != nil {
		return // we are stopping; not the engine's fault
	}
	target, status := config.RoleInfer, Unhealthy
	var pe *ProbeError
	if errors.As(err, &pe) {
		target, status = pe.Target, pe.Status
	}
	m.add(rep, target, SourceProbe, status, "probe generation failed: %v", err)
}

func (m *Monitor) checkGPU(inferPid int, rep *Report) {
	g, err := m.GPU(inferPid)
	if err != nil {
		m.add(rep, config.RoleInfer, SourceGPU, Unhealthy, "GPU read failed: %v", err)
		return
	}
	r := g.Readings
	rep.GPU = &r
	for _, p := range g.Problems {
		s := Degraded
		if p.Fatal {
			s = Unhealthy
		}
		m.add(rep, config.RoleInfer, SourceGPU, s, "%s", p.What)
	}
}

// count updates the consecutive-failure counters: a role with an unhealthy
// finding this cycle counts one more, any other role starts over. A role
// reaching Failures gets one restart request, and its count starts over.
func (m *Monitor) count(ctx context.Context, rep *Report) {
	if m.fails == nil {
		m.fails = map[string]int{}
	}
	failing := map[string][]string{}
	for _, f := range rep.Findings {
		if f.Status == Unhealthy && f.Target != "" {
			failing[f.Target] = append(failing[f.Target], f.What)
		}
	}
	for role := range m.fails {
		if _, ok := failing[role]; !ok {
			delete(m.fails, role)
		}
	}
	for _, role := range slices.Sorted(maps.Keys(failing)) {
		m.fails[role]++
		if m.fails[role] < max(m.Failures, 1) {
			continue
		}
		reason := fmt.Sprintf("health: %d consecutive failed checks: %s", m.fails[role], failing[role][0])
		delete(m.fails, role)
		rep.Restarts = append(rep.Restarts, role)
		if m.Restart == nil {
			m.Log.Error().Str("target", role).Str("reason", reason).Msg("role unhealthy; nobody to ask for a restart")
			continue
		}
		if err := m.Restart(ctx, role, reason); err != nil {
			m.Log.Error().Err(err).Str("target", role).Str("reason", reason).Msg("restart request failed")
		} else {
			m.Log.Warn().Str("target", role).Str("reason", reason).Msg("asked the supervisor to restart a role")
		}
	}
	if len(m.fails) > 0 {
		rep.Failures = maps.Clone(m.fails)
	}
}

func orUnknown(s string) string {
	if s == "" {
		return "state unknown"
	}
	return s
}
