package infer

import (
	"math"
	"slices"
	"testing"
	"time"

	"github.com/lightllm-go/lightllm/pkg/sampler"
	"github.com/lightllm-go/lightllm/shm"
)

// submitBias is submit with a logit-bias map in the slot's extras.
func submitBias(t *testing.T, r *shm.Region, prompt []int32, maxNew int, bias []shm.TokenBias) *shm.Slot {
	t.Helper()
	return submitExtras(t, r, prompt, maxNew, shm.Extras{LogitBias: bias})
}

// submitExtras is submit (greedy) with the given extras.
func submitExtras(t *testing.T, r *shm.Region, prompt []int32, maxNew int, x shm.Extras) *shm.Slot {
	t.Helper()
	s, gen, err := r.Alloc(1)
	if err != nil {
		t.Fatal(err)
	}
	p := sampler.Params{MaxNewTokens: maxNew, TopK: 1, Temperature: 1, TopP: 1, RepetitionPenalty: 1, Seed: 7}
	if err := s.Fill(gen, shm.Request{RequestID: uint64(s.Index) + 100, Prompt: prompt, Params: p, Arrival: time.Now(),
		Extras: x}); err != nil {
		t.Fatal(err)
	}
	for _, to := range []shm.State{shm.StateQueued, shm.StateRunning} {
		from, _ := s.Load()
		if err := s.Transition(gen, from, to); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := r.Commands().Push(shm.Command{Op: shm.OpNew, Slot: uint32(s.Index), Gen: gen}); err != nil {
		t.Fatal(err)
	}
	return s
}

// TestWorkerLogitBias: the extras' bias map shapes greedy decoding (the
// synthetic model's chosen logit is 20, every other 0), and a restarted
// infer continues the biased request exactly.
func TestWorkerLogitBias(t *testing.T) {
	prompt := []int32{1, 3, 4}
	plain := expected(prompt, 20)
	cases := []struct {
		name  string
		bias  []shm.TokenBias
		check func(out []int32) bool
	}{
		{"+25 wins every step", []shm.TokenBias{{ID: 30, Bias: 25}}, func(out []int32) bool {
			return !slices.ContainsFunc(out, func(tok int32) bool { return tok != 30 })
		}},
		{"-100 bans the first plain token", []shm.TokenBias{{ID: plain[0], Bias: -100}}, func(out []int32) bool {
			return !slices.Contains(out, plain[0]) && !slices.Equal(out, plain)
		}},
		{"+10 changes nothing", []shm.TokenBias{{ID: 30, Bias: 10}, {ID: plain[1] + 1, Bias: 10}}, func(out []int32) bool {
			return slices.Equal(out, plain)
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := newRegion(t)
			w := newWorker(t, r)
			s := submitBias(t, r, prompt, 20, tc.bias)
			runUntil(t, w, 100, func() bool { return s.InferReleased.Load() == 1 })
			ref := outputs(t, s)
			if len(ref) != 20 || !tc.check(ref) {
				t.Fatalf("biased output %v (plain %v)", ref, plain)
			}

			r2 := newRegion(t)
			w1 := newWorker(t, r2)
			s2 := submitBias(t, r2, prompt, 20, tc.bias)
			runUntil(t, w1, 50, func() bool { return s2.CandetokenOutLen.Load() >= 7 })
			w2 := newWorker(t, r2) // w1 "died"
			runUntil(t, w2, 100, func() bool { return s2.InferReleased.Load() == 1 })
			if got := outputs(t, s2); !slices.Equal(got, ref) {
				t.Errorf("after a restart %v, want %v", got, ref)
			}
		})
	}
}

func TestChainFactories(t *testing.T) {
	if chainFactories(nil, nil) != nil {
		t.Fatal("no processors: want nil")
	}
	f := chainFactories(newBias([]shm.TokenBias{{ID: 1, Bias: 2}}), nil, newBias([]shm.TokenBias{{ID: 1, Bias: 3}, {ID: 2, Bias: -1}}))
	p, err := f()
	if err != nil {
		t.Fatal(err)
	}
	row := []float32{0, 0, 0}
	if err := p.Process(row); err != nil || !slices.Equal(row, []float32{0, 5, -1}) {
		t.Errorf("row %v, %v", row, err)
	}
	if err := p.Process(make([]float32, 2)); err == nil {
		t.Error("a bias past the row: no error")
	}
}

// TestWorkerAllowedTokens: allowed_token_ids confine greedy decoding to the
// listed ids (the synthetic model's favourite is never among them), and a
// restarted infer continues the request exactly.
func TestWorkerAllowedTokens(t *testing.T) {
	prompt := []int32{1, 3, 4}
	plain := expected(prompt, 12)
	var allowed []int32
	for id := int32(20); id < 40; id += 3 {
		if !slices.Contains(plain, id) {
			allowed = append(allowed, id)
		}
	}
	x := shm.Extras{AllowedTokenIDs: allowed}
	r := newRegion(t)
	w := newWorker(t, r)
	s := submitExtras(t, r, prompt, 12, x)
	runUntil(t, w, 100, func() bool { return s.InferReleased.Load() == 1 })
	ref := outputs(t, s)
	if len(ref) != 12 || slices.ContainsFunc(ref, func(tok int32) bool { return !slices.Contains(allowed, tok) }) {
		t.Fatalf("output %v outside the allowed %v", ref, allowed)
	}
	r2 := newRegion(t)
	w1 := newWorker(t, r2)
	s2 := submitExtras(t, r2, prompt, 12, x)
	runUntil(t, w1, 50, func() bool { return s2.CandetokenOutLen.Load() >= 5 })
	w2 := newWorker(t, r2) // w1 "died"
	runUntil(t, w2, 100, func() bool { return s2.InferReleased.Load() == 1 })
	if got := outputs(t, s2); !slices.Equal(got, ref) {
		t.Errorf("after a restart %v, want %v", got, ref)
	}
}

func TestAllowProcessor(t *testing.T) {
	p := allowProcessor{1, 3}
	row := []float32{5, 1, 7, 2}
	if err := p.Process(row); err != nil || row[1] != 1 || row[3] != 2 || !math.IsInf(float64(row[0]), -1) || !math.IsInf(float64(row[2]), -1) {
		t.Errorf("row %v, %v", row, err)
	}
	if err := (allowProcessor{9}).Process(make([]float32, 4)); err == nil {
		t.Error("an allowed id past the row: no error")
	}
}
