package sched

import (
	"slices"
	"testing"
)

func newPF(t *testing.T, o PastFutureOptions) *pastFuture {
	t.Helper()
	p, err := newPastFuture(o, 1)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestPastFutureHistoryWindow(t *testing.T) {
	p := newPF(t, PastFutureOptions{Window: 3})
	for _, v := range []int{500, 100, 900, 300, 700} {
		p.observe(v)
	}
	if want := []int32{300, 700, 900}; !slices.Equal(p.sorted, want) {
		t.Fatalf("kept %v, want the last three sorted %v", p.sorted, want)
	}
}

func TestPastFutureDraw(t *testing.T) {
	tests := []struct {
		name           string
		history        []int
		lo, maxNew     int
		wantLo, wantHi int
	}{
		{"empty history is uniform up to max_new", nil, 1, 4096, 1, 4096},
		{"conditioned on the current length", []int{100, 2000, 3000, 3500}, 2501, 4096, 2501, 4096},
		{"history above max_new counts as max_new", []int{5000, 6000}, 10, 300, 10, 300},
		{"at max_new", []int{10, 20}, 300, 300, 300, 300},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := newPF(t, PastFutureOptions{})
			for _, v := range tc.history {
				p.observe(v)
			}
			for range 2000 {
				if s := p.draw(tc.lo, tc.maxNew); s < tc.wantLo || s > tc.wantHi {
					t.Fatalf("draw(%d, %d) = %d, outside [%d, %d]", tc.lo, tc.maxNew, s, tc.wantLo, tc.wantHi)
				}
			}
		})
	}
	// The interpolated empirical distribution of [1, 1000×40, 2000] puts
	// 39 of its 41 segments at exactly 1000: the mean is close to 1000.
	p := newPF(t, PastFutureOptions{})
	for range 40 {
		p.observe(1000)
	}
	sum := 0
	for range 10000 {
		sum += p.draw(1, 2000)
	}
	if mean := float64(sum) / 10000; mean < 980 || mean > 1020 {
		t.Fatalf("mean draw %v, want ≈1000", mean)
	}
}

func TestPastFutureStickyDraws(t *testing.T) {
	p := newPF(t, PastFutureOptions{})
	r := &Request{ID: 1, InputLen: 10, MaxNewTokens: 4096}
	first := p.final(r, 2)
	if len(r.samples) != 3 {
		t.Fatalf("samples %v, want 3 slots", r.samples)
	}
	for out := 0; out < first; out += 97 {
		r.OutputLen = out
		if got := p.final(r, 2); got != first {
			t.Fatalf("draw changed from %d to %d at output %d", first, got, out)
		}
	}
	r.OutputLen = first
	if got := p.final(r, 2); got <= first {
		t.Fatalf("outgrown draw %d not redrawn above %d", got, first)
	}
}

func TestPastFutureScenariosAndLimit(t *testing.T) {
	p := newPF(t, PastFutureOptions{})
	cfg := DefaultConfig(100000)
	for n, want := range map[int]int{0: 1, 1: 5, 33: 5, 50: 5, 67: 3, 100: 3, 256: 1} {
		v := &View{Config: &cfg, Running: make([]*Request, n)}
		if got := p.scenarios(v); got != want {
			t.Errorf("scenarios with %d running = %d, want %d", n, got, want)
		}
	}
	if got := p.limit(&View{Config: &cfg}); got != 97000 {
		t.Errorf("limit %d, want 97000", got)
	}
}

// A request one token short of max_new_tokens can only end at max_new_tokens,
// which makes the sampled tuple exact and the peak hand-computable.
func TestPastFuturePeak(t *testing.T) {
	s := newSched(t, DefaultConfig(2200), PolicyPastFuture, PolicyOptions{})
	run := &Request{ID: 1, InputLen: 1000, MaxNewTokens: 100}
	submitSingles(t, s, []*Request{run})
	s.Step(StepInput{})
	run.OutputLen, run.KVLen = 99, 1098
	// running (1098, 1), new (1000, 0 + 2 for its prefill chunk):
	// 1000+2 = 1002, 2098+2·1 = 2100 < 0.97·2200 = 2134
	submitSingles(t, s, []*Request{{ID: 2, InputLen: 1000, MaxNewTokens: 1}})
	if res := s.Step(StepInput{}); len(res.New) != 1 || res.Load.EstimatedPeakTokens != 2100 {
		t.Fatalf("admitted %v peak %d; want [2] 2100", ids(res.New), res.Load.EstimatedPeakTokens)
	}
	// The same with 2150 of KV: 2100 is not below 0.97·2150 = 2085.
	s = newSched(t, DefaultConfig(2150), PolicyPastFuture, PolicyOptions{})
	run = &Request{ID: 1, InputLen: 1000, MaxNewTokens: 100}
	submitSingles(t, s, []*Request{run})
	s.Step(StepInput{})
	run.OutputLen, run.KVLen = 99, 1098
	submitSingles(t, s, []*Request{{ID: 2, InputLen: 1000, MaxNewTokens: 1}})
	if res := s.Step(StepInput{}); len(res.New) != 0 {
		t.Fatalf("admitted %v above the capacity ratio", ids(res.New))
	}
}
