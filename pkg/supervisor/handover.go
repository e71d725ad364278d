package supervisor

import (
	"sync"
	"syscall"
	"time"

	"github.com/lightllm-go/lightllm/pkg/config"
)

// Zero-gap apiserver restart. Stopping the old apiserver first would leave
// the port without a server for the whole drain (every new request 503)
// and then for the new one's start. Instead, with the listening socket held
// here (ports.go), `lightllm restart apiserver` starts the new process
// while the old one serves; once the new one is ready the old one gets
// SIGTERM, sees that a newer apiserver runs, and hands its clients over
// (pkg/apiserver handover.go) instead of draining. Neither process's slots
// are the other's to recover (shm RecoverSlots spares a live owner's).

// handsOver reports whether a requested restart of r starts the new
// process before stopping the old one.
func (s *Supervisor) handsOver(r *roleProc) bool {
	return r.name == config.RoleAPIServer && s.apiSocket != nil
}

// handOver starts r's next process beside the running p; retire stops p
// once the new one is ready. If the new one fails, p keeps serving while
// the failure is retried with backoff.
func (s *Supervisor) handOver(r *roleProc, p Process) error {
	r.retiring = append(r.retiring, p)
	s.log.Info().Str("target", r.name).Int("old_pid", p.Pid()).Msg("starting the new process before stopping the old one")
	return s.restart(r)
}

// retire sends SIGTERM to r's retiring processes (r's new process is
// ready), SIGKILL after their grace.
func (s *Supervisor) retire(r *roleProc) {
	for _, p := range r.retiring {
		s.log.Info().Str("target", r.name).Int("old_pid", p.Pid()).Msg("new process ready; stopping the old one")
		_ = p.Signal(syscall.SIGTERM)
		go func() {
			t := time.NewTimer(s.graceFor(r.name))
			defer t.Stop()
			select {
			case <-p.Done():
			case <-t.C:
				s.log.Warn().Str("target", r.name).Int("old_pid", p.Pid()).Msg("old process did not stop in time; killing")
				_ = p.Signal(syscall.SIGKILL)
			}
		}()
	}
}

// retiredExit handles the exit of a retiring process of r; false when the
// exit is not one of them.
func (s *Supervisor) retiredExit(r *roleProc, st ExitStatus) bool {
	for i, p := range r.retiring {
		if p.Pid() == st.Pid {
			r.retiring = append(r.retiring[:i], r.retiring[i+1:]...)
			s.log.Info().Str("target", r.name).Int("old_pid", st.Pid).Str("exit", st.String()).Msg("old process stopped")
			return true
		}
	}
	return false
}

// stopRetiring stops r's retiring processes (shutdown), joined.
func (s *Supervisor) stopRetiring(r *roleProc, wg *sync.WaitGroup) {
	for _, p := range r.retiring {
		wg.Add(1)
		go func() {
			defer wg.Done()
			st := Stop(p, s.graceFor(r.name))
			s.log.Info().Str("target", r.name).Int("old_pid", p.Pid()).Str("exit", st.String()).Msg("old process stopped")
		}()
	}
	r.retiring = nil
}
