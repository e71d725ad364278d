package sched

import "testing"

// A request that fits the KV on its own (input + max_new <= max_total) but
// whose estimate with margins does not (past_future_ema: a = 347, b = 22
// chunk steps + 129 + 16 = 167, peak 514 >= 512) is admitted by an idle
// server under every policy, instead of waiting forever; with another
// request running it waits as the policy says.
func TestIdleServerAdmitsHead(t *testing.T) {
	cfg := DefaultConfig(512)
	cfg.BatchMaxTokens, cfg.ChunkedPrefillSize = 64, 32
	oracle := func(r *Request) int { return r.MaxNewTokens }
	for _, policy := range PolicyNames() {
		t.Run(policy, func(t *testing.T) {
			s := newSched(t, cfg, policy, PolicyOptions{Seed: 1, Oracle: oracle})
			long := &Request{ID: 1, InputLen: 346, MaxNewTokens: 130}
			submitSingles(t, s, []*Request{long})
			res := s.Step(StepInput{Now: 1})
			if !equalIDs(res.New, 1) {
				t.Fatalf("idle server admitted %v, want [1]", ids(res.New))
			}
			if res.Load.EstimatedPeakTokens <= 0 {
				t.Errorf("estimated peak %d after admitting a request", res.Load.EstimatedPeakTokens)
			}
			// With it running, an equal request must wait (its true need
			// alone would overflow the KV together with the first).
			submitSingles(t, s, []*Request{{ID: 2, InputLen: 346, MaxNewTokens: 130}})
			long.KVLen, long.OutputLen = 346, 1
			if res := s.Step(StepInput{Now: 2, UsedTokens: 346}); len(res.New) != 0 && policy != PolicyAggressive {
				t.Errorf("admitted %v next to a running request", ids(res.New))
			}
			// Once the first finishes the second runs.
			res = s.Step(StepInput{Now: 3, Finished: []Finished{{ID: 1, OutputLen: 130}}})
			if policy != PolicyAggressive && !equalIDs(res.New, 2) {
				t.Errorf("after the first finished: admitted %v, want [2]", ids(res.New))
			}
		})
	}
}
