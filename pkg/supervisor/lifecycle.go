package supervisor

import (
	"fmt"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/lightllm-go/lightllm/pkg/config"
	"github.com/lightllm-go/lightllm/pkg/rolectl"
)

// crashLoopAfter is how many consecutive failures, none after serving
// StableAfter, make a role crash-looping: reported in status, on /health
// (through the health role) and as lightllm_role_crash_looping.
const crashLoopAfter = 3

// onExit handles a role process's exit: fatal while launching, an immediate
// restart when the exit was requested, otherwise a failure with backoff.
func (s *Supervisor) onExit(r *roleProc, gen int, st ExitStatus) error {
	if gen != r.gen && s.retiredExit(r, st) {
		return nil
	}
	s.mu.Lock()
	if gen != r.gen || r.proc == nil {
		s.mu.Unlock()
		return nil // an event about a process already replaced
	}
	output := r.proc.Output()
	end := st.ExitedAt
	if end.IsZero() {
		end = time.Now()
	}
	var served time.Duration
	if !r.readyAt.IsZero() {
		served = end.Sub(r.readyAt)
	}
	r.proc, r.pid, r.startTicks = nil, 0, 0
	r.lastExit, r.state = st.String(), rolectl.StateStopped
	launching := s.phase == rolectl.PhaseLaunching
	requested := r.restartRequested
	r.restartRequested = false
	s.mu.Unlock()
	stopTimer(r.readyTimer)
	stopTimer(r.killTimer)
	s.writeState()

	if launching {
		return launchError(r.name, "exited before the launch completed ("+st.String()+")", output)
	}
	if requested {
		s.log.Info().Str("target", r.name).Str("exit", st.String()).Msg("role stopped for restart")
		return s.restart(r)
	}
	return s.failed(r, served, "exited unexpectedly: "+st.String())
}

// failed charges a failure and schedules the role's restart. The delay
// doubles per consecutive failure and starts over once the role had served
// (been ready) for StableAfter: a role killed now and then after working
// fine comes back at once, one that cannot start backs off to
// restart_backoff_max and keeps being retried there, so that fixing the
// cause (a model file restored, a device back) recovers the server without
// a human. Only --restart_budget N > 0 turns too many failures within
// restart_window into a full stop, for operators whose service manager
// restarts the whole server instead.
func (s *Supervisor) failed(r *roleProc, served time.Duration, why string) error {
	if err := s.countFailure(r, time.Now(), why); err != nil {
		return err
	}
	d, looping := s.nextDelay(r, served)
	s.mu.Lock()
	r.state, r.failuresInARow, r.crashLooping = rolectl.StateBackoff, r.consecutive, looping
	gen := r.gen
	s.mu.Unlock()
	r.restartTimer = time.AfterFunc(d, func() { s.post(event{kind: evRestartDue, role: r.name, gen: gen}) })
	ev := s.log.Warn()
	if looping {
		ev = s.log.Error()
	}
	// One line per attempt: what happened, and when the next try is.
	ev.Str("target", r.name).Str("why", why).Stringer("served", served).Int("failures_in_a_row", r.consecutive).
		Int("failures_in_window", len(r.failures)).Bool("crash_looping", looping).Stringer("restart_in", d).
		Msg("role failed; restarting")
	s.writeState()
	return nil
}

// nextDelay counts one more failure in a row (starting over when the role
// had served StableAfter) and returns the delay before the next start.
func (s *Supervisor) nextDelay(r *roleProc, served time.Duration) (d time.Duration, crashLooping bool) {
	if served >= s.opts.StableAfter {
		r.consecutive = 0
	}
	d = backoff(s.cfg.RestartBackoff.D(), s.cfg.RestartBackoffMax.D(), r.consecutive)
	r.consecutive++
	return d, r.consecutive >= crashLoopAfter
}

// countFailure records a failure; with --restart_budget N > 0, more than N
// of them within restart_window stop the server.
func (s *Supervisor) countFailure(r *roleProc, now time.Time, why string) error {
	window := s.cfg.RestartWindow.D()
	kept := r.failures[:0]
	for _, t := range r.failures {
		if now.Sub(t) < window {
			kept = append(kept, t)
		}
	}
	r.failures = append(kept, now)
	if s.cfg.RestartBudget > 0 && len(r.failures) > s.cfg.RestartBudget {
		return fmt.Errorf("%w: role %s failed %d times within %s (last: %s), more than --restart_budget %d; stopping the server",
			ErrRestartBudget, r.name, len(r.failures), window, why, s.cfg.RestartBudget)
	}
	return nil
}

// backoff is base·2^n, capped at max.
func backoff(base, max time.Duration, n int) time.Duration {
	d := base
	for i := 0; i < n && d < max; i++ {
		d *= 2
	}
	if d > max {
		d = max
	}
	return d
}

// restart starts a new process for r; a failed start counts as a failure.
func (s *Supervisor) restart(r *roleProc) error {
	s.mu.Lock()
	r.restarts++
	s.mu.Unlock()
	if err := s.start(r); err != nil {
		s.log.Error().Err(err).Str("target", r.name).Msg("restart failed")
		return s.failed(r, 0, "restart failed: "+err.Error())
	}
	return nil
}

func (s *Supervisor) onReadyTimeout(r *roleProc, gen int) error {
	s.mu.Lock()
	p := r.proc
	pending := r.gen == gen && r.state == rolectl.StateStarting && p != nil
	launching := s.phase == rolectl.PhaseLaunching
	if pending {
		r.state = rolectl.StateStopping
	}
	s.mu.Unlock()
	if !pending {
		return nil
	}
	_ = p.Signal(syscall.SIGKILL)
	if launching {
		<-p.Done() // so the output below is complete
		return launchError(r.name, fmt.Sprintf("did not report ready within --ready_timeout %s", s.cfg.ReadyTimeout), p.Output())
	}
	// The exit that follows is charged as a failure and restarted.
	s.log.Error().Str("target", r.name).Stringer("ready_timeout", s.cfg.ReadyTimeout.D()).Msg("role not ready in time; killed")
	return nil
}

// onRestartRequest handles `lightllm restart ROLE` and restart requests from
// roles (health asking for infer). A role's request reports a fault and is
// charged to the target's restart budget; an operator's is not.
func (s *Supervisor) onRestartRequest(req rolectl.Request) (rolectl.Response, error) {
	r := s.roles[req.Target]
	if r == nil {
		return rolectl.Response{Error: fmt.Sprintf("unknown role %q (roles: %s)", req.Target, strings.Join(s.order, ", "))}, nil
	}
	s.mu.Lock()
	phase, state, p := s.phase, r.state, r.proc
	s.mu.Unlock()
	if phase != rolectl.PhaseRunning {
		return rolectl.Response{Error: "instance is " + phase + "; try again when it is running"}, nil
	}
	by := "operator"
	if req.Role != "" {
		by = req.Role
	}
	s.log.Warn().Str("target", r.name).Str("requested_by", by).Str("reason", req.Reason).Msg("restart requested")
	if req.Role != "" {
		if err := s.countFailure(r, time.Now(), "restart requested by "+by+": "+req.Reason); err != nil {
			return rolectl.Response{OK: true}, err
		}
	}
	switch {
	case state == rolectl.StateBackoff:
		stopTimer(r.restartTimer)
		return rolectl.Response{OK: true}, s.restart(r)
	case p == nil || r.restartRequested:
		return rolectl.Response{OK: true}, nil // already on its way
	case state == rolectl.StateReady && s.handsOver(r):
		return rolectl.Response{OK: true}, s.handOver(r, p)
	}
	s.mu.Lock()
	r.restartRequested, r.state = true, rolectl.StateStopping
	gen := r.gen
	s.mu.Unlock()
	_ = p.Signal(syscall.SIGTERM)
	r.killTimer = time.AfterFunc(s.graceFor(r.name), func() { s.post(event{kind: evKillDue, role: r.name, gen: gen}) })
	return rolectl.Response{OK: true}, nil
}

// checkHeartbeats kills ready roles that stopped sending heartbeats: alive
// but wedged is treated as crashed.
func (s *Supervisor) checkHeartbeats(now time.Time) {
	limit := s.cfg.HeartbeatTimeout.D()
	for _, name := range s.order {
		r := s.roles[name]
		s.mu.Lock()
		p, silent := r.proc, now.Sub(r.lastHeartbeat)
		wedged := p != nil && r.state == rolectl.StateReady && silent > limit
		if wedged {
			r.state = rolectl.StateStopping
		}
		s.mu.Unlock()
		if wedged {
			s.log.Error().Str("target", name).Stringer("silent", silent).Msg("no heartbeat; killing the role")
			_ = p.Signal(syscall.SIGKILL)
		}
	}
}

// graceFor is how long a role may take to stop after SIGTERM: the apiserver
// drains in-flight requests for --graceful_timeout first.
func (s *Supervisor) graceFor(role string) time.Duration {
	if role == config.RoleAPIServer {
		return s.cfg.GracefulTimeout.D() + s.cfg.StopTimeout.D()
	}
	return s.cfg.StopTimeout.D()
}

// shutdown stops every role in StopOrder, each stage's roles together, and
// then any role the order did not name.
func (s *Supervisor) shutdown() {
	s.setPhase(rolectl.PhaseStopping)
	_ = rolectl.NotifySystemd("STOPPING=1")
	for _, name := range s.order {
		r := s.roles[name]
		stopTimer(r.readyTimer)
		stopTimer(r.restartTimer)
		stopTimer(r.killTimer)
	}
	stages := append(append([][]string(nil), s.opts.StopOrder...), s.order)
	for _, stage := range stages {
		var wg sync.WaitGroup
		for _, name := range stage {
			r := s.roles[name]
			s.stopRetiring(r, &wg)
			s.mu.Lock()
			p := r.proc
			if p != nil {
				r.state = rolectl.StateStopping
			}
			s.mu.Unlock()
			if p == nil {
				continue
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				st := Stop(p, s.graceFor(r.name))
				s.mu.Lock()
				r.proc, r.pid, r.state, r.lastExit = nil, 0, rolectl.StateStopped, st.String()
				s.mu.Unlock()
				s.log.Info().Str("target", r.name).Str("exit", st.String()).Msg("role stopped")
			}()
		}
		wg.Wait()
	}
}

func (s *Supervisor) stageReady(stage int) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, name := range s.opts.Stages[stage] {
		if s.roles[name].state != rolectl.StateReady {
			return false
		}
	}
	return true
}

func (s *Supervisor) setPhase(p string) {
	s.mu.Lock()
	s.phase = p
	s.mu.Unlock()
}

// Status returns the supervisor's view of the instance.
func (s *Supervisor) Status() rolectl.Status {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := rolectl.Status{
		Instance: s.cfg.Instance, SupervisorPid: pid(), StartedAt: s.started, Phase: s.phase,
		RunDir: s.cfg.RunDir, ShmDir: s.cfg.ShmDir,
	}
	for _, name := range s.order {
		r := s.roles[name]
		rs := rolectl.RoleStatus{
			Role: name, Pid: r.pid, State: r.state, Ready: r.state == rolectl.StateReady,
			ReadyAt: r.readyAt, Restarts: r.restarts, LastExit: r.lastExit, Binary: r.binary,
			FailuresInARow: r.failuresInARow, CrashLooping: r.crashLooping,
		}
		if r.proc != nil {
			rs.StartedAt, rs.LastHeartbeat = r.startedAt, r.lastHeartbeat
		}
		st.Roles = append(st.Roles, rs)
	}
	return st
}

func (s *Supervisor) writeState() {
	s.mu.Lock()
	st := &StateFile{
		Instance: s.cfg.Instance, SupervisorPid: pid(), StartedAt: s.started,
		RunDir: s.cfg.RunDir, ShmDir: s.cfg.ShmDir,
	}
	st.SupervisorTicks, _ = procStartTicks(st.SupervisorPid)
	for _, name := range s.order {
		r := s.roles[name]
		st.Roles = append(st.Roles, StateRole{
			Role: name, Pid: r.pid, StartTicks: r.startTicks, StartedAt: r.startedAt,
			Restarts: r.restarts, Ready: r.state == rolectl.StateReady,
		})
	}
	s.mu.Unlock()
	if err := writeStateFile(s.cfg.StatePath(), st); err != nil {
		s.log.Warn().Err(err).Msg("state file")
	}
}

func stopTimer(t *time.Timer) {
	if t != nil {
		t.Stop()
	}
}

// launchError is a failed launch with the end of the role's output.
func launchError(role, what, output string) error {
	msg := fmt.Sprintf("role %s %s", role, what)
	if tail := lastLines(output, 20); tail != "" {
		msg += "; its last output:\n" + tail
	}
	return fmt.Errorf("%w: %s", ErrLaunch, msg)
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	out := strings.TrimSpace(strings.Join(lines, "\n"))
	if out == "" {
		return ""
	}
	return "    " + strings.ReplaceAll(out, "\n", "\n    ")
}
