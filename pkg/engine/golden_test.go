package engine_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/lightllm-go/lightllm/pkg/engine"
	"github.com/lightllm-go/lightllm/pkg/model"
	"github.com/lightllm-go/lightllm/pkg/sampler"
	"github.com/lightllm-go/lightllm/pkg/testmodels"
)

// storiesDir finds ../shared/models/stories260K (from the repository root)
// or $LIGHTLLM_TEST_MODELS/stories260K, or skips.
func storiesDir(t testing.TB) string {
	t.Helper()
	d := os.Getenv("LIGHTLLM_TEST_MODELS")
	if d == "" {
		d = filepath.Join("..", "..", "..", "shared", "models")
	}
	d = filepath.Join(d, "stories260K")
	if _, err := os.Stat(filepath.Join(d, "golden_greedy_llamacpp.json")); err != nil {
		testmodels.Missing(t, fmt.Sprintf("stories260K test model not found (set LIGHTLLM_TEST_MODELS): %v", err), nil)
	}
	return d
}

func goldenTokens(t testing.TB, dir string) []int32 {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "golden_greedy_llamacpp.json"))
	if err != nil {
		t.Fatal(err)
	}
	var g struct {
		Prompt    []int32 `json:"prompt_tokens"`
		Generated []int32 `json:"generated_tokens"`
	}
	if err := json.Unmarshal(b, &g); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(g.Prompt, []int32{1}) || len(g.Generated) != 511 {
		t.Fatalf("unexpected golden file: prompt %v, %d tokens", g.Prompt, len(g.Generated))
	}
	return g.Generated
}

func loadModel(t testing.TB, path string) *model.Model {
	t.Helper()
	m, err := model.Load(path, model.LoadOptions{NoTokenizer: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Close() })
	return m
}

// TestGoldenStories260K: greedy from BOS reproduces llama.cpp's 511 tokens
// from each file format: alone, in a batch with other requests (sampled,
// greedy, arriving mid-way), and under a KV pool so small that requests
// are evicted and recomputed.
func TestGoldenStories260K(t *testing.T) {
	dir := storiesDir(t)
	want := goldenTokens(t, dir)
	for _, name := range []string{"stories260K-f32.gguf", "tinyllamas-stories-260k-f32.ggufv1.gguf", "hf"} {
		t.Run(name, func(t *testing.T) {
			m := loadModel(t, filepath.Join(dir, name))
			check := func(what string, got *result) {
				t.Helper()
				if got == nil || !slices.Equal(got.tokens, want) || got.reason != engine.FinishLength {
					n := 0
					for got != nil && n < len(got.tokens) && n < len(want) && got.tokens[n] == want[n] {
						n++
					}
					t.Fatalf("%s: first mismatch at token %d of 511", what, n)
				}
			}
			golden := greedy(511)

			e, err := engine.New(m, engine.Options{MaxTotalTokens: 512})
			if err != nil {
				t.Fatal(err)
			}
			if err := e.Add(engine.Request{ID: 1, Prompt: []int32{1}, Params: golden}); err != nil {
				t.Fatal(err)
			}
			check("alone", runAll(t, e)[1])

			// In a batch with others that arrive before and after it, with
			// chunked prefill of the long prompts.
			e, err = engine.New(m, engine.Options{MaxTotalTokens: 4096, ChunkedPrefillSize: 64})
			if err != nil {
				t.Fatal(err)
			}
			once := []int32{1, 403, 407, 261, 378}
			add := func(id uint64, p []int32, params sampler.Params) {
				t.Helper()
				if err := e.Add(engine.Request{ID: id, Prompt: p, Params: params}); err != nil {
					t.Fatal(err)
				}
			}
			add(10, once, seeded(100, 5))
			add(11, prompt(11, 150), greedy(50))
			for range 3 {
				if _, err := e.Step(); err != nil {
					t.Fatal(err)
				}
			}
			add(1, []int32{1}, golden)
			add(12, once, greedy(150))
			add(13, prompt(13, 300), seeded(60, 9))
			res := runAll(t, e)
			check("batched", res[1])

			// A pool of 700 slots for four requests of up to 512 tokens: the
			// newest are paused and recomputed while the oldest run on.
			e, err = engine.New(m, engine.Options{MaxTotalTokens: 700, ChunkedPrefillSize: 128})
			if err != nil {
				t.Fatal(err)
			}
			add(20, once, seeded(200, 3))
			add(1, []int32{1}, golden)
			add(2, []int32{1}, golden)
			add(21, prompt(21, 100), greedy(200))
			res = runAll(t, e)
			check("evicted (1)", res[1])
			check("evicted (2)", res[2])
			if st := e.Stats(); st.Evictions == 0 {
				t.Fatalf("expected evictions with a 700-slot pool: %+v", st)
			}
			t.Logf("tiny pool: %+v", e.Stats())
		})
	}
}
