package engine_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"testing"

	"github.com/lightllm-go/lightllm/pkg/engine"
	"github.com/lightllm-go/lightllm/pkg/engine/enginetest"
	"github.com/lightllm-go/lightllm/pkg/model"
	"github.com/lightllm-go/lightllm/pkg/sampler"
)

// invariancePrompts draws n prompts over the real stories260K vocabulary
// that share prefixes the way chat turns and system prompts do: each starts
// with BOS and a prefix cut from one of a few bases (so a radix hit of any
// length happens), then its own tail. Lengths 2..260 cover chunks of every
// rounding class (1, 2..63, 64+ tokens).
func invariancePrompts(rng *rand.Rand, n, vocab, baseLen int) []engine.Request {
	bases := make([][]int32, 4)
	for i := range bases {
		b := []int32{1}
		for len(b) < baseLen {
			b = append(b, int32(3+rng.IntN(vocab-3)))
		}
		bases[i] = b
	}
	reqs := make([]engine.Request, n)
	for i := range reqs {
		base := bases[rng.IntN(len(bases))]
		p := slices.Clone(base[:1+rng.IntN(len(base))])
		for tail := rng.IntN(baseLen / 3); tail > 0; tail-- {
			p = append(p, int32(3+rng.IntN(vocab-3)))
		}
		if len(p) < 2 {
			p = append(p, 3)
		}
		params := sampler.DefaultParams()
		params.MaxNewTokens = 8 + rng.IntN(17)
		params.IgnoreEOS = true
		if i%3 == 2 {
			params.DoSample, params.Temperature, params.TopK, params.Seed = true, 0.8, 40, int64(rng.Uint64()>>1)
		}
		reqs[i] = engine.Request{ID: uint64(i), Prompt: p, Params: params}
	}
	return reqs
}

// TestOutputInvariance is the property behind "same request, same answer":
// over random prompt sets, for every prefill chunk size, each request's
// tokens (greedy or seeded) under any cache state (cold, warmed by other
// requests, warmed by the same ones), batch mix (all at once, trickling in
// between steps, in another order) and KV pressure (evictions and
// recompute) equal those of the request run alone on a fresh engine with
// the prompt cache off. The fake model rounds by chunk class
// (ChunkRounding), so any position computed in another class than its
// canonical one, or over K/V computed so, changes the tokens;
// TestChunkClassesRoundAlike (pkg/model) shows that the real model's
// numbers depend on exactly that, and TestOutputInvarianceStories260K runs
// the same schedules over it.
func TestOutputInvariance(t *testing.T) {
	fake := enginetest.NewFakeModel(100, 512)
	fake.ChunkRounding = true
	rounds := 6
	if testing.Short() {
		rounds = 2
	}
	evictions := uint64(0)
	for _, chunk := range []int{3, enginetest.FakeTile, 13, 40, 512} {
		for round := 0; round < rounds; round++ {
			evictions += checkInvariance(t, fake, fmt.Sprintf("chunk %d round %d", chunk, round), chunk, 100,
				rand.New(rand.NewPCG(uint64(chunk), uint64(round))), 20, 90, 300)
		}
	}
	if evictions == 0 {
		t.Errorf("the small-pool schedules caused no eviction: recompute went untested")
	}
}

// TestOutputInvarianceStories260K runs the schedules of
// TestOutputInvariance over the real model (f16 KV, chunks of every
// class up to the tiled attention path).
func TestOutputInvarianceStories260K(t *testing.T) {
	m := loadModel(t, filepath.Join(storiesDir(t), "stories260K-f32.gguf"))
	for _, chunk := range []int{64, 512} {
		checkInvariance(t, m, fmt.Sprintf("chunk %d", chunk), chunk, 512,
			rand.New(rand.NewPCG(uint64(chunk), 7)), 12, 180, 300)
	}
}

// TestOutputInvarianceQ4K runs them over a Q4_K_M file: q4_K rows round
// by their place in the chunk's fours too (model.RowClass), so a cache hit
// whose recomputed tail moves a row into or out of the last n%4 would
// change the tokens.
func TestOutputInvarianceQ4K(t *testing.T) {
	path := filepath.Join(t.TempDir(), "q4_K_M.gguf")
	gen := model.GenOptions{Arch: "llama", Hidden: 256, Layers: 2, Heads: 4, KVHeads: 2, FFN: 512, Vocab: 512, DType: "q4_K_M", Seed: 7}
	if err := model.GenerateGGUF(path, gen); err != nil {
		t.Fatal(err)
	}
	m := loadModel(t, path)
	for _, chunk := range []int{13, 64} {
		checkInvariance(t, m, fmt.Sprintf("chunk %d", chunk), chunk, 512,
			rand.New(rand.NewPCG(uint64(chunk), 9)), 12, 120, 300)
	}
}

// checkInvariance runs one prompt set through every schedule and returns
// the evictions they caused.
func checkInvariance(t *testing.T, m engine.Forwarder, what string, chunk, vocab int, rng *rand.Rand, n, baseLen, smallPool int) (evictions uint64) {
	t.Helper()
	reqs := invariancePrompts(rng, n, vocab, baseLen)
	opts := engine.Options{MaxTotalTokens: 4096, MaxReqTotalLen: 300, ChunkedPrefillSize: chunk, BatchMaxTokens: 1024}
	want := map[uint64][]uint64{}
	alone := opts
	alone.DisablePromptCache = true
	for _, r := range reqs {
		got, _ := runSchedule(t, m, alone, nil, [][]engine.Request{{r}})
		want[r.ID] = got[r.ID]
	}
	for _, tc := range invarianceCases(rng, reqs, smallPool) {
		o := opts
		if tc.pool > 0 {
			o.MaxTotalTokens = tc.pool
		}
		got, st := runSchedule(t, m, o, tc.warm, tc.waves)
		for id, w := range want {
			if g, ok := got[id]; ok && !slices.Equal(g, w) {
				t.Fatalf("%s, %s: request %d (prompt %d tokens) got %v, alone %v (stats %+v)",
					what, tc.name, id, len(reqs[id].Prompt), g, w, st)
			}
		}
		evictions += st.Evictions
	}
	return evictions
}

type invarianceCase struct {
	name  string
	pool  int                // KV pool size (0: ample)
	warm  []engine.Request   // run to completion first, to fill the prompt cache
	waves [][]engine.Request // added one wave per step
}

func invarianceCases(rng *rand.Rand, reqs []engine.Request, smallPool int) []invarianceCase {
	shuffled := slices.Clone(reqs)
	rng.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
	var trickle [][]engine.Request
	for i := 0; i < len(shuffled); i += 3 {
		trickle = append(trickle, shuffled[i:min(i+3, len(shuffled))])
	}
	again := func(rs []engine.Request) []engine.Request {
		out := slices.Clone(rs)
		for i := range out {
			out[i].ID += 1000 // the same request once more, under another id
		}
		return out
	}
	return []invarianceCase{
		{name: "all at once, cold cache", waves: [][]engine.Request{reqs}},
		{name: "trickling in, shuffled", waves: trickle},
		{name: "cache warmed by the same requests", warm: again(reqs), waves: [][]engine.Request{shuffled}},
		{name: "cache warmed by half, trickling", warm: again(shuffled[:len(shuffled)/2]), waves: trickle},
		{name: "small KV pool: evictions and recompute", pool: smallPool, waves: [][]engine.Request{shuffled}},
	}
}

// streamEntry is one output as the invariance tests compare it: the token
// and its log-probability's bits, so that a difference in the numbers shows
// even where it does not change the token.
func streamEntry(o engine.Output) uint64 {
	return uint64(uint32(o.Token))<<32 | uint64(math.Float32bits(o.LogProb))
}

// runSchedule runs warm to completion, then adds the waves one per step
// and runs the engine dry, returning the outputs (streamEntry) of the waves' requests.
func runSchedule(t *testing.T, m engine.Forwarder, opts engine.Options, warm []engine.Request, waves [][]engine.Request) (map[uint64][]uint64, engine.Stats) {
	t.Helper()
	e, err := engine.New(m, opts)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range warm {
		if err := e.Add(r); err != nil {
			t.Fatal(err)
		}
	}
	runAll(t, e)
	got := map[uint64][]uint64{}
	for steps := 0; len(waves) > 0 || e.HasWork(); steps++ {
		if len(waves) > 0 {
			for _, r := range waves[0] {
				if err := e.Add(r); err != nil {
					t.Fatal(err)
				}
			}
			waves = waves[1:]
		}
		if steps > 100000 {
			t.Fatal("engine did not finish")
		}
		outs, err := e.Step()
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range outs {
			if o.Token >= 0 {
				got[o.ID] = append(got[o.ID], streamEntry(o))
			}
		}
	}
	checkIdleKV(t, e)
	return got, e.Stats()
}
