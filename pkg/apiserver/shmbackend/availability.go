package shmbackend

import (
	"context"
	"fmt"
	"time"

	"github.com/lightllm-go/lightllm/pkg/apiserver"
)

// The request path is router → infer → detokenizer. While one of them is
// down (its process gone: killed and restarting, crash-looping) or stalled
// (alive but its loop not turning: SIGSTOP, a wedge), no request makes
// progress, so /health and /readiness say so at once (a load balancer stops
// sending here) instead of when the supervisor's heartbeat timeout or the
// health role's checks catch up. New requests wait up to
// UnavailableTimeout for a restart and are then refused with 503 +
// Retry-After; requests in flight keep waiting through a restart (the new
// process resumes them exactly), but end with an explicit error once the
// role has been gone for UnavailableTimeout: a role that cannot come back
// must not hold streams open until the client gives up.

// pathRoles name b.roles' entries.
var pathRoles = [3]string{"router", "infer", "detokenizer"}

// pathState is the request path's condition at one moment.
type pathState struct {
	role    string        // the first role that is down or stalled; "" when all run
	gone    time.Duration // how long role's process has been gone (0: it is alive)
	stalled time.Duration // how long an alive role's loop has not turned
}

func (p pathState) ok() bool { return p.role == "" }

func (p pathState) String() string {
	switch {
	case p.role == "":
		return "serving"
	case p.gone > 0:
		return fmt.Sprintf("the %s role is down (restarting) for %s", p.role, p.gone.Round(time.Millisecond))
	default:
		return fmt.Sprintf("the %s role has made no progress for %s", p.role, p.stalled.Round(time.Millisecond))
	}
}

// path reads the role records. A role's process is gone when its recorded
// pid names no process (infer records its pid once the model is loaded, so
// a reloading infer counts as gone); goneSince keeps when that was first
// seen, which the dispatcher's polling keeps fresh.
func (b *Backend) path(now time.Time) pathState {
	b.availMu.Lock()
	defer b.availMu.Unlock()
	var st pathState
	for i, rs := range b.roles {
		pid := rs.Pid.Load()
		if rs.Epoch.Load() == 0 {
			continue // never started: Ready covers it
		}
		if !processAlive(pid) {
			if b.goneSince[i].IsZero() || b.gonePid[i] != pid {
				b.goneSince[i], b.gonePid[i] = now, pid
			}
			if st.role == "" || st.gone == 0 {
				st = pathState{role: pathRoles[i], gone: max(now.Sub(b.goneSince[i]), time.Nanosecond)}
			}
			continue
		}
		b.goneSince[i] = time.Time{}
		if age := now.Sub(time.Unix(0, rs.HeartbeatUnixNano.Load())); age > b.o.StallTimeout && st.role == "" {
			st = pathState{role: pathRoles[i], stalled: age}
		}
	}
	return st
}

// waitAvailable waits, up to UnavailableTimeout, until every request-path
// role runs; a request admitted while one restarts would only queue
// behind it, and one refused at once could not tell a restart of half a
// second from an outage.
func (b *Backend) waitAvailable(ctx context.Context) error {
	deadline := time.Now().Add(b.o.UnavailableTimeout)
	for {
		st := b.path(time.Now())
		if st.ok() {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%w: %s", apiserver.ErrNotReady, st)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// failStranded ends every group in flight with an error once a
// request-path role has been gone for UnavailableTimeout. Their slots are
// aborted and freed as for a client that left.
func (b *Backend) failStranded(now time.Time) {
	st := b.path(now)
	if st.gone < b.o.UnavailableTimeout {
		return
	}
	b.mu.Lock()
	groups := make([]*group, 0, len(b.groups))
	for _, g := range b.groups {
		groups = append(groups, g)
	}
	b.mu.Unlock()
	if len(groups) == 0 {
		return
	}
	msg := st.String() + "; the request cannot finish"
	b.log.Error().Str("role", st.role).Dur("down", st.gone).Int("requests", len(groups)).Msg("ending requests in flight with an error")
	for _, g := range groups {
		if g.isAborted() {
			continue
		}
		for i := range g.seqs {
			if s := &g.st[i]; !s.done {
				s.done = true
				g.left--
				select { // the reader drains the channel; a full one is closed below and reads as lost
				case g.events <- apiserver.Event{Seq: i, TokenID: -1, Finished: true, Reason: apiserver.FinishError, Err: msg}:
				default:
				}
			}
		}
		b.abortSlots(g.seqs)
	}
}
