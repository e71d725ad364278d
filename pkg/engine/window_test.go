package engine_test

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"testing"

	"github.com/lightllm-go/lightllm/pkg/engine"
	"github.com/lightllm-go/lightllm/pkg/model"
	"github.com/lightllm-go/lightllm/pkg/sampler"
)

// windowModel generates a gen-model gemma3 with sliding-window layers as
// pattern says (6: five local to one global, gemma3's; 2: alternating,
// gpt-oss's and gemma2's) and loads it.
func windowModel(t *testing.T, window, pattern int) *model.Model {
	t.Helper()
	path := filepath.Join(t.TempDir(), "gemma3.gguf")
	gen := model.GenOptions{Arch: "gemma3", Hidden: 128, Layers: 6, Heads: 4, KVHeads: 2, FFN: 256, Vocab: 512, Seed: 19, DType: "f16", MaxPos: 40960,
		SlidingWindow: window, SWAPattern: pattern, RopeTheta: 1e6, RopeLinear: 8}
	if err := model.GenerateGGUF(path, gen); err != nil {
		t.Fatal(err)
	}
	m := loadModel(t, path)
	if m.LocalWindow() != window {
		t.Fatalf("model local window %d, want %d", m.LocalWindow(), window)
	}
	return m
}

// TestOutputInvarianceWindowKV: with the local layers' K/V kept for the
// window only (freed behind it, cached for the prompt's tail), every
// schedule of TestOutputInvariance — cache hits, trickling, evictions and
// recompute — gives each request the tokens it gets alone with the full
// store (FullWindowKV, every position's local K/V kept).
func TestOutputInvarianceWindowKV(t *testing.T) {
	for _, pattern := range []int{6, 2} {
		m := windowModel(t, 16, pattern)
		for _, chunk := range []int{13, 64} {
			what := fmt.Sprintf("pattern %d chunk %d", pattern, chunk)
			rng := rand.New(rand.NewPCG(uint64(chunk), uint64(pattern)))
			reqs := invariancePrompts(rng, 10, 512, 150)
			full := engine.Options{MaxTotalTokens: 4096, MaxReqTotalLen: 300, ChunkedPrefillSize: chunk, BatchMaxTokens: 1024,
				DisablePromptCache: true, FullWindowKV: true}
			windowed := full
			windowed.FullWindowKV = false
			for _, r := range reqs[:4] {
				want, _ := runSchedule(t, m, full, nil, [][]engine.Request{{r}})
				got, st := runSchedule(t, m, windowed, nil, [][]engine.Request{{r}})
				if !slices.Equal(got[r.ID], want[r.ID]) {
					t.Fatalf("%s: request %d (%d tokens): windowed KV %v, full %v", what, r.ID, len(r.Prompt), got[r.ID], want[r.ID])
				}
				if st.KVLocalPeak == 0 {
					t.Fatalf("%s: the windowed run held no local slot", what)
				}
			}
			checkInvariance(t, m, what, chunk, 512, rng, 10, 150, 300)
		}
	}
}

// TestWindowKVCacheHit: a repeated prompt and one extending it (a second
// chat turn) resume from the prompt cache with windowed KV — the pinned
// local tail makes the hit usable — and get the cold run's tokens.
func TestWindowKVCacheHit(t *testing.T) {
	m := windowModel(t, 16, 6)
	const chunk = 32
	opts := engine.Options{MaxTotalTokens: 2048, MaxReqTotalLen: 600, ChunkedPrefillSize: chunk, BatchMaxTokens: 256}
	cold := opts
	cold.DisablePromptCache = true
	first := prompt(3, 201)
	turn := append(slices.Clone(first), prompt(4, 90)[1:]...)
	params := sampler.DefaultParams()
	params.MaxNewTokens, params.IgnoreEOS = 24, true
	reqs := []engine.Request{{ID: 1, Prompt: first, Params: params}, {ID: 2, Prompt: first, Params: params}, {ID: 3, Prompt: turn, Params: params}}
	e, err := engine.New(m, opts)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range reqs {
		before := e.Stats().CachedTokens
		if err := e.Add(r); err != nil {
			t.Fatal(err)
		}
		got := runAll(t, e)[r.ID].tokens
		hit := e.Stats().CachedTokens - before
		want, _ := runSchedule(t, m, cold, nil, [][]engine.Request{{r}})
		var wantTok []int32
		for _, w := range want[r.ID] {
			wantTok = append(wantTok, int32(w>>32))
		}
		if !slices.Equal(got, wantTok) {
			t.Fatalf("request %d: %v with the cache, %v cold", r.ID, got, wantTok)
		}
		if r.ID > 1 && hit < uint64(len(first))-chunk-1 {
			t.Errorf("request %d: %d prompt tokens from the cache, want >= %d", r.ID, hit, len(first)-chunk-1)
		}
		t.Logf("request %d: %d of %d prompt tokens from the cache", r.ID, hit, len(r.Prompt))
	}
	checkIdleKV(t, e)
}

// TestWindowKVBound: a prompt many windows long holds at most window - 1 +
// chunk local slots while it prefills with the cache off, plus its pinned
// prompt tail (< window + chunk) with the cache on, and the store's
// memory is that much smaller than the full one's.
func TestWindowKVBound(t *testing.T) {
	const window, chunk, promptLen = 32, 64, 2048
	for _, pattern := range []int{6, 2} {
		m := windowModel(t, window, pattern)
		for _, cache := range []bool{false, true} {
			opts := engine.Options{MaxTotalTokens: promptLen + 64, ChunkedPrefillSize: chunk, BatchMaxTokens: 512,
				DisablePromptCache: !cache}
			bound := window - 1 + chunk
			if cache {
				bound += window + chunk
			}
			params := sampler.DefaultParams()
			params.MaxNewTokens, params.IgnoreEOS = 48, true
			r := engine.Request{ID: 1, Prompt: prompt(9, promptLen), Params: params}
			fullOpts := opts
			fullOpts.FullWindowKV = true
			want, full := runSchedule(t, m, fullOpts, nil, [][]engine.Request{{r}})
			got, st := runSchedule(t, m, opts, nil, [][]engine.Request{{r}})
			what := fmt.Sprintf("pattern %d cache %v", pattern, cache)
			if !slices.Equal(got[1], want[1]) {
				t.Fatalf("%s: windowed KV changed the tokens", what)
			}
			if st.KVLocalPeak <= window || st.KVLocalPeak > bound {
				t.Errorf("%s: %d local slots at most, want (%d, %d]", what, st.KVLocalPeak, window, bound)
			}
			nLocal := 5
			if pattern == 2 {
				nLocal = 3
			}
			// The global part is the full store's (6 - nLocal)/6; the local part follows use.
			perSlot := full.KVBytes / int64(opts.MaxTotalTokens) / 6
			if wantMax := perSlot * int64((6-nLocal)*opts.MaxTotalTokens+nLocal*(st.KVLocalPeak*5/4+64)); st.KVBytes > wantMax {
				t.Errorf("%s: windowed store %d bytes, want <= %d", what, st.KVBytes, wantMax)
			}
			t.Logf("%s: %d-token prompt: KV %d bytes windowed (%d local slots at most), %d full", what, promptLen,
				st.KVBytes, st.KVLocalPeak, full.KVBytes)
		}
	}
}

// TestWindowKVTypes: the windowed store gives the full store's tokens with
// q8_0 and f32 K/V too (their one-query and batch attention paths).
func TestWindowKVTypes(t *testing.T) {
	path := filepath.Join(t.TempDir(), "gemma3.gguf")
	gen := model.GenOptions{Arch: "gemma3", Hidden: 128, Layers: 6, Heads: 4, KVHeads: 2, FFN: 256, Vocab: 512, Seed: 19, DType: "f16",
		SlidingWindow: 16, RopeTheta: 1e6, RopeLinear: 8}
	if err := model.GenerateGGUF(path, gen); err != nil {
		t.Fatal(err)
	}
	params := sampler.DefaultParams()
	params.MaxNewTokens, params.IgnoreEOS = 20, true
	r := engine.Request{ID: 1, Prompt: prompt(5, 300), Params: params}
	for _, kvType := range []string{"q8_0", "f32"} {
		m, err := model.Load(path, model.LoadOptions{NoTokenizer: true, KVType: kvType})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = m.Close() })
		opts := engine.Options{MaxTotalTokens: 512, ChunkedPrefillSize: 40, BatchMaxTokens: 256}
		full := opts
		full.FullWindowKV = true
		want, _ := runSchedule(t, m, full, nil, [][]engine.Request{{r}})
		got, st := runSchedule(t, m, opts, nil, [][]engine.Request{{r}})
		if !slices.Equal(got[1], want[1]) || st.KVLocalPeak == 0 {
			t.Fatalf("%s KV: windowed %v (peak %d local slots), full %v", kvType, got[1], st.KVLocalPeak, want[1])
		}
	}
}
