package health

import (
	"context"
	"slices"
	"sync"
	"time"
)

// LoopBeat is one request-path role's loop as shm records it: router,
// infer and detokenizer store the time on every turn of their loop.
type LoopBeat struct {
	Role  string
	Alive bool // its recorded process exists
	// LastTurn is when its loop last turned.
	LastTurn time.Time
}

// stallEvery is how often the stall watch reads the loop heartbeats. It is
// independent of Interval (10 s by default, and a Check can wait for a
// probe as long as ProgressTimeout), so that a wedge is reported within
// StallTimeout plus a second.
const stallEvery = 500 * time.Millisecond

// watchStalls reads the loop heartbeats every stallEvery until ctx is done,
// and publishes a report whenever the set of stalled roles changes. The
// apiserver's /health is 503 on the same condition (it reads the same
// records); this makes the health role's own report, status file and
// metric say so too, with one log line when a stall starts and one when
// it ends.
func (m *Monitor) watchStalls(ctx context.Context, wg *sync.WaitGroup) {
	defer wg.Done()
	t := time.NewTicker(stallEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			m.WatchStallsOnce()
		}
	}
}

// WatchStallsOnce is one turn of the stall watch (tests call it with an
// injected clock).
func (m *Monitor) WatchStallsOnce() {
	fs := m.stallFindings(m.now())
	m.publishing.Lock()
	defer m.publishing.Unlock()
	m.mu.Lock()
	old := m.stalls
	m.stalls = fs
	changed := !slices.EqualFunc(fs, old, func(a, b Finding) bool { return a.Target == b.Target })
	rep := m.last
	if changed {
		rep = withStalls(rep, fs)
		m.last = rep
	}
	m.mu.Unlock()
	if !changed {
		return
	}
	for _, f := range fs {
		if !slices.ContainsFunc(old, func(o Finding) bool { return o.Target == f.Target }) {
			m.Log.Warn().Str("target", f.Target).Str("what", f.What).Msg("request path stalled")
		}
	}
	for _, o := range old {
		if !slices.ContainsFunc(fs, func(f Finding) bool { return f.Target == o.Target }) {
			m.Log.Info().Str("target", o.Target).Msg("request path moving again")
		}
	}
	if m.Publish != nil {
		m.Publish(rep)
	}
}

// stallFindings are the roles whose process is alive but whose loop has
// not turned for StallTimeout. A role whose process is gone is the
// supervisor's (and checkRoles') to report.
func (m *Monitor) stallFindings(now time.Time) []Finding {
	if m.Loops == nil || m.StallTimeout <= 0 {
		return nil
	}
	beats, err := m.Loops()
	if err != nil {
		return []Finding{{Source: SourceStall, Status: Degraded, What: "cannot read the loop heartbeats: " + err.Error()}}
	}
	var fs []Finding
	for _, b := range beats {
		if !b.Alive || b.LastTurn.IsZero() {
			continue
		}
		if age := now.Sub(b.LastTurn); age > m.StallTimeout {
			fs = append(fs, Finding{Target: b.Role, Source: SourceStall, Status: Unhealthy,
				What: b.Role + " loop has not turned for " + age.Round(time.Millisecond).String() + " (stall timeout " + m.StallTimeout.String() + ")"})
		}
	}
	return fs
}

// withStalls is rep with its stall findings replaced by fs, and its status
// and readiness recomputed.
func withStalls(rep Report, fs []Finding) Report {
	kept := slices.DeleteFunc(slices.Clone(rep.Findings), func(f Finding) bool { return f.Source == SourceStall })
	rep.Findings = append(kept, fs...)
	if len(rep.Findings) == 0 {
		rep.Findings = nil
	}
	rep.Status = worst(rep.Findings)
	if rep.Status == Unhealthy {
		rep.Ready = false
	}
	return rep
}
