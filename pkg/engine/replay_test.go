package engine_test

import (
	"fmt"
	"path/filepath"
	"slices"
	"testing"

	"github.com/lightllm-go/lightllm/pkg/engine"
	"github.com/lightllm-go/lightllm/pkg/engine/enginetest"
	"github.com/lightllm-go/lightllm/pkg/sampler"
)

// replayRequests are 32 requests with prompts of 4 to 143 tokens (one or
// two prefill chunks of 96) and 100 to 140 new tokens each. Every prompt
// starts with its own token, so no two share a cached prefix: what is under
// test is a request's own recompute, not the prompt cache between requests.
func replayRequests(sample bool) []engine.Request {
	reqs := make([]engine.Request, 32)
	for i := range reqs {
		n := 4 + i*37%140
		p := []int32{int32(259 + i)}
		x := uint32(i*7919 + 17)
		for len(p) < n {
			x = x*1103515245 + 12345
			p = append(p, int32(259+x>>16%253))
		}
		params := sampler.DefaultParams()
		params.MaxNewTokens = 100 + i%5*10
		params.IgnoreEOS = true
		if sample {
			params.DoSample, params.Temperature, params.RepetitionPenalty = true, 1, 1.1
			params.Seed = int64(1000 + i)
		}
		reqs[i] = engine.Request{ID: uint64(i), Prompt: p, Params: params}
	}
	return reqs
}

// runStreams adds reqs to a fresh engine at once and runs it dry.
func runStreams(t *testing.T, m engine.Forwarder, opts engine.Options, reqs []engine.Request) (map[uint64][]int32, engine.Stats) {
	t.Helper()
	e, err := engine.New(m, opts)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range reqs {
		if err := e.Add(r); err != nil {
			t.Fatal(err)
		}
	}
	got := map[uint64][]int32{}
	for id, r := range runAll(t, e) {
		if r.reason != engine.FinishLength {
			t.Fatalf("request %d ended with %s after %d tokens", id, r.reason, len(r.tokens))
		}
		got[id] = r.tokens
	}
	return got, e.Stats()
}

// sameStreams fails if any request's tokens differ from want, naming the
// first divergence.
func sameStreams(t *testing.T, what string, want, got map[uint64][]int32) {
	t.Helper()
	diverged := 0
	first := ""
	for id := uint64(0); id < uint64(len(want)); id++ {
		w, g := want[id], got[id]
		if slices.Equal(w, g) {
			continue
		}
		n := 0
		for n < len(w) && n < len(g) && w[n] == g[n] {
			n++
		}
		if diverged == 0 {
			first = fmt.Sprintf("request %d at token %d", id, n)
		}
		diverged++
	}
	if diverged > 0 {
		t.Fatalf("%s: %d of %d requests diverged from the big-pool run (first: %s)", what, diverged, len(want), first)
	}
}

// TestRecomputeReplaysExactly runs 32 requests over the real stories260K
// model (a) with KV for all of them, (b) with a pool so small that requests
// are evicted and recomputed over and over, and (c) resumed mid-way from
// their generated tokens on a fresh engine, as after an infer restart. The
// model rounds a multi-token chunk differently from a one-token step, so
// the token streams agree only if a recompute feeds the prompt in the
// chunks it had and every generated token as a step of its own.
func TestRecomputeReplaysExactly(t *testing.T) {
	m := loadModel(t, filepath.Join(storiesDir(t), "stories260K-f32.gguf"))
	for _, tc := range []struct {
		name    string
		sample  bool
		noCache bool
	}{
		{"seeded", true, false},
		{"greedy without prompt cache", false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reqs := replayRequests(tc.sample)
			opts := engine.Options{ChunkedPrefillSize: 96, BatchMaxTokens: 160, MaxReqTotalLen: 400,
				DisablePromptCache: tc.noCache, SkipLogProbs: true}

			big := opts
			big.MaxTotalTokens = 32 * 400
			want, st := runStreams(t, m, big, reqs)
			if st.Evictions != 0 {
				t.Fatalf("big pool: %d evictions", st.Evictions)
			}

			tiny := opts
			tiny.MaxTotalTokens = 800
			got, st := runStreams(t, m, tiny, reqs)
			if st.Evictions < 10 {
				t.Fatalf("tiny pool: only %d evictions", st.Evictions)
			}
			t.Logf("tiny pool: %d evictions, %d steps", st.Evictions, st.Steps)
			sameStreams(t, "tiny pool", want, got)

			resumed := make([]engine.Request, len(reqs))
			for i, r := range reqs {
				k := 1 + i*13%(len(want[r.ID])-1)
				r.AlreadyGenerated = want[r.ID][:k]
				resumed[i] = r
			}
			rest, _ := runStreams(t, m, big, resumed)
			for _, r := range resumed {
				rest[r.ID] = append(slices.Clone(r.AlreadyGenerated), rest[r.ID]...)
			}
			sameStreams(t, "resumed", want, rest)
		})
	}
}

// chunkRequests are n requests over a ChunkRounding fake, each prompt with
// its own first token, half greedy and half seeded.
func chunkRequests(n int) []engine.Request {
	reqs := make([]engine.Request, n)
	for i := range reqs {
		p := prompt(i, 3+i*11%38)
		p[0] = int32(10 + i)
		params := greedy(20 + i*7%31)
		if i%2 == 1 {
			params = seeded(params.MaxNewTokens, int64(i))
		}
		params.IgnoreEOS = true
		reqs[i] = engine.Request{ID: uint64(i), Prompt: p, Params: params}
	}
	return reqs
}

// TestRecomputeReplaysChunks: the fake model with ChunkRounding gives other
// tokens whenever a position is computed in another chunk, so any
// difference in chunking between an uninterrupted run, a run under KV
// pressure (tight budgets, evictions, with and without the prompt cache)
// and a resumed run shows.
func TestRecomputeReplaysChunks(t *testing.T) {
	reqs := chunkRequests(16)
	fake := func() *enginetest.FakeModel {
		f := enginetest.NewFakeModel(100, 256)
		f.ChunkRounding = true
		return f
	}
	base := engine.Options{ChunkedPrefillSize: 7, BatchMaxTokens: 10, MaxReqTotalLen: 100}
	big := base
	big.MaxTotalTokens = 4096
	want, _ := runStreams(t, fake(), big, reqs)
	for _, tc := range []struct {
		pool     int
		noCache  bool
		headroom int
	}{
		{100, false, 1}, {100, true, 1}, {150, false, 4}, {230, false, 16}, {230, true, 1},
	} {
		opts := base
		opts.MaxTotalTokens, opts.DisablePromptCache, opts.PausedHeadroomSteps = tc.pool, tc.noCache, tc.headroom
		got, st := runStreams(t, fake(), opts, reqs)
		if st.Evictions == 0 {
			t.Fatalf("%+v: no evictions", tc)
		}
		sameStreams(t, fmt.Sprintf("%+v (%d evictions)", tc, st.Evictions), want, got)
	}
	for _, pool := range []int{4096, 120} {
		resumed := slices.Clone(reqs)
		for i := range resumed {
			r := &resumed[i]
			r.AlreadyGenerated = want[r.ID][:1+i*5%(len(want[r.ID])-1)]
		}
		opts := base
		opts.MaxTotalTokens = pool
		rest, _ := runStreams(t, fake(), opts, resumed)
		for _, r := range resumed {
			rest[r.ID] = append(slices.Clone(r.AlreadyGenerated), rest[r.ID]...)
		}
		sameStreams(t, fmt.Sprintf("resumed, pool %d", pool), want, rest)
	}
}

// TestRecomputeSkipsForeignCache: request 2's prompt continues request
// 1's conversation (its prompt and first generated tokens), so both hold the
// same leading tokens but computed in other chunks: request 1 decoded some
// of them one at a time. Request 2 is evicted, request 1 finishes and caches
// its K/V; recomputed, request 2 must not take that prefix for its own, and
// its tokens must match its uninterrupted run.
func TestRecomputeSkipsForeignCache(t *testing.T) {
	fake := func() *enginetest.FakeModel {
		f := enginetest.NewFakeModel(100, 256)
		f.ChunkRounding = true
		return f
	}
	opts := engine.Options{MaxTotalTokens: 1000, MaxReqTotalLen: 100, ChunkedPrefillSize: 10, PausedHeadroomSteps: 1}
	p1 := prompt(3, 15)
	turn1 := engine.Request{ID: 1, Prompt: p1, Params: greedy(30)}
	turn1.Params.IgnoreEOS = true
	first, _ := runStreams(t, fake(), opts, []engine.Request{turn1})
	p2 := append(append(slices.Clone(p1), first[1][:5]...), prompt(4, 6)[1:]...)
	reqs := []engine.Request{
		{ID: 0, Prompt: prompt(5, 10), Params: greedy(60)},
		turn1,
		{ID: 2, Prompt: p2, Params: seeded(60, 9)},
	}
	reqs[0].Params.IgnoreEOS, reqs[2].Params.IgnoreEOS = true, true
	want, _ := runStreams(t, fake(), opts, reqs)
	opts.MaxTotalTokens = 100
	got, st := runStreams(t, fake(), opts, reqs)
	if st.Evictions == 0 || st.CachedTokens != 0 {
		t.Fatalf("expected an eviction and no cache hit at first admission: %+v", st)
	}
	sameStreams(t, "evicted", want, got)
}
