package engine_test

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/lightllm-go/lightllm/pkg/engine"
	"github.com/lightllm-go/lightllm/pkg/model"
	"github.com/lightllm-go/lightllm/pkg/sampler"
)

// TestGptOssWindowKVLlamaCpp: the gen-model gpt-oss of pkg/model's
// llama.cpp fixture (TestGptOssLlamaCpp, same options), served by the
// engine with windowed KV — its two sliding-window layers (window 32) keep
// K/V for the window only — gives llama.cpp's greedy tokens on every
// fixture prompt that has them (2-456 tokens, 13 longer than four
// windows), prefilled in 64-token chunks (llama.cpp ran 512: the tokens
// do not depend on chunk boundaries), while those layers hold at most
// window - 1 + chunk slots whatever the prompt's length: their part of the
// store is that many slots, not the pool's — at a 4096-token prompt too,
// whose tokens are the full store's.
func TestGptOssWindowKVLlamaCpp(t *testing.T) {
	const window, chunk, maxTotal = 32, 64, 1024
	path := filepath.Join(t.TempDir(), "gpt-oss.gguf")
	if err := model.GenerateGGUF(path, model.GenOptions{Arch: "gpt-oss", Hidden: 256, Layers: 4, Heads: 4, KVHeads: 2, FFN: 128,
		Vocab: 512, Seed: 53, DType: "f16", Experts: 16, ExpertsUsed: 4, SlidingWindow: window, RopeTheta: 150000,
		YarnFactor: 32, YarnOrigCtx: 4096, MaxPos: 131072}); err != nil {
		t.Fatal(err)
	}
	m := loadModel(t, path)
	if m.LocalWindow() != window {
		t.Fatalf("local window %d, want %d", m.LocalWindow(), window)
	}
	f, err := os.Open(filepath.Join("..", "model", "testdata", "llamacpp_gptoss_f16.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	type run struct {
		Prompt []int32 `json:"prompt_tokens"`
		Gen    []int32 `json:"generated_tokens"`
	}
	var runs []run
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var r run
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatal(err)
		}
		// golden.mjs's 512-token context: later tokens follow a context shift.
		r.Gen = r.Gen[:min(len(r.Gen), max(0, 512-len(r.Prompt)))]
		if len(r.Gen) > 0 {
			runs = append(runs, r)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	long := 0
	for i, r := range runs {
		params := sampler.DefaultParams()
		params.MaxNewTokens, params.IgnoreEOS = len(r.Gen), true
		req := engine.Request{ID: uint64(i + 1), Prompt: r.Prompt, Params: params}
		opts := engine.Options{MaxTotalTokens: maxTotal, MaxReqTotalLen: maxTotal, ChunkedPrefillSize: chunk, BatchMaxTokens: chunk,
			DisablePromptCache: true}
		got, st := runSchedule(t, m, opts, nil, [][]engine.Request{{req}})
		var toks []int32
		for _, e := range got[req.ID] {
			toks = append(toks, int32(e>>32))
		}
		if !equalTokens(toks, r.Gen) {
			t.Errorf("prompt of %d tokens: windowed KV gives %v, llama.cpp %v", len(r.Prompt), toks, r.Gen)
		}
		if st.KVLocalPeak == 0 || st.KVLocalPeak > window-1+chunk {
			t.Errorf("prompt of %d tokens: %d local slots at most, want (0, %d]", len(r.Prompt), st.KVLocalPeak, window-1+chunk)
		}
		if len(r.Prompt) > 4*window {
			long++
			full := opts
			full.FullWindowKV = true
			_, fst := runSchedule(t, m, full, nil, [][]engine.Request{{req}})
			// Two of the four layers are global (maxTotal slots each); the
			// two local ones hold what the request's windows needed.
			perSlot := fst.KVBytes / (4 * maxTotal) // one layer's K and V of one slot
			if wantMax := perSlot * int64(2*maxTotal+2*(st.KVLocalPeak*5/4+64)); st.KVBytes > wantMax {
				t.Errorf("prompt of %d tokens: windowed store %d bytes, want <= %d (full %d)", len(r.Prompt), st.KVBytes, wantMax, fst.KVBytes)
			}
			t.Logf("prompt of %d tokens + %d generated: KV %d bytes windowed (%d local slots at most), %d full",
				len(r.Prompt), len(r.Gen), st.KVBytes, st.KVLocalPeak, fst.KVBytes)
		}
	}
	if len(runs) < 20 || long < 10 {
		t.Fatalf("%d runs with tokens, %d longer than four windows; want >= 20 and >= 10", len(runs), long)
	}
	// A prompt of 128 windows: the same tokens as with every position's
	// local K/V kept, the local layers still at window - 1 + chunk slots.
	const longLen = 4096
	params := sampler.DefaultParams()
	params.MaxNewTokens, params.IgnoreEOS = 32, true
	req := engine.Request{ID: 1, Prompt: prompt(11, longLen), Params: params}
	opts := engine.Options{MaxTotalTokens: longLen + 64, MaxReqTotalLen: longLen + 64, ChunkedPrefillSize: chunk, BatchMaxTokens: chunk,
		DisablePromptCache: true}
	got, st := runSchedule(t, m, opts, nil, [][]engine.Request{{req}})
	full := opts
	full.FullWindowKV = true
	want, fst := runSchedule(t, m, full, nil, [][]engine.Request{{req}})
	if !slices.Equal(got[1], want[1]) || st.KVLocalPeak == 0 || st.KVLocalPeak > window-1+chunk {
		t.Fatalf("%d-token prompt: windowed KV %v (%d local slots at most), full %v", longLen, got[1], st.KVLocalPeak, want[1])
	}
	perSlot := fst.KVBytes / (4 * int64(opts.MaxTotalTokens))
	if wantMax := perSlot * int64(2*opts.MaxTotalTokens+2*(st.KVLocalPeak*5/4+64)); st.KVBytes > wantMax {
		t.Errorf("%d-token prompt: windowed store %d bytes, want <= %d (full %d)", longLen, st.KVBytes, wantMax, fst.KVBytes)
	}
	t.Logf("%d-token prompt + 32 generated: KV %d bytes windowed (%d local slots at most), %d full", longLen, st.KVBytes, st.KVLocalPeak, fst.KVBytes)
}
