package sched

import (
	"errors"
	"testing"
)

func newSched(t *testing.T, cfg Config, policy string, o PolicyOptions) *Scheduler {
	t.Helper()
	p, err := NewPolicy(policy, o)
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(cfg, p)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func mkReqs(first uint64, n, input, maxNew int) []*Request {
	rs := make([]*Request, n)
	for i := range rs {
		rs[i] = &Request{ID: first + uint64(i), InputLen: input, MaxNewTokens: maxNew}
	}
	return rs
}

func submitSingles(t *testing.T, s *Scheduler, rs []*Request) {
	t.Helper()
	for _, r := range rs {
		if err := s.Submit([]*Request{r}); err != nil {
			t.Fatal(err)
		}
	}
}

func ids(rs []*Request) []uint64 {
	out := make([]uint64, len(rs))
	for i, r := range rs {
		out[i] = r.ID
	}
	return out
}

func equalIDs(a []*Request, want ...uint64) bool {
	if len(a) != len(want) {
		return false
	}
	for i := range a {
		if a[i].ID != want[i] {
			return false
		}
	}
	return true
}

// Each request of 1000 prompt tokens, max_new 4096, not busy, EMA 2048 has
// the tuple (1001, 2065), so n of them peak at 3066·n.
func TestAdmissionConstraints(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*Config)
		n      int
		want   int // admitted
		peak   int
	}{
		{"token bound: 3·3066 = 9198 < 10000 <= 4·3066", func(c *Config) {}, 6, 3, 9198},
		{"token bound is strict", func(c *Config) { c.MaxTotalTokens = 9198 }, 6, 2, 6132},
		{"request count", func(c *Config) { c.MaxTotalTokens = 1 << 20; c.RunningMaxReqSize = 2 }, 6, 2, 6132},
		{"prefill budget 2·batch_max_tokens", func(c *Config) {
			c.MaxTotalTokens, c.BatchMaxTokens, c.ChunkedPrefillSize = 1<<20, 1500, 1000
		}, 6, 3, 3*1001 + 3*(2+2048-1+16)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := DefaultConfig(10000)
			tc.mutate(&cfg)
			s := newSched(t, cfg, PolicyPastFutureEMA, PolicyOptions{})
			submitSingles(t, s, mkReqs(1, tc.n, 1000, 4096))
			res := s.Step(StepInput{})
			if len(res.New) != tc.want {
				t.Fatalf("admitted %v, want %d", ids(res.New), tc.want)
			}
			if res.Load.EstimatedPeakTokens != tc.peak {
				t.Fatalf("estimated peak %d, want %d", res.Load.EstimatedPeakTokens, tc.peak)
			}
			if got := float64(tc.peak) / float64(cfg.MaxTotalTokens); res.Load.DynamicMaxLoad != got || res.Load.LogicalMaxLoad != got {
				t.Fatalf("load %+v, want dynamic=logical=%v", res.Load, got)
			}
			if s.Waiting() != tc.n-tc.want || len(s.Running()) != tc.want {
				t.Fatalf("waiting %d running %d", s.Waiting(), len(s.Running()))
			}
		})
	}
}

func TestAdmissionCountsRunning(t *testing.T) {
	s := newSched(t, DefaultConfig(10000), PolicyPastFutureEMA, PolicyOptions{})
	run := &Request{ID: 1, InputLen: 1000, MaxNewTokens: 4096}
	submitSingles(t, s, []*Request{run})
	if res := s.Step(StepInput{}); len(res.New) != 1 {
		t.Fatal("first request not admitted")
	}
	// Now decoding at 3000 tokens: tuple (4001, 317) — see TestLightLLMTuple.
	run.OutputLen, run.KVLen = 3000, 3999
	submitSingles(t, s, mkReqs(2, 3, 1000, 4096))
	// Sorted: (1001,2065) (1001,2065) (4001,317): 1001+2065=3066,
	// 2002+4130=6132, 6003+951=6954 → both fit (prefill budget 1+1000+1000).
	// A third newcomer: 3·1001+3·2065=9198, then 7004+4·317=8272 → 9198 fits too.
	res := s.Step(StepInput{UsedTokens: 3999})
	if !equalIDs(res.New, 2, 3, 4) || res.Load.EstimatedPeakTokens != 9198 {
		t.Fatalf("admitted %v peak %d; want [2 3 4] 9198", ids(res.New), res.Load.EstimatedPeakTokens)
	}
	// Busy: the running request reserves max_new: b = 2+4096−3001+16 = 1113.
	s2 := newSched(t, DefaultConfig(10000), PolicyPastFutureEMA, PolicyOptions{})
	run2 := &Request{ID: 1, InputLen: 1000, MaxNewTokens: 4096}
	submitSingles(t, s2, []*Request{run2})
	s2.Step(StepInput{})
	run2.OutputLen, run2.KVLen = 3000, 3999
	submitSingles(t, s2, mkReqs(2, 1, 1000, 4096))
	// busy newcomer: (1001, 2+4095+16=4113): 1001+4113=5114, 5002+2·1113=7228 → fits.
	res = s2.Step(StepInput{UsedTokens: 8500})
	if !equalIDs(res.New, 2) || res.Load.EstimatedPeakTokens != 7228 {
		t.Fatalf("busy: admitted %v peak %d; want [2] 7228", ids(res.New), res.Load.EstimatedPeakTokens)
	}
}

func TestAdmissionStopsAtFirstRejection(t *testing.T) {
	s := newSched(t, DefaultConfig(10000), PolicyPastFutureEMA, PolicyOptions{})
	big := &Request{ID: 1, InputLen: 5000, MaxNewTokens: 5000}
	submitSingles(t, s, []*Request{{ID: 9, InputLen: 1000, MaxNewTokens: 4096}})
	s.Step(StepInput{})
	submitSingles(t, s, []*Request{big, {ID: 2, InputLen: 10, MaxNewTokens: 10}})
	// big: (5001, 2+2048−1+16=2065) with the running one: 5001+2065 + ... ≥ 10000
	res := s.Step(StepInput{})
	if len(res.New) != 0 {
		t.Fatalf("admitted %v behind a rejected head; FCFS must stop", ids(res.New))
	}
}

func TestGroupAdmission(t *testing.T) {
	group := func(first uint64, n int) []*Request {
		rs := mkReqs(first, n, 1000, 4096)
		for _, r := range rs {
			r.Group = first
		}
		return rs
	}
	t.Run("shared prompt counted once", func(t *testing.T) {
		// Three members (1001, 2065): 1001 + 1 + 1 + 3·2065 = 7198 < 8000,
		// although 3·3066 = 9198 would not fit.
		s := newSched(t, DefaultConfig(8000), PolicyPastFutureEMA, PolicyOptions{})
		if err := s.Submit(group(100, 3)); err != nil {
			t.Fatal(err)
		}
		res := s.Step(StepInput{})
		if !equalIDs(res.New, 100, 101, 102) || res.Load.EstimatedPeakTokens != 7198 {
			t.Fatalf("admitted %v peak %d; want the whole group, 7198", ids(res.New), res.Load.EstimatedPeakTokens)
		}
	})
	t.Run("all or nothing", func(t *testing.T) {
		s := newSched(t, DefaultConfig(7000), PolicyPastFutureEMA, PolicyOptions{})
		if err := s.Submit(group(100, 3)); err != nil {
			t.Fatal(err)
		}
		if res := s.Step(StepInput{}); len(res.New) != 0 {
			t.Fatalf("admitted part of a group: %v", ids(res.New))
		}
	})
	t.Run("one prompt in the prefill budget", func(t *testing.T) {
		cfg := DefaultConfig(1 << 20)
		cfg.BatchMaxTokens, cfg.ChunkedPrefillSize = 600, 600
		s := newSched(t, cfg, PolicyPastFutureEMA, PolicyOptions{})
		// 4 members, 600 prefill tokens counted once ≤ 1200; the next group
		// adds 600 more (1200 ≤ 1200); a third would exceed.
		for _, first := range []uint64{10, 20, 30} {
			if err := s.Submit(group(first, 4)); err != nil {
				t.Fatal(err)
			}
		}
		if res := s.Step(StepInput{}); len(res.New) != 8 {
			t.Fatalf("admitted %v, want the first two groups", ids(res.New))
		}
	})
	t.Run("bad group", func(t *testing.T) {
		s := newSched(t, DefaultConfig(8000), PolicyPastFutureEMA, PolicyOptions{})
		g := group(100, 2)
		g[1].Group = 5
		if err := s.Submit(g); !errors.Is(err, ErrBadRequest) {
			t.Fatalf("mixed group: err %v", err)
		}
	})
}

func TestIntakeGrowsAndResets(t *testing.T) {
	s := newSched(t, DefaultConfig(1<<20), PolicyPastFutureEMA, PolicyOptions{})
	submitSingles(t, s, mkReqs(1, 300, 10, 10))
	// 64 (full: grow to 83), 83 (→107), 107 (→139), 46 (drained: reset to 64).
	for i, wantInbox := range []int{236, 153, 46, 0} {
		s.Step(StepInput{Paused: true})
		if got := s.Stats().Inbox; got != wantInbox {
			t.Fatalf("step %d: inbox %d, want %d", i, got, wantInbox)
		}
	}
	if s.recvMax != 64 {
		t.Fatalf("recvMax %d after draining, want 64", s.recvMax)
	}
	if st := s.Stats(); st.Waiting != 300 || st.Running != 0 {
		t.Fatalf("paused scheduler admitted: %+v", st)
	}
}

func TestFinishFeedsStatistics(t *testing.T) {
	s := newSched(t, DefaultConfig(1<<20), PolicyPastFutureEMA, PolicyOptions{})
	rs := mkReqs(1, 2, 10, 2000)
	submitSingles(t, s, rs)
	s.Step(StepInput{})
	res := s.Step(StepInput{Finished: []Finished{{ID: 1, OutputLen: 1000}, {ID: 2, OutputLen: 5, Aborted: true}, {ID: 77}}})
	if st := s.Stats(); st.EMA != 1524 || st.Finished != 2 || st.UnknownFinished != 1 || st.Running != 0 {
		t.Fatalf("stats %+v; want EMA 1524 (aborted finish ignored), 2 finished, 1 unknown", st)
	}
	if res.Load.EstimatedPeakTokens != 0 {
		t.Fatalf("idle peak %d", res.Load.EstimatedPeakTokens)
	}
}

func TestAbort(t *testing.T) {
	s := newSched(t, DefaultConfig(1<<20), PolicyPastFutureEMA, PolicyOptions{})
	rs := mkReqs(1, 3, 10, 10)
	submitSingles(t, s, rs[:1])
	s.Step(StepInput{})
	submitSingles(t, s, rs[1:])
	if !s.Abort(1) || !s.Abort(3) || s.Abort(99) {
		t.Fatal("Abort return values")
	}
	res := s.Step(StepInput{})
	// Running request 1 stays running until infer releases it; waiting
	// request 3 is dropped at once.
	if !equalIDs(res.Dropped, 3) || !equalIDs(res.New, 2) || s.Lookup(1) == nil {
		t.Fatalf("dropped %v new %v", ids(res.Dropped), ids(res.New))
	}
	res = s.Step(StepInput{Finished: []Finished{{ID: 1, OutputLen: 3, Aborted: true}}})
	if len(res.Dropped) != 0 {
		t.Fatalf("abort reported twice: %v", ids(res.Dropped))
	}
	if st := s.Stats(); st.EMA != 2048 || st.Running != 1 || st.Dropped != 1 {
		t.Fatalf("stats %+v", st)
	}
	// A request already in the waiting queue (received while paused).
	more := mkReqs(10, 2, 10, 10)
	submitSingles(t, s, more)
	s.Step(StepInput{Paused: true})
	if s.Lookup(10) != more[0] || !s.Abort(10) || !more[0].Aborted() {
		t.Fatal("abort of a waiting request")
	}
	res = s.Step(StepInput{})
	if !equalIDs(res.Dropped, 10) || !equalIDs(res.New, 11) || s.Lookup(10) != nil {
		t.Fatalf("dropped %v new %v", ids(res.Dropped), ids(res.New))
	}
}

func TestPreemptLIFO(t *testing.T) {
	s := newSched(t, DefaultConfig(1<<20), PolicyAggressive, PolicyOptions{})
	rs := mkReqs(1, 4, 100, 100)
	submitSingles(t, s, rs[:3])
	s.Step(StepInput{})
	for _, r := range rs[:3] {
		r.OutputLen, r.KVLen = 10, 109 // decoding
	}
	submitSingles(t, s, rs[3:])
	s.Step(StepInput{Paused: true}) // request 4 waits
	// Each victim frees 109 KV + 1 decode token: 150 needs two of them.
	v := s.Preempt(150)
	if !equalIDs(v, 2, 3) {
		t.Fatalf("victims %v, want [2 3] (newest first, returned oldest first)", ids(v))
	}
	for _, r := range v {
		r.KVLen = 0
	}
	if res := s.Step(StepInput{}); !equalIDs(res.New, 2, 3, 4) {
		t.Fatalf("readmitted %v, want the victims first: [2 3 4]", ids(res.New))
	}
	if s.Stats().Evicted != 2 {
		t.Fatalf("evicted %d", s.Stats().Evicted)
	}
	if got := s.RequeueAll(); len(got) != 4 || len(s.Running()) != 0 {
		t.Fatalf("RequeueAll evicted %d, %d still running", len(got), len(s.Running()))
	}
}

func TestSubmitErrors(t *testing.T) {
	s := newSched(t, DefaultConfig(1000), PolicyConservative, PolicyOptions{})
	ok := &Request{ID: 1, InputLen: 10, MaxNewTokens: 10}
	if err := s.Submit([]*Request{ok}); err != nil {
		t.Fatal(err)
	}
	for name, g := range map[string][]*Request{
		"empty":         {},
		"nil":           {nil},
		"duplicate id":  {{ID: 1, InputLen: 10, MaxNewTokens: 10}},
		"resubmitted":   {ok},
		"zero input":    {{ID: 2, MaxNewTokens: 10}},
		"zero max new":  {{ID: 3, InputLen: 10}},
		"over capacity": {{ID: 4, InputLen: 600, MaxNewTokens: 401}},
		"dup in group":  {{ID: 5, Group: 5, InputLen: 1, MaxNewTokens: 1}, {ID: 5, Group: 5, InputLen: 1, MaxNewTokens: 1}},
	} {
		if err := s.Submit(g); !errors.Is(err, ErrBadRequest) {
			t.Errorf("%s: err %v, want ErrBadRequest", name, err)
		}
	}
}

func TestConfigAndPolicyErrors(t *testing.T) {
	bad := []func(*Config){
		func(c *Config) { c.MaxTotalTokens = 0 },
		func(c *Config) { c.RunningMaxReqSize = 0 },
		func(c *Config) { c.BatchMaxTokens = 0 },
		func(c *Config) { c.ChunkedPrefillSize = 0 },
		func(c *Config) { c.RouterMaxWaitTokens = -1 },
		func(c *Config) { c.RecvMax = 1 },
	}
	for i, m := range bad {
		c := DefaultConfig(100)
		m(&c)
		if _, err := New(c, &peakPolicy{est: emaEstimator{}}); !errors.Is(err, ErrBadConfig) {
			t.Errorf("config %d: err %v", i, err)
		}
	}
	if _, err := NewPolicy("fastest", PolicyOptions{}); !errors.Is(err, ErrUnknownPolicy) {
		t.Errorf("unknown policy: %v", err)
	}
	if _, err := NewPolicy(PolicyOracle, PolicyOptions{}); !errors.Is(err, ErrBadConfig) {
		t.Errorf("oracle without lengths: %v", err)
	}
	if _, err := NewPolicy(PolicyPastFuture, PolicyOptions{PastFuture: PastFutureOptions{CapacityRatio: 1.5}}); !errors.Is(err, ErrBadConfig) {
		t.Errorf("bad capacity ratio: %v", err)
	}
	for _, name := range PolicyNames() {
		p, err := NewPolicy(name, PolicyOptions{Oracle: func(*Request) int { return 1 }})
		if err != nil || p.Name() != name {
			t.Errorf("NewPolicy(%s) = %v, %v", name, p, err)
		}
	}
}

// Every policy on the same hand-checkable case: one request running at
// output 100 (prompt 1000, max_new 2000, true length 300) and newcomers of
// prompt 1000, true length 500.
func TestPolicyPeaks(t *testing.T) {
	final := map[uint64]int{1: 300}
	oracle := func(r *Request) int {
		if f, ok := final[r.ID]; ok {
			return f
		}
		return 500
	}
	tests := []struct {
		policy string
		peak   int // with the running request and one newcomer
	}{
		// (1099, 200) running, (1000, 499+2) new: 1000+501=1501, 2099+400=2499
		{PolicyOracle, 2499},
		// reservations: (1000+2000) + (1000+2000)
		{PolicyConservative, 6000},
		// held now: max(1100, 1100) + max(1000, 1)
		{PolicyAggressive, 2100},
		// cur_max_new = min(2000, max(110, 2048)) = 2000 for both:
		// running (1101, 2+2000−101+16=1917), new (1001, 2+2000−1+16=2017):
		// 1001+2017=3018, 2102+2·1917=5936
		{PolicyPastFutureEMA, 5936},
	}
	for _, tc := range tests {
		t.Run(tc.policy, func(t *testing.T) {
			s := newSched(t, DefaultConfig(100000), tc.policy, PolicyOptions{Oracle: oracle})
			run := &Request{ID: 1, InputLen: 1000, MaxNewTokens: 2000}
			submitSingles(t, s, []*Request{run})
			s.Step(StepInput{})
			run.OutputLen, run.KVLen = 100, 1099
			submitSingles(t, s, []*Request{{ID: 2, InputLen: 1000, MaxNewTokens: 2000}})
			res := s.Step(StepInput{UsedTokens: 1099})
			if len(res.New) != 1 || res.Load.EstimatedPeakTokens != tc.peak {
				t.Fatalf("admitted %v peak %d, want 1 and %d", ids(res.New), res.Load.EstimatedPeakTokens, tc.peak)
			}
		})
	}
}
