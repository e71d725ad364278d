package engine_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/lightllm-go/lightllm/pkg/engine"
	"github.com/lightllm-go/lightllm/pkg/engine/enginetest"
	"github.com/lightllm-go/lightllm/pkg/sampler"
)

// result is what a run collected for one request.
type result struct {
	tokens []int32
	reason engine.FinishReason
}

func newEngine(t testing.TB, f *enginetest.FakeModel, opts engine.Options) *engine.Engine {
	t.Helper()
	e, err := engine.New(f, opts)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func greedy(maxNew int) sampler.Params {
	p := sampler.DefaultParams()
	p.MaxNewTokens = maxNew
	return p
}

func seeded(maxNew int, seed int64) sampler.Params {
	p := sampler.DefaultParams()
	p.DoSample, p.Temperature, p.TopK, p.TopP, p.Seed = true, 0.9, 20, 0.9, seed
	p.RepetitionPenalty, p.FrequencyPenalty = 1.2, 0.1
	p.MaxNewTokens = maxNew
	return p
}

// runAll steps until the engine is idle, checking the event stream: one
// Finished event per request, nothing after it, KV all free at the end.
func runAll(t testing.TB, e *engine.Engine) map[uint64]*result {
	t.Helper()
	res := map[uint64]*result{}
	for steps := 0; e.HasWork(); steps++ {
		if steps > 100000 {
			t.Fatal("engine did not finish within 100000 steps")
		}
		outs, err := e.Step()
		if err != nil {
			t.Fatalf("step %d: %v", steps, err)
		}
		for _, o := range outs {
			r := res[o.ID]
			if r == nil {
				r = &result{}
				res[o.ID] = r
			}
			if r.reason != engine.NotFinished {
				t.Fatalf("request %d: event %+v after it finished (%s)", o.ID, o, r.reason)
			}
			if o.Token >= 0 {
				r.tokens = append(r.tokens, o.Token)
			}
			if o.Finished {
				r.reason = o.Reason
			}
		}
	}
	checkIdleKV(t, e)
	return res
}

// checkIdleKV: with no request left, nothing is in use and every allocated
// slot belongs to the prompt cache.
func checkIdleKV(t testing.TB, e *engine.Engine) {
	t.Helper()
	st := e.Stats()
	if st.KVUsed != 0 || st.KVAllocated != st.KVCached || st.KVCached != st.KVEvictable {
		t.Fatalf("idle engine: KV used %d, allocated %d, cached %d, evictable %d",
			st.KVUsed, st.KVAllocated, st.KVCached, st.KVEvictable)
	}
	if st.KVLocalAllocated != st.KVLocalCached {
		t.Fatalf("idle engine: %d local KV slots allocated, %d cached", st.KVLocalAllocated, st.KVLocalCached)
	}
}

func prompt(seed, n int) []int32 {
	p := []int32{1}
	x := uint32(seed*7919 + 13)
	for len(p) < n {
		x = x*1103515245 + 12345
		p = append(p, int32(3+x>>16%90))
	}
	return p
}

func TestGreedyMatchesModel(t *testing.T) {
	f := enginetest.NewFakeModel(100, 256)
	e := newEngine(t, f, engine.Options{})
	p := prompt(1, 7)
	if err := e.Add(engine.Request{ID: 9, Prompt: p, Params: greedy(30)}); err != nil {
		t.Fatal(err)
	}
	r := runAll(t, e)[9]
	if want := f.Greedy(p, 30); !slices.Equal(r.tokens, want) || r.reason != engine.FinishLength {
		t.Fatalf("got %v (%s), want %v (length)", r.tokens, r.reason, want)
	}
}

// TestBatchInvariance: a request's tokens are the same alone and in a batch
// of 8 with requests of other lengths and parameters arriving at other times.
func TestBatchInvariance(t *testing.T) {
	for _, params := range []sampler.Params{greedy(40), seeded(40, 1234)} {
		alone := func() []int32 {
			e := newEngine(t, enginetest.NewFakeModel(100, 512), engine.Options{})
			if err := e.Add(engine.Request{ID: 1, Prompt: prompt(1, 12), Params: params}); err != nil {
				t.Fatal(err)
			}
			return runAll(t, e)[1].tokens
		}()
		e := newEngine(t, enginetest.NewFakeModel(100, 512), engine.Options{ChunkedPrefillSize: 5, BatchMaxTokens: 9})
		for id := uint64(2); id <= 5; id++ {
			if err := e.Add(engine.Request{ID: id, Prompt: prompt(int(id), int(3*id)), Params: seeded(int(10*id), int64(id))}); err != nil {
				t.Fatal(err)
			}
		}
		// Let the others get going, then add ours in the middle of their decode.
		for range 4 {
			if _, err := e.Step(); err != nil {
				t.Fatal(err)
			}
		}
		if err := e.Add(engine.Request{ID: 1, Prompt: prompt(1, 12), Params: params}); err != nil {
			t.Fatal(err)
		}
		for id := uint64(6); id <= 8; id++ {
			if err := e.Add(engine.Request{ID: id, Prompt: prompt(int(id), 20), Params: greedy(25)}); err != nil {
				t.Fatal(err)
			}
		}
		batched := runAll(t, e)[1].tokens
		if !slices.Equal(alone, batched) {
			t.Fatalf("params %+v:\nalone   %v\nbatched %v", params, alone, batched)
		}
	}
}

func TestChunkedPrefill(t *testing.T) {
	f := enginetest.NewFakeModel(100, 512)
	const chunk, budget = 16, 24
	var prefillSteps int
	f.OnForward = func(b *engine.Batch) {
		prefill := 0
		for _, s := range b.Seqs {
			if s.Len > chunk {
				t.Errorf("a sequence got %d tokens in one step, chunk is %d", s.Len, chunk)
			}
			if s.Len > 1 || !s.WantLogits {
				prefill += s.Len
			}
		}
		if prefill > budget {
			t.Errorf("%d prefill tokens in one step, budget %d", prefill, budget)
		}
		if prefill > 0 {
			prefillSteps++
		}
	}
	e := newEngine(t, f, engine.Options{ChunkedPrefillSize: chunk, BatchMaxTokens: budget})
	p := prompt(3, 100)
	if err := e.Add(engine.Request{ID: 1, Prompt: p, Params: greedy(10)}); err != nil {
		t.Fatal(err)
	}
	if err := e.Add(engine.Request{ID: 2, Prompt: prompt(4, 40), Params: greedy(10)}); err != nil {
		t.Fatal(err)
	}
	res := runAll(t, e)
	if want := f.Greedy(p, 10); !slices.Equal(res[1].tokens, want) {
		t.Fatalf("chunked: %v, want %v", res[1].tokens, want)
	}
	if prefillSteps < 140/budget {
		t.Fatalf("140 prompt tokens prefilled in %d steps with a budget of %d", prefillSteps, budget)
	}
}

// TestEvictionRecompute floods a KV pool far too small for the load: the
// newest requests are paused and recomputed, and every request still gets
// exactly the tokens it gets alone.
func TestEvictionRecompute(t *testing.T) {
	for _, pool := range []int{64, 100, 200} {
		f := enginetest.NewFakeModel(100, 512)
		e := newEngine(t, f, engine.Options{MaxTotalTokens: pool, ChunkedPrefillSize: 8, PausedHeadroomSteps: 1})
		want := map[uint64][]int32{}
		for id := uint64(1); id <= 12; id++ {
			p := prompt(int(id), 4+int(id))
			n := 60 - len(p)
			want[id] = f.Greedy(p, n)
			if err := e.Add(engine.Request{ID: id, Prompt: p, Params: greedy(n)}); err != nil {
				t.Fatal(err)
			}
		}
		res := runAll(t, e)
		for id, w := range want {
			if !slices.Equal(res[id].tokens, w) {
				t.Fatalf("pool %d request %d: %v, want %v", pool, id, res[id].tokens, w)
			}
		}
		if pool < 200 && e.Stats().Evictions == 0 {
			t.Fatalf("pool %d: expected evictions", pool)
		}
		t.Logf("pool %d: %+v", pool, e.Stats())
	}
}

func TestFinishReasons(t *testing.T) {
	f := enginetest.NewFakeModel(100, 512)
	f.EndAfter = 10 // EOS becomes the best token once a sequence is 10 tokens long
	e := newEngine(t, f, engine.Options{})
	p := prompt(5, 4)
	ignore := greedy(12)
	ignore.IgnoreEOS = true
	minNew := greedy(12)
	minNew.MinNewTokens = 8
	stopAt := f.Greedy(p, 3)[2] // the third greedy token as a per-request stop id
	stop := greedy(12)
	stop.StopTokenIDs = []int32{stopAt}
	reqs := []struct {
		params sampler.Params
		n      int
		reason engine.FinishReason
	}{
		{greedy(12), 7, engine.FinishStop},  // after 4 prompt + 6 generated tokens, EOS is token 7
		{greedy(3), 3, engine.FinishLength}, // max_new_tokens first
		{ignore, 12, engine.FinishLength},   // EOS generated but ignored
		{minNew, 12, engine.FinishLength},   // EOS suppressed until token 8, then the fake prefers others
		{stop, 3, engine.FinishStop},        // per-request stop id
	}
	for i, r := range reqs {
		if err := e.Add(engine.Request{ID: uint64(i), Prompt: p, Params: r.params}); err != nil {
			t.Fatal(err)
		}
	}
	res := runAll(t, e)
	for i, r := range reqs {
		got := res[uint64(i)]
		if len(got.tokens) != r.n || got.reason != r.reason {
			t.Errorf("request %d: %d tokens (%s) %v, want %d (%s)", i, len(got.tokens), got.reason, got.tokens, r.n, r.reason)
		}
	}
	if res[2].tokens[6] != 2 {
		t.Errorf("ignore_eos: token 7 = %d, want EOS 2", res[2].tokens[6])
	}
	if slices.Contains(res[3].tokens[:7], 2) {
		t.Errorf("min_new_tokens=8: EOS among the first 7 tokens %v", res[3].tokens)
	}
}

func TestAbort(t *testing.T) {
	f := enginetest.NewFakeModel(100, 512)
	e := newEngine(t, f, engine.Options{MaxRunningReqs: 1})
	for id := uint64(1); id <= 2; id++ {
		if err := e.Add(engine.Request{ID: id, Prompt: prompt(int(id), 5), Params: greedy(50)}); err != nil {
			t.Fatal(err)
		}
	}
	for range 3 {
		if _, err := e.Step(); err != nil {
			t.Fatal(err)
		}
	}
	if info, ok := e.Info(1); !ok || info.State != engine.StateRunning || info.KVLen != 7 {
		t.Fatalf("request 1: %+v %v, want running with 7 tokens of KV", info, ok)
	}
	if info, _ := e.Info(2); info.State != engine.StateWaiting {
		t.Fatalf("request 2 should wait (max_running_reqs 1): %+v", info)
	}
	if !e.Abort(1) || !e.Abort(2) || e.Abort(3) {
		t.Fatal("Abort results wrong")
	}
	if used, _ := e.KVUsage(); used != 0 {
		t.Fatalf("KV not freed by Abort: %d used", used)
	}
	outs, err := e.Step()
	if err != nil {
		t.Fatal(err)
	}
	if len(outs) != 2 || outs[0].Reason != engine.FinishAbort || outs[1].Reason != engine.FinishAbort || outs[0].Token != -1 {
		t.Fatalf("abort events: %+v", outs)
	}
	if e.HasWork() {
		t.Fatal("engine still has work after aborting everything")
	}
	// The id is free again.
	if err := e.Add(engine.Request{ID: 1, Prompt: prompt(1, 5), Params: greedy(2)}); err != nil {
		t.Fatal(err)
	}
}

func TestAddRejects(t *testing.T) {
	f := enginetest.NewFakeModel(100, 64)
	e := newEngine(t, f, engine.Options{})
	if err := e.Add(engine.Request{ID: 1, Prompt: []int32{1}, Params: greedy(5)}); err != nil {
		t.Fatal(err)
	}
	bad := greedy(5)
	bad.TopP = 2
	eos := greedy(5)
	cases := []struct {
		name string
		req  engine.Request
		want error
	}{
		{"duplicate", engine.Request{ID: 1, Prompt: []int32{1}, Params: greedy(5)}, engine.ErrDuplicateID},
		{"empty prompt", engine.Request{ID: 2, Params: greedy(5)}, engine.ErrBadRequest},
		{"token beyond vocab", engine.Request{ID: 3, Prompt: []int32{1, 100}, Params: greedy(5)}, engine.ErrBadRequest},
		{"negative token", engine.Request{ID: 4, Prompt: []int32{-1}, Params: greedy(5)}, engine.ErrBadRequest},
		{"bad params", engine.Request{ID: 5, Prompt: []int32{1}, Params: bad}, sampler.ErrInvalidParams},
		{"prompt fills context", engine.Request{ID: 6, Prompt: make([]int32, 64), Params: greedy(5)}, engine.ErrTooLong},
		{"resume past max_new", engine.Request{ID: 7, Prompt: []int32{1}, AlreadyGenerated: []int32{5, 6, 7, 8, 9}, Params: greedy(5)}, engine.ErrAlreadyFinished},
		{"resume after EOS", engine.Request{ID: 8, Prompt: []int32{1}, AlreadyGenerated: []int32{5, 2}, Params: eos}, engine.ErrAlreadyFinished},
	}
	for _, c := range cases {
		if err := e.Add(c.req); !errors.Is(err, c.want) {
			t.Errorf("%s: err = %v, want %v", c.name, err, c.want)
		}
	}
	if st := e.Stats(); st.Waiting != 1 {
		t.Fatalf("rejected requests were queued: %+v", st)
	}
	// max_new_tokens is clamped to the context: 1 + 63 = 64 tokens.
	res := runAll(t, e)
	if len(res[1].tokens) != 5 {
		t.Fatalf("got %d tokens", len(res[1].tokens))
	}
	if err := e.Add(engine.Request{ID: 10, Prompt: []int32{1}, Params: greedy(1000)}); err != nil {
		t.Fatal(err)
	}
	if got := runAll(t, e)[10]; len(got.tokens) != 63 || got.reason != engine.FinishLength {
		t.Fatalf("clamped request: %d tokens (%s), want 63 (length)", len(got.tokens), got.reason)
	}
}

// TestResume: a request resumed with its first k generated tokens continues
// exactly as the uninterrupted one, greedy and seeded alike.
func TestResume(t *testing.T) {
	for _, params := range []sampler.Params{greedy(30), seeded(30, 77), seeded(30, -1)} {
		run := func(already []int32) []int32 {
			e := newEngine(t, enginetest.NewFakeModel(100, 512), engine.Options{})
			if err := e.Add(engine.Request{ID: 1, Prompt: prompt(8, 9), AlreadyGenerated: already, Params: params}); err != nil {
				t.Fatal(err)
			}
			if params.Seed == -1 {
				// A random seed: what a crash-recovery record keeps and passes back.
				info, _ := e.Info(1)
				params.Seed = info.Seed
			}
			return runAll(t, e)[1].tokens
		}
		full := run(nil)
		for _, k := range []int{1, 13, 29} {
			rest := run(full[:k])
			if !slices.Equal(append(slices.Clone(full[:k]), rest...), full) {
				t.Fatalf("resume after %d: %v + %v, uninterrupted %v", k, full[:k], rest, full)
			}
		}
	}
}

func TestForwardErrorThenRetry(t *testing.T) {
	f := enginetest.NewFakeModel(100, 512)
	f.FailAt = 3
	e := newEngine(t, f, engine.Options{})
	p := prompt(2, 6)
	if err := e.Add(engine.Request{ID: 1, Prompt: p, Params: greedy(10)}); err != nil {
		t.Fatal(err)
	}
	var got []int32
	failures := 0
	for e.HasWork() {
		outs, err := e.Step()
		if err != nil {
			failures++
			continue
		}
		for _, o := range outs {
			got = append(got, o.Token)
		}
	}
	if failures != 1 || !slices.Equal(got, f.Greedy(p, 10)) {
		t.Fatalf("failures %d, tokens %v, want 1 and %v", failures, got, f.Greedy(p, 10))
	}
}

// TestRandomLoad is a property test: random arrivals, lengths, parameters,
// aborts and pool sizes. Every finished request equals its solo run, KV
// never leaks, and the fake's KV checks never fire.
func TestRandomLoad(t *testing.T) {
	for seed := uint64(1); seed <= 6; seed++ {
		rng := rand.New(rand.NewPCG(seed, 5))
		f := enginetest.NewFakeModel(100, 128)
		pool := 40 + rng.IntN(200)
		e := newEngine(t, f, engine.Options{MaxTotalTokens: pool, MaxReqTotalLen: min(pool, 128),
			ChunkedPrefillSize: 1 + rng.IntN(20), BatchMaxTokens: 1 + rng.IntN(40), PausedHeadroomSteps: 1 + rng.IntN(4),
			PrefillWaitSteps: rng.IntN(4)})
		type spec struct {
			prompt []int32
			params sampler.Params
		}
		specs := map[uint64]spec{}
		aborted := map[uint64]bool{}
		res := map[uint64]*result{}
		next := uint64(0)
		for step := 0; step < 30000 && (step < 300 || e.HasWork()); step++ {
			if step < 300 && rng.IntN(3) == 0 {
				maxLen := min(pool, 128)
				pl := 1 + rng.IntN(maxLen/2)
				// Half the prompts share one of three prefixes, so the prompt cache hits.
				p := prompt(int(next), pl)
				if rng.IntN(2) == 0 {
					shared := prompt(1000+rng.IntN(3), maxLen/2)
					copy(p, shared[:rng.IntN(pl)+1])
				}
				s := spec{prompt: p, params: greedy(1 + rng.IntN(maxLen-pl))}
				if rng.IntN(2) == 0 {
					s.params = seeded(s.params.MaxNewTokens, int64(next))
				}
				if err := e.Add(engine.Request{ID: next, Prompt: s.prompt, Params: s.params}); err != nil {
					t.Fatal(err)
				}
				specs[next] = s
				next++
			}
			if rng.IntN(40) == 0 && next > 0 {
				id := rng.Uint64N(next)
				if e.Abort(id) {
					aborted[id] = true
				}
			}
			outs, err := e.Step()
			if err != nil {
				t.Fatalf("seed %d step %d: %v", seed, step, err)
			}
			for _, o := range outs {
				if res[o.ID] == nil {
					res[o.ID] = &result{}
				}
				if o.Token >= 0 {
					res[o.ID].tokens = append(res[o.ID].tokens, o.Token)
				}
				if o.Finished {
					res[o.ID].reason = o.Reason
				}
			}
			if used, size := e.KVUsage(); used > size {
				t.Fatalf("used %d > size %d", used, size)
			}
		}
		if e.HasWork() {
			t.Fatalf("seed %d: engine did not drain: %+v %+v", seed, e.Stats(), e.Options())
		}
		checkIdleKV(t, e)
		for id, s := range specs {
			r := res[id]
			if r == nil || r.reason == engine.NotFinished {
				t.Fatalf("seed %d: request %d never finished", seed, id)
			}
			if aborted[id] {
				if r.reason != engine.FinishAbort {
					t.Fatalf("seed %d: aborted request %d ended with %s", seed, id, r.reason)
				}
				continue
			}
			solo := newEngine(t, enginetest.NewFakeModel(100, 128), engine.Options{MaxReqTotalLen: min(pool, 128), DisablePromptCache: true})
			if err := solo.Add(engine.Request{ID: id, Prompt: s.prompt, Params: s.params}); err != nil {
				t.Fatal(err)
			}
			if want := runAll(t, solo)[id]; !slices.Equal(r.tokens, want.tokens) || r.reason != want.reason {
				t.Fatalf("seed %d request %d: %v (%s), solo %v (%s)", seed, id, r.tokens, r.reason, want.tokens, want.reason)
			}
		}
		t.Logf("seed %d pool %d: %d requests, %+v", seed, pool, len(specs), e.Stats())
	}
}

func TestStepSteadyStateAllocs(t *testing.T) {
	f := enginetest.NewFakeModel(100, 4096)
	e := newEngine(t, f, engine.Options{MaxTotalTokens: 4096})
	for id := uint64(0); id < 8; id++ {
		if err := e.Add(engine.Request{ID: id, Prompt: prompt(int(id), 8), Params: seeded(1000, int64(id))}); err != nil {
			t.Fatal(err)
		}
	}
	for range 5 {
		if _, err := e.Step(); err != nil {
			t.Fatal(err)
		}
	}
	allocs := testing.AllocsPerRun(50, func() {
		if _, err := e.Step(); err != nil {
			t.Fatal(err)
		}
	})
	if allocs > 0 {
		t.Fatalf("a decode Step allocates %.1f times", allocs)
	}
}

func ExampleEngine() {
	f := enginetest.NewFakeModel(100, 512)
	e, _ := engine.New(f, engine.Options{})
	p := sampler.DefaultParams()
	p.MaxNewTokens = 3
	_ = e.Add(engine.Request{ID: 1, Prompt: []int32{1, 7, 9}, Params: p})
	n := 0
	for e.HasWork() {
		outs, _ := e.Step()
		n += len(outs)
	}
	fmt.Println(n, "tokens")
	// Output: 3 tokens
}

// TestPromptCache: a second turn that extends the first conversation reuses
// the first turn's prompt KV and gets the same tokens as with the cache off.
// The first turn's answer was decoded one token per step, while the second
// turn's own run computes those tokens inside its prompt chunk, which rounds
// differently: they are recomputed (replay.go). So are the first turn's last
// 30%4 = 2 prompt tokens: the fake rounds like a q4_K model, whose gemm
// takes a chunk's rows in fours and leaves the rest to its gemv, and in the
// second turn's longer chunk those two rows are gemm rows.
func TestPromptCache(t *testing.T) {
	run := func(opts engine.Options) (turn2 []int32, info engine.ReqInfo, st engine.Stats) {
		f := enginetest.NewFakeModel(100, 512)
		e := newEngine(t, f, opts)
		p1 := prompt(3, 30)
		if err := e.Add(engine.Request{ID: 1, Prompt: p1, Params: greedy(10)}); err != nil {
			t.Fatal(err)
		}
		gen := runAll(t, e)[1].tokens
		p2 := append(append(slices.Clone(p1), gen...), 5, 6, 7)
		if err := e.Add(engine.Request{ID: 2, Prompt: p2, Params: greedy(10)}); err != nil {
			t.Fatal(err)
		}
		if _, err := e.Step(); err != nil {
			t.Fatal(err)
		}
		info, _ = e.Info(2)
		turn2 = runAll(t, e)[2].tokens
		return turn2, info, e.Stats()
	}
	on, infoOn, stOn := run(engine.Options{})
	off, infoOff, stOff := run(engine.Options{DisablePromptCache: true})
	if !slices.Equal(on, off) {
		t.Fatalf("cache on %v, off %v", on, off)
	}
	if infoOn.PromptCacheLen != 28 || infoOff.PromptCacheLen != 0 {
		t.Fatalf("prompt_cache_len on %d (want turn 1's first 28 prompt tokens), off %d", infoOn.PromptCacheLen, infoOff.PromptCacheLen)
	}
	if saved := stOff.PrefillTokens - stOn.PrefillTokens; saved != 28 || stOn.CachedTokens != 28 {
		t.Fatalf("prefill tokens on %d, off %d, cached %d", stOn.PrefillTokens, stOff.PrefillTokens, stOn.CachedTokens)
	}
}

// TestPromptCacheEvictedForRoom: cached prefixes give way to new requests.
func TestPromptCacheEvictedForRoom(t *testing.T) {
	f := enginetest.NewFakeModel(100, 512)
	e := newEngine(t, f, engine.Options{MaxTotalTokens: 100})
	var evicted uint64
	for id := uint64(1); id <= 20; id++ {
		p := prompt(int(id), 40)
		if err := e.Add(engine.Request{ID: id, Prompt: p, Params: greedy(20)}); err != nil {
			t.Fatal(err)
		}
		if got := runAll(t, e)[id].tokens; !slices.Equal(got, f.Greedy(p, 20)) {
			t.Fatalf("request %d: %v", id, got)
		}
		st := e.Stats()
		if st.KVCached == 0 || st.Evictions != 0 {
			t.Fatalf("after request %d: %+v", id, st)
		}
		// A finished request caches its 40 prompt tokens: the first two
		// fit beside what is cached; every later one needs room that only
		// evicting the cache gives.
		if (id <= 2) != (st.CacheEvictedTokens == 0) || st.CacheEvictedTokens < evicted {
			t.Fatalf("after request %d: %d cache tokens evicted (before: %d)", id, st.CacheEvictedTokens, evicted)
		}
		evicted = st.CacheEvictedTokens
	}
	if evicted > 20*60 {
		t.Fatalf("%d tokens evicted, more than were ever cached", evicted)
	}
}

// TestPromptCacheLenOnOutputs: every output carries the request's cache hit,
// including a one-token request that is gone (no Info) after its only step.
// The same 30-token prompt again hits 20 tokens: its last chunk must keep
// every row's class of its canonical chunk [0,30), so at least FakeTile = 8
// tokens are recomputed, and a number with the canonical chunk's remainder
// of fours (30%4 = 2), so 10 (replay.go, FakeModel.RowClass).
func TestPromptCacheLenOnOutputs(t *testing.T) {
	for _, tc := range []struct {
		name    string
		opts    engine.Options
		noCache bool
		want    int
	}{
		{"cache on", engine.Options{}, false, 20},
		{"request opts out", engine.Options{}, true, 0},
		{"cache off", engine.Options{DisablePromptCache: true}, false, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEngine(t, enginetest.NewFakeModel(100, 512), tc.opts)
			p := prompt(4, 30)
			if err := e.Add(engine.Request{ID: 1, Prompt: p, Params: greedy(3)}); err != nil {
				t.Fatal(err)
			}
			runAll(t, e)
			for id, maxNew := range map[uint64]int{2: 1, 3: 4} {
				params := greedy(maxNew)
				params.DisablePromptCache = tc.noCache
				if err := e.Add(engine.Request{ID: id, Prompt: p, Params: params}); err != nil {
					t.Fatal(err)
				}
				n := 0
				for e.HasWork() {
					outs, err := e.Step()
					if err != nil {
						t.Fatal(err)
					}
					for _, o := range outs {
						n++
						if o.PromptCacheLen != tc.want {
							t.Fatalf("request %d output %d: prompt_cache_len %d, want %d", id, n, o.PromptCacheLen, tc.want)
						}
					}
				}
				if n != maxNew {
					t.Fatalf("request %d: %d outputs, want %d", id, n, maxNew)
				}
			}
		})
	}
}

// TestNoLogProb: a greedy request with Params.NoLogProb gets the same
// tokens with log-probability 0 (not computed), batched beside a request
// that gets its log-probabilities; a sampled one keeps them.
func TestNoLogProb(t *testing.T) {
	e := newEngine(t, enginetest.NewFakeModel(100, 512), engine.Options{})
	p := prompt(5, 12)
	skip, sampled := greedy(6), seeded(6, 9)
	skip.NoLogProb, sampled.NoLogProb = true, true
	for id, params := range map[uint64]sampler.Params{1: greedy(6), 2: skip, 3: sampled} {
		if err := e.Add(engine.Request{ID: id, Prompt: p, Params: params}); err != nil {
			t.Fatal(err)
		}
	}
	toks, lps := map[uint64][]int32{}, map[uint64][]float32{}
	for e.HasWork() {
		outs, err := e.Step()
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range outs {
			toks[o.ID] = append(toks[o.ID], o.Token)
			lps[o.ID] = append(lps[o.ID], o.LogProb)
		}
	}
	if !slices.Equal(toks[1], toks[2]) || len(toks[1]) != 6 {
		t.Fatalf("tokens with log-probabilities %v, without %v", toks[1], toks[2])
	}
	for i := range lps[1] {
		if lps[1][i] >= 0 || lps[2][i] != 0 || lps[3][i] >= 0 {
			t.Fatalf("token %d: log-probabilities %v (computed), %v (skipped), %v (sampled, kept)", i, lps[1][i], lps[2][i], lps[3][i])
		}
	}
}

// TestPrefillWaitSteps: under the non-aggressive schedule a step with prompt
// chunks comes only after PrefillWaitSteps steps without any while
// something decodes, so prompts arriving one a step are prefilled in
// groups; with 0 each is prefilled in the step after it arrives. The
// tokens are the same either way.
func TestPrefillWaitSteps(t *testing.T) {
	const arrivals = 24
	for _, wait := range []int{0, 1, 3, 8} {
		t.Run(fmt.Sprint("wait=", wait), func(t *testing.T) {
			f, ref := enginetest.NewFakeModel(100, 512), enginetest.NewFakeModel(100, 512)
			type step struct{ prompts, decodes int }
			var steps []step
			f.OnForward = func(b *engine.Batch) {
				var s step
				for _, q := range b.Seqs {
					if q.Len > 1 { // every prompt here is longer than one token and fits one chunk
						s.prompts++
					} else {
						s.decodes++
					}
				}
				steps = append(steps, s)
			}
			e := newEngine(t, f, engine.Options{PrefillWaitSteps: wait, DisablePromptCache: true, MaxTotalTokens: 2048, MaxReqTotalLen: 512})
			want := map[uint64][]int32{}
			res := map[uint64][]int32{}
			for id := uint64(0); e.HasWork() || id < arrivals; {
				if id < arrivals {
					p := prompt(int(id), 3+int(id)%5)
					want[id] = ref.Greedy(p, 30)
					if err := e.Add(engine.Request{ID: id, Prompt: p, Params: greedy(30)}); err != nil {
						t.Fatal(err)
					}
					id++
				}
				outs, err := e.Step()
				if err != nil {
					t.Fatal(err)
				}
				for _, o := range outs {
					res[o.ID] = append(res[o.ID], o.Token)
				}
			}
			for id, w := range want {
				if !slices.Equal(res[id], w) {
					t.Fatalf("request %d: %v, want %v", id, res[id], w)
				}
			}
			since, prefills := wait, 0
			for i, s := range steps {
				if s.prompts == 0 {
					since++
					continue
				}
				prefills++
				if s.decodes > 0 && since < wait {
					t.Fatalf("step %d: prompts after %d steps without, while %d requests decode (wait %d)", i, since, s.decodes, wait)
				}
				since = 0
			}
			switch {
			case wait == 0 && prefills != arrivals:
				t.Fatalf("aggressive: %d arrivals prefilled in %d steps", arrivals, prefills)
			case wait > 0 && prefills > 1+(arrivals-1+wait)/(wait+1): // the first alone, then one per wait+1 arrivals
				t.Fatalf("wait %d: %d arrivals prefilled in %d steps", wait, arrivals, prefills)
			}
		})
	}
}
