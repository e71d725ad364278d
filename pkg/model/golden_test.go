package model

import (
	"encoding/json"
	"fmt"
	"github.com/lightllm-go/lightllm/pkg/testmodels"
	"os"
	"path/filepath"
	"testing"
)

// modelsDir finds the shared test models (../shared/models from the
// repository root, or LIGHTLLM_TEST_MODELS) or skips the test.
func modelsDir(t testing.TB) string {
	t.Helper()
	d := os.Getenv("LIGHTLLM_TEST_MODELS")
	if d == "" {
		d = "../../../shared/models"
	}
	if _, err := os.Stat(filepath.Join(d, "stories260K")); err != nil {
		testmodels.Missing(t, fmt.Sprintf("shared test models not found at %s (set LIGHTLLM_TEST_MODELS): %v", d, err), nil)
	}
	return d
}

func argmax(v []float32) int32 {
	best := 0
	for i, x := range v {
		if x > v[best] {
			best = i
		}
	}
	return int32(best)
}

// greedy generates n tokens after prompt, one decode step at a time.
func greedy(t testing.TB, m *Model, prompt []int32, n int) []int32 {
	t.Helper()
	kv := m.NewKV(len(prompt) + n)
	slots := make([]int32, len(prompt)+n)
	for i := range slots {
		slots[i] = int32(len(slots) - 1 - i) // any order: the slot list is the mapping
	}
	pos := make([]int32, len(prompt))
	for i := range pos {
		pos[i] = int32(i)
	}
	logits := [][]float32{make([]float32, m.Config().Vocab)}
	b := &Batch{Tokens: prompt, Positions: pos, Seqs: []Seq{{Start: 0, Len: len(prompt), Slots: slots[:len(prompt)], WantLogits: true}}}
	if err := m.Forward(b, kv, logits); err != nil {
		t.Fatal(err)
	}
	var out []int32
	for len(out) < n {
		tok := argmax(logits[0])
		out = append(out, tok)
		p := int32(len(prompt) + len(out) - 1)
		b := &Batch{Tokens: []int32{tok}, Positions: []int32{p}, Seqs: []Seq{{Start: 0, Len: 1, Slots: slots[:p+1], WantLogits: true}}}
		if len(out) < n {
			if err := m.Forward(b, kv, logits); err != nil {
				t.Fatal(err)
			}
		}
	}
	return out
}

type golden struct {
	PromptTokens    []int32 `json:"prompt_tokens"`
	GeneratedTokens []int32 `json:"generated_tokens"`
}

func readGolden(t testing.TB, dir string) golden {
	b, err := os.ReadFile(filepath.Join(dir, "stories260K", "golden_greedy_llamacpp.json"))
	if err != nil {
		t.Fatal(err)
	}
	var g golden
	if err := json.Unmarshal(b, &g); err != nil {
		t.Fatal(err)
	}
	return g
}

// TestGoldenStories260K: greedy generation from BOS must reproduce
// llama.cpp's 511 tokens exactly from every form of the model.
func TestGoldenStories260K(t *testing.T) {
	dir := modelsDir(t)
	g := readGolden(t, dir)
	if len(g.GeneratedTokens) != 511 {
		t.Fatalf("golden has %d tokens", len(g.GeneratedTokens))
	}
	for _, c := range []struct {
		name, path, kv string
		mmap           bool // compute from the file mapping, not the huge-page copies
	}{
		{"gguf-v3", "stories260K/stories260K-f32.gguf", "", false},
		{"gguf-v3-mmap", "stories260K/stories260K-f32.gguf", "", true},
		{"gguf-v1", "stories260K/tinyllamas-stories-260k-f32.ggufv1.gguf", "", false},
		{"hf", "stories260K/hf", "", false},
		{"hf-mmap", "stories260K/hf", "", true},
		{"gguf-v3-kvf32", "stories260K/stories260K-f32.gguf", "f32", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			m, err := Load(filepath.Join(dir, c.path), LoadOptions{Threads: 2, KVType: c.kv, MmapWeights: c.mmap})
			if err != nil {
				t.Fatal(err)
			}
			defer m.Close()
			got := greedy(t, m, g.PromptTokens, len(g.GeneratedTokens))
			for i := range got {
				if got[i] != g.GeneratedTokens[i] {
					t.Fatalf("token %d: got %d want %d (first %d match)", i, got[i], g.GeneratedTokens[i], i)
				}
			}
		})
	}
}
