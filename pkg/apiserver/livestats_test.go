package apiserver

import (
	"testing"
	"time"
)

func TestSampleRingPercentiles(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	ms := func(v ...int) []time.Duration {
		out := make([]time.Duration, len(v))
		for i, x := range v {
			out[i] = time.Duration(x) * time.Millisecond
		}
		return out
	}
	cases := map[string]struct {
		capacity int
		samples  []time.Duration
		old      int // how many of the first samples lie before the window
		want     Percentiles
	}{
		"none":                                   {8, nil, 0, Percentiles{}},
		"one sample is every rank":               {8, ms(7), 0, Percentiles{Count: 1, P50: 7, P90: 7, P99: 7, Max: 7}},
		"1..10: p50 5th, p90 9th, p99 10th":      {16, ms(10, 9, 8, 7, 6, 5, 4, 3, 2, 1), 0, Percentiles{Count: 10, P50: 5, P90: 9, P99: 10, Max: 10}},
		"samples before the window are left out": {16, ms(1000, 1000, 1, 2, 3, 4), 2, Percentiles{Count: 4, P50: 2, P90: 4, P99: 4, Max: 4}},
		"a full ring keeps the latest":           {4, ms(900, 900, 1, 2, 3, 4), 0, Percentiles{Count: 4, P50: 2, P90: 4, P99: 4, Max: 4}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			r := newSampleRing(tc.capacity)
			for i, v := range tc.samples {
				at := now.Add(-time.Second)
				if i < tc.old {
					at = now.Add(-(statsWindow + 1) * time.Second)
				}
				r.add(at, v)
			}
			if got := r.percentiles(now.Add(-statsWindow * time.Second)); got != tc.want {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestLiveStatsWindow(t *testing.T) {
	l := newLiveStats()
	t0 := time.Unix(1_700_000_000, 0)
	l.token(t0, 0)
	l.token(t0.Add(100*time.Millisecond), 100*time.Millisecond)
	l.token(t0.Add(time.Second), time.Second)
	l.done(t0.Add(time.Second), true, false, 50*time.Millisecond, 10, 4)
	l.done(t0.Add(time.Second), false, false, 0, 10, 10) // cancelled: no cache sample
	s := l.snapshot(t0.Add(2 * time.Second))
	last := s.TokensPerSecond[len(s.TokensPerSecond)-2:]
	if last[0] != 2 || last[1] != 1 || s.ITL.Count != 2 || s.TTFT.Count != 1 || s.Finished != 1 || s.Cancelled != 1 {
		t.Fatalf("snapshot after 2 s: last seconds %v, %+v", last, s)
	}
	if s.PromptCacheHitRate == nil || *s.PromptCacheHitRate != 0.4 {
		t.Errorf("hit rate %v, want 0.4 (4 of 10 tokens)", s.PromptCacheHitRate)
	}
	// A bucket is reused for the second statsWindow later, not added to.
	l.token(t0.Add(statsWindow*time.Second), 0)
	s = l.snapshot(t0.Add((statsWindow + 1) * time.Second))
	var sum int64
	for _, n := range s.TokensPerSecond {
		sum += n
	}
	if sum != 2 || s.PromptCacheHitRate != nil { // second 1 (one token) and second 300 (one token) remain
		t.Errorf("after the window moved: %d tokens in it, hit rate %v", sum, s.PromptCacheHitRate)
	}
}
