package health

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestStallWatch: the stall watch reports a request-path role whose
// process is alive but whose loop has not turned for StallTimeout, at its
// own pace (no Check in between), publishes once when the set of stalled
// roles changes, keeps the finding through Checks without counting it
// towards a restart, and clears it when the loop turns again.
func TestStallWatch(t *testing.T) {
	type beat struct {
		role  string
		alive bool
		age   time.Duration // since the last turn; 0: never turned
	}
	for _, tc := range []struct {
		name      string
		beats     []beat
		loopsErr  error
		wantStall []string // targets of the stall findings
		status    Status
	}{
		{"all turning", []beat{{"router", true, 100 * time.Millisecond}, {"infer", true, 2 * time.Second}, {"detokenizer", true, time.Second}}, nil, nil, Healthy},
		{"infer stopped", []beat{{"router", true, 100 * time.Millisecond}, {"infer", true, 4 * time.Second}, {"detokenizer", true, time.Second}}, nil, []string{"infer"}, Unhealthy},
		{"two stalled", []beat{{"router", true, 5 * time.Second}, {"infer", true, 4 * time.Second}}, nil, []string{"router", "infer"}, Unhealthy},
		{"gone is not stalled", []beat{{"infer", false, time.Minute}}, nil, nil, Healthy},
		{"never turned", []beat{{"infer", true, 0}}, nil, nil, Healthy},
		{"unreadable", nil, errors.New("no region"), []string{""}, Degraded},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t)
			r.m.StallTimeout = 3 * time.Second
			published := 0
			r.m.Publish = func(Report) { published++ }
			beats := tc.beats
			r.m.Loops = func() ([]LoopBeat, error) {
				if tc.loopsErr != nil {
					return nil, tc.loopsErr
				}
				var out []LoopBeat
				for _, b := range beats {
					lb := LoopBeat{Role: b.role, Alive: b.alive}
					if b.age > 0 {
						lb.LastTurn = r.now.Add(-b.age)
					}
					out = append(out, lb)
				}
				return out, nil
			}
			base := r.step(t)
			if base.Status != Healthy || !base.Ready {
				t.Fatalf("before: %+v", base)
			}
			published = 0
			r.m.WatchStallsOnce()
			rep := r.m.Report()
			var got []string
			for _, f := range rep.Findings {
				if f.Source == SourceStall {
					got = append(got, f.Target)
				}
			}
			if len(got) != len(tc.wantStall) || rep.Status != tc.status {
				t.Fatalf("stall findings %q (status %v), want %q (%v): %+v", got, rep.Status, tc.wantStall, tc.status, rep.Findings)
			}
			for i := range got {
				if got[i] != tc.wantStall[i] {
					t.Fatalf("stall findings %q, want %q", got, tc.wantStall)
				}
			}
			if want := min(len(tc.wantStall), 1); published != want {
				t.Fatalf("%d reports published, want %d", published, want)
			}
			if rep.Ready != (tc.status != Unhealthy) {
				t.Fatalf("ready %v with status %v", rep.Ready, rep.Status)
			}
			r.m.WatchStallsOnce() // nothing changed: nothing published
			if want := min(len(tc.wantStall), 1); published != want {
				t.Fatalf("%d reports published after an unchanged watch, want %d", published, want)
			}
			// Checks keep the finding, and never restart for it. The stall
			// ages with the clock (step advances it by Interval).
			for range 2 * r.m.Failures {
				for i := range beats {
					if beats[i].age > 0 {
						beats[i].age += r.m.Interval
					}
				}
				if c := r.step(t); c.Status != tc.status {
					t.Fatalf("a check during the stall: status %v, want %v (%+v)", c.Status, tc.status, c.Findings)
				}
			}
			if len(r.restarts) != 0 {
				t.Fatalf("restarts %v for a stall", r.restarts)
			}
			// The loops turn again: the next watch clears it.
			tc.loopsErr = nil
			for i := range beats {
				beats[i].age = 10 * time.Millisecond
			}
			r.m.WatchStallsOnce()
			if rep := r.m.Report(); rep.Status != Healthy || len(rep.Findings) != 0 {
				t.Fatalf("after the loops turn again: %+v", rep)
			}
		})
	}
}

// TestRunWatchesStalls: Run's stall watch reports a stall without a Check
// (Interval is an hour), and Run returns only after the watch has stopped.
func TestRunWatchesStalls(t *testing.T) {
	r := newRig(t)
	r.m.Now = nil // the real clock: Run's tickers are real
	r.m.Interval = time.Hour
	r.m.StallTimeout = time.Second
	stalledAt := time.Now().Add(-time.Minute)
	r.m.Loops = func() ([]LoopBeat, error) {
		return []LoopBeat{{Role: "infer", Alive: true, LastTurn: stalledAt}}, nil
	}
	reports := make(chan Report, 16)
	r.m.Publish = func(rep Report) {
		select {
		case reports <- rep:
		default:
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.m.Run(ctx) }()
	deadline := time.After(time.Minute)
	for found := false; !found; {
		select {
		case rep := <-reports:
			for _, f := range rep.Findings {
				found = found || (f.Source == SourceStall && f.Target == "infer")
			}
		case <-deadline:
			t.Fatal("no stall report within a minute")
		}
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("Run: %v", err)
	}
}
