package infer

import (
	"context"
	"errors"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/lightllm-go/lightllm/pkg/config"
	"github.com/lightllm-go/lightllm/pkg/engine"
	"github.com/lightllm-go/lightllm/pkg/sampler"
	"github.com/lightllm-go/lightllm/shm"
)

const testVocab = 64

// newRegion creates a region in a temp dir.
func newRegion(t *testing.T) *shm.Region {
	t.Helper()
	r, err := shm.Create(shm.CreateOptions{BaseDir: t.TempDir(), Instance: "t", NoReserve: true,
		Sizes: shm.Sizes{Slots: 8, MaxReqTotalLen: 128}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Destroy() })
	return r
}

// newWorker starts an infer worker over a fresh engine on the synthetic model.
func newWorker(t *testing.T, r *shm.Region) *Worker {
	t.Helper()
	return newWorkerWith(t, r, WorkerOptions{})
}

// newWorkerWith is newWorker with o (its KV capacity and logger set here).
func newWorkerWith(t *testing.T, r *shm.Region, o WorkerOptions) *Worker {
	t.Helper()
	o.MaxTotalTokens, o.Log = 512, zerolog.Nop()
	w, err := NewWorker(r, newEngine(t, 512, 128), o)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// newEngine is an engine over the synthetic model with maxTotal KV tokens.
func newEngine(t *testing.T, maxTotal, maxReqTotalLen int) *engine.Engine {
	t.Helper()
	m, err := NewSyntheticModel(testVocab, 128, 1, []int32{2}, 0)
	if err != nil {
		t.Fatal(err)
	}
	eng, err := engine.New(m, engine.Options{MaxTotalTokens: maxTotal, MaxReqTotalLen: maxReqTotalLen})
	if err != nil {
		t.Fatal(err)
	}
	return eng
}

// submit plays apiserver and router: a Running slot with a NEW command.
func submit(t *testing.T, r *shm.Region, prompt []int32, p sampler.Params) (*shm.Slot, uint32) {
	t.Helper()
	s, gen, err := r.Alloc(1)
	if err != nil {
		t.Fatal(err)
	}
	if p.TopK == 0 {
		p.TopK, p.Temperature, p.TopP, p.RepetitionPenalty, p.Seed = 1, 1, 1, 1, 7
	}
	if err := s.Fill(gen, shm.Request{RequestID: uint64(s.Index), Prompt: prompt, Params: p, Arrival: time.Now()}); err != nil {
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
	return s, gen
}

// runUntil iterates w until done() or n iterations.
func runUntil(t *testing.T, w *Worker, n int, done func() bool) {
	t.Helper()
	for i := 0; i < n && !done(); i++ {
		if _, err := w.Iterate(); err != nil {
			t.Fatal(err)
		}
	}
	if !done() {
		t.Fatalf("not done after %d iterations", n)
	}
}

// expected is the synthetic stream after prompt.
func expected(prompt []int32, n int) []int32 {
	m := &SyntheticModel{Vocab: testVocab, EOS: []int32{2}}
	seq := slices.Clone(prompt)
	for range n {
		seq = append(seq, m.Next(seq[len(seq)-1], int32(len(seq)-1)))
	}
	return seq[len(prompt):]
}

func outputs(t *testing.T, s *shm.Slot) []int32 {
	t.Helper()
	o, err := s.Outputs()
	if err != nil {
		t.Fatal(err)
	}
	return slices.Clone(o)
}

func TestWorkerRunsRequests(t *testing.T) {
	r := newRegion(t)
	w := newWorker(t, r)
	prompts := [][]int32{{1, 5, 6}, {1, 9}, {1, 40, 41, 42}}
	var slots []*shm.Slot
	for i, p := range prompts {
		s, _ := submit(t, r, p, sampler.Params{MaxNewTokens: 10 + i})
		slots = append(slots, s)
	}
	runUntil(t, w, 100, func() bool { return w.Live() == 0 && r.Commands().Len() == 0 })
	for i, s := range slots {
		want := expected(prompts[i], 10+i)
		if got := outputs(t, s); !slices.Equal(got, want) {
			t.Errorf("request %d: %v, want %v", i, got, want)
		}
		st, _ := s.Load()
		if st != shm.StateFinished || s.InferReleased.Load() != 1 || shm.FinishStatus(s.FinishStatus.Load()) != shm.FinishLength {
			t.Errorf("request %d: state %v released %d finish %v", i, st, s.InferReleased.Load(), shm.FinishStatus(s.FinishStatus.Load()))
		}
		if fti := s.FinishTokenIndex.Load(); int(fti) != len(prompts[i])+10+i-1 {
			t.Errorf("request %d: finish token index %d", i, fti)
		}
	}
	l := r.Load()
	if used := l.MaxTotalTokenNum.Load() - l.FreeKVTokens.Load() - l.EvictableKVTokens.Load(); used != 0 || l.MaxTotalTokenNum.Load() != 512 {
		t.Errorf("KV: capacity %d, %d in use after all finished", l.MaxTotalTokenNum.Load(), used)
	}
}

// TestWorkerResumesAfterRestart: a new infer process (new worker, new
// engine) continues a request from its published tokens, giving the same
// output as an uninterrupted run.
func TestWorkerResumesAfterRestart(t *testing.T) {
	r := newRegion(t)
	w1 := newWorker(t, r)
	prompt := []int32{1, 3, 4}
	s, _ := submit(t, r, prompt, sampler.Params{MaxNewTokens: 20})
	runUntil(t, w1, 50, func() bool { return s.CandetokenOutLen.Load() >= 7 })
	// w1 "dies" here; its engine is dropped with the process.
	w2 := newWorker(t, r)
	if w2.Epoch() != w1.Epoch()+1 {
		t.Errorf("epoch %d after %d", w2.Epoch(), w1.Epoch())
	}
	if w2.Live() != 1 {
		t.Fatalf("restarted worker resumed %d requests, want 1", w2.Live())
	}
	runUntil(t, w2, 50, func() bool { return s.InferReleased.Load() == 1 })
	if got, want := outputs(t, s), expected(prompt, 20); !slices.Equal(got, want) {
		t.Errorf("resumed output %v, want %v", got, want)
	}
}

func TestWorkerFlags(t *testing.T) {
	cases := []struct {
		name   string
		act    func(r *shm.Region, s *shm.Slot, gen uint32)
		status shm.FinishStatus
		state  shm.State
	}{
		{"abort flag", func(_ *shm.Region, s *shm.Slot, _ uint32) { s.Abort.Store(1) }, shm.FinishAborted, shm.StateAborted},
		{"stop matched flag", func(_ *shm.Region, s *shm.Slot, _ uint32) {
			s.StopMatchedIndex.Store(1)
			s.StopMatched.Store(1)
		}, shm.FinishStop, shm.StateFinished},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := newRegion(t)
			w := newWorker(t, r)
			s, gen := submit(t, r, []int32{1, 8}, sampler.Params{MaxNewTokens: 60})
			runUntil(t, w, 20, func() bool { return s.CandetokenOutLen.Load() >= 2 })
			c.act(r, s, gen)
			published := s.CandetokenOutLen.Load()
			runUntil(t, w, 5, func() bool { return s.InferReleased.Load() == 1 })
			st, _ := s.Load()
			if st != c.state || shm.FinishStatus(s.FinishStatus.Load()) != c.status {
				t.Errorf("state %v finish %v, want %v %v", st, shm.FinishStatus(s.FinishStatus.Load()), c.state, c.status)
			}
			if s.CandetokenOutLen.Load() != published {
				t.Errorf("%d tokens published after the request was stopped", s.CandetokenOutLen.Load()-published)
			}
			if w.Live() != 0 {
				t.Errorf("%d requests still live", w.Live())
			}
		})
	}
}

// TestWorkerIgnoresRepeatsAndStale: a NEW repeated by a restarted router,
// or naming a reused slot generation, does not start a request twice.
func TestWorkerIgnoresRepeatsAndStale(t *testing.T) {
	r := newRegion(t)
	w := newWorker(t, r)
	s, gen := submit(t, r, []int32{1, 8}, sampler.Params{MaxNewTokens: 5})
	r.Commands().Push(shm.Command{Op: shm.OpNew, Slot: uint32(s.Index), Gen: gen})
	r.Commands().Push(shm.Command{Op: shm.OpNew, Slot: uint32(s.Index), Gen: gen + 1})
	if _, err := w.Iterate(); err != nil {
		t.Fatal(err)
	}
	if w.Live() != 1 {
		t.Fatalf("%d live requests, want 1", w.Live())
	}
	runUntil(t, w, 20, func() bool { return s.InferReleased.Load() == 1 })
	if got, want := outputs(t, s), expected([]int32{1, 8}, 5); !slices.Equal(got, want) {
		t.Errorf("output %v, want %v", got, want)
	}
}

func TestSyntheticModel(t *testing.T) {
	if _, err := NewSyntheticModel(1, 8, 0, nil, 0); err == nil {
		t.Error("a 1-id vocabulary was accepted")
	}
	if _, err := NewSyntheticModel(8, 8, 0, nil, -time.Second); err == nil {
		t.Error("a negative step time was accepted")
	}
	m, err := NewSyntheticModel(4, 64, 1, []int32{2, 3}, time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	slept := time.Duration(0)
	m.Sleep = func(d time.Duration) { slept += d }
	for tok := int32(0); tok < 4; tok++ {
		for pos := int32(0); pos < 50; pos++ {
			if n := m.Next(tok, pos); n == 2 || n == 3 || n < 0 || n >= 4 {
				t.Fatalf("Next(%d, %d) = %d: an EOS or out of the vocabulary", tok, pos, n)
			}
		}
	}
	b := &engine.Batch{Tokens: []int32{1, 0}, Positions: []int32{0, 1}, Seqs: []engine.Seq{{Start: 0, Len: 2, WantLogits: true}}}
	row := make([]float32, 4)
	if err := m.Forward(b, nil, [][]float32{row}); err != nil {
		t.Fatal(err)
	}
	if want := m.Next(0, 1); row[want] <= 0 || slept != time.Millisecond {
		t.Errorf("logits %v (want %d on top), slept %s", row, want, slept)
	}
	bad := &engine.Batch{Tokens: []int32{1}, Positions: []int32{0, 1}, Seqs: []engine.Seq{{Start: 0, Len: 1, WantLogits: true}}}
	if err := m.Forward(bad, nil, [][]float32{row}); err == nil {
		t.Error("a malformed batch was accepted")
	}
}

// TestStreamIntervalRings: with a StreamInterval, infer rings the
// detokenizer for a request's first token and for its end at once, and
// holds the tokens in between until the interval passes (an hour here,
// so never); with 0 it rings after every step. No timing is measured:
// the two intervals are never and always due.
func TestStreamIntervalRings(t *testing.T) {
	for _, tc := range []struct {
		name     string
		interval time.Duration
		want     []bool // rung after the step that published token i+1
	}{
		{"every step", 0, []bool{true, true, true, true, true}},
		{"first and last at once, the rest held", time.Hour, []bool{true, false, false, false, true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRegion(t)
			w := newWorkerWith(t, r, WorkerOptions{StreamInterval: tc.interval})
			detok, err := r.Role(shm.RoleDetokenizer)
			if err != nil {
				t.Fatal(err)
			}
			bell := r.Bell(detok)
			s, _ := submit(t, r, []int32{1, 5, 6}, sampler.Params{MaxNewTokens: len(tc.want), IgnoreEOS: true})
			var got []bool
			for i := 0; i < 20 && len(got) < len(tc.want); i++ {
				seen, published := bell.Seq(), s.CandetokenOutLen.Load()
				if _, err := w.Iterate(); err != nil {
					t.Fatal(err)
				}
				if s.CandetokenOutLen.Load() != published {
					got = append(got, bell.Seq() != seen)
				}
			}
			if !slices.Equal(got, tc.want) {
				t.Fatalf("rung after each token's step: %v, want %v", got, tc.want)
			}
		})
	}
}

// TestPrefillWaitSteps: --disable_aggressive_schedule turns
// --router_max_wait_tokens into the engine's steps between prefills (at
// least one, as LightLLM's ControlState); by default there are none.
func TestPrefillWaitSteps(t *testing.T) {
	cfg := config.DefaultConfig()
	// disable_aggressive_schedule (0/1), router_max_wait_tokens, want
	for _, c := range [][3]int{{0, 6, 0}, {1, 0, 1}, {1, 1, 1}, {1, 6, 6}} {
		cfg.DisableAggressiveSchedule, cfg.RouterMaxWaitTokens = c[0] == 1, c[1]
		if got := prefillWaitSteps(&cfg); got != c[2] {
			t.Errorf("disable_aggressive_schedule %v, router_max_wait_tokens %d: %d steps, want %d",
				cfg.DisableAggressiveSchedule, c[1], got, c[2])
		}
	}
}

// TestIdleSleepWakes: an idle worker sleeps up to IdleWait on the command
// ring's doorbell, so a command must wake it (not the timeout), and so
// must the end of its context. IdleWait here is far longer than the test
// may run: finishing at all shows the wake-ups.
func TestIdleSleepWakes(t *testing.T) {
	for _, tc := range []struct {
		name    string
		command bool // submit a request to the sleeping loop before ending it
	}{
		{"command", true},
		{"context end", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRegion(t)
			w := newWorkerWith(t, r, WorkerOptions{IdleWait: time.Hour})
			ctx, cancel := context.WithCancel(context.Background())
			var runErr error
			ended := make(chan struct{})
			go func() { runErr = w.Run(ctx); close(ended) }()
			// Joined before the region's cleanup (registered earlier, run
			// later) unmaps what Run reads.
			t.Cleanup(func() {
				cancel()
				select {
				case <-ended:
				case <-time.After(time.Minute):
					t.Error("Run still running at cleanup")
				}
			})
			// With nothing ever live, only an idle iteration stores the
			// progress stamp, and all the loop does after one is sleep: from
			// here on it sleeps, or is about to with the bell's count read
			// before, so only a ring ends that sleep before the hour.
			for deadline := time.Now().Add(time.Minute); r.Load().LastProgressUnixNano.Load() == 0; runtime.Gosched() {
				if time.Now().After(deadline) {
					t.Fatal("the worker loop never turned")
				}
			}
			if tc.command {
				prompt := []int32{1, 5, 6}
				s, _ := submit(t, r, prompt, sampler.Params{MaxNewTokens: 4})
				rs, err := r.Role(shm.RoleRouter)
				if err != nil {
					t.Fatal(err)
				}
				// infer rings the router's bell when it releases a request.
				wctx, wcancel := context.WithTimeout(context.Background(), time.Minute)
				defer wcancel()
				if err := r.Bell(rs).WaitFor(wctx, func() bool { return s.InferReleased.Load() != 0 }); err != nil {
					t.Fatalf("request not run a minute after its command: %v", err)
				}
				if got, want := outputs(t, s), expected(prompt, 4); !slices.Equal(got, want) {
					t.Fatalf("%v, want %v", got, want)
				}
			}
			cancel()
			select {
			case <-ended:
				if !errors.Is(runErr, context.Canceled) {
					t.Fatalf("Run returned %v, want context.Canceled", runErr)
				}
			case <-time.After(time.Minute):
				t.Fatal("Run did not return a minute after its context ended")
			}
		})
	}
}
