package model

import (
	"math"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"testing"
)

// runChunks computes prompt through kv in the given chunks (each [start,
// end) of positions; a chunk may start below the previous one's end, which
// recomputes those positions over the K/V already there), then one decode
// step of token next, and returns the logits after the prompt and after
// next.
func runChunks(t *testing.T, m *Model, prompt []int32, next int32, chunks [][2]int) (afterPrompt, afterNext []float32) {
	t.Helper()
	kv := m.NewKV(len(prompt) + 1)
	slots := make([]int32, len(prompt)+1)
	for i := range slots {
		slots[i] = int32(i)
	}
	logits := [][]float32{make([]float32, m.cfg.Vocab)}
	for _, c := range chunks {
		b := &Batch{Tokens: prompt[c[0]:c[1]], Seqs: []Seq{{Start: 0, Len: c[1] - c[0], Slots: slots[:c[1]], WantLogits: c[1] == len(prompt)}}}
		for p := c[0]; p < c[1]; p++ {
			b.Positions = append(b.Positions, int32(p))
		}
		if err := m.Forward(b, kv, logits); err != nil {
			t.Fatal(err)
		}
	}
	afterPrompt = slices.Clone(logits[0])
	p := int32(len(prompt))
	b := &Batch{Tokens: []int32{next}, Positions: []int32{p}, Seqs: []Seq{{Start: 0, Len: 1, Slots: slots, WantLogits: true}}}
	if err := m.Forward(b, kv, logits); err != nil {
		t.Fatal(err)
	}
	return afterPrompt, slices.Clone(logits[0])
}

func sameBits(a, b []float32) bool {
	for i := range a {
		if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
			return false
		}
	}
	return true
}

// TestChunkClassesRoundAlike pins what the engine's output invariance
// rests on (pkg/engine/replay.go): a token row's numbers depend on the
// chunk it is computed in only through RowClass. Reusing K/V computed in
// one chunk and recomputing the rest of that chunk as a shorter chunk that
// gives every row the same class gives bit-identical logits, also for the
// next decode step (so the K/V are identical too); other classes do not.
//
// stories260K's head size (8) takes the tiled attention path only where
// ggml's f32 vectors are 8 wide (AVX2, not AVX-512); builtin:tiny-random's
// (16) takes it on both, so the tiled class is covered everywhere.
//
// An iq4_xs file (llama.cpp's IQ panel gemm from 8 tokens on) has a fourth
// class, chunks of 8 or more tokens. There only the first half is checked:
// its activations are quantized to 8 bits before every product, which
// mostly absorbs a last-bit difference of a few positions, so chunks of
// different classes often give identical logits.
//
// A Q4_K_M file (q4_K matrices: llama.cpp's repacked gemm on a chunk's rows
// in fours, its gemv on the last n%4) has the row's place among the last
// n%4 in its class too; its activations are quantized to 8 bits as well,
// so it is checked like iq4_xs.
func TestChunkClassesRoundAlike(t *testing.T) {
	iq4 := filepath.Join(t.TempDir(), "iq4_xs.gguf")
	if err := GenerateGGUF(iq4, kquantModel("iq4_xs")); err != nil {
		t.Fatal(err)
	}
	q4k := filepath.Join(t.TempDir(), "q4_K_M.gguf")
	if err := GenerateGGUF(q4k, kquantModel("q4_K_M")); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		path, kv string
		sameOnly bool // check only that equal classes give equal bits
	}{
		{filepath.Join(modelsDir(t), "stories260K", "stories260K-f32.gguf"), "f16", false},
		{"builtin:tiny-random", "f16", false},
		{iq4, "f16", true},
		{q4k, "f16", true},
	} {
		t.Run(filepath.Base(tc.path)+" "+tc.kv, func(t *testing.T) {
			m, err := Load(tc.path, LoadOptions{NoTokenizer: true, KVType: tc.kv})
			if err != nil {
				t.Fatal(err)
			}
			defer m.Close()
			checkChunkClasses(t, m, tc.sameOnly)
		})
	}
}

func checkChunkClasses(t *testing.T, m *Model, sameOnly bool) {
	// Each position's class in a run: that of the last chunk computing it.
	classes := func(n int, chunks [][2]int) []int {
		cl := make([]int, n)
		for _, c := range chunks {
			for p := c[0]; p < c[1]; p++ {
				cl[p] = m.RowClass(c[1]-c[0], p-c[0])
			}
		}
		return cl
	}
	t.Logf("tiled attention path from 64 tokens: %v", m.useTiledFA(64))
	rng := rand.New(rand.NewPCG(21, 1))
	prompt := []int32{1}
	for len(prompt) < 100 {
		prompt = append(prompt, int32(3+rng.IntN(m.cfg.Vocab-3)))
	}
	tests := []struct {
		name       string
		prompt     int // length
		ref, other [][2]int
	}{
		{"100 vs 70 then the last 64", 100, [][2]int{{0, 100}}, [][2]int{{0, 70}, {36, 100}}},
		{"100 vs 90 then the last 64", 100, [][2]int{{0, 100}}, [][2]int{{0, 90}, {36, 100}}},
		{"40 vs 39 then the last 2", 40, [][2]int{{0, 40}}, [][2]int{{0, 39}, {38, 40}}},
		{"40 vs 25 then the last 20", 40, [][2]int{{0, 40}}, [][2]int{{0, 25}, {20, 40}}},
		{"100 vs 70 then 30 (tiled vs batch where tiled runs)", 100, [][2]int{{0, 100}}, [][2]int{{0, 70}, {70, 100}}},
		{"40 vs 39 then one token (batch vs vector kernels)", 40, [][2]int{{0, 40}}, [][2]int{{0, 39}, {39, 40}}},
		{"100 vs 50 twice", 100, [][2]int{{0, 100}}, [][2]int{{0, 50}, {50, 100}}},
		{"40 vs 34 then the last 6 (panel vs batch with iq4_xs)", 40, [][2]int{{0, 40}}, [][2]int{{0, 34}, {34, 40}}},
		{"42 vs 30 then the last 14 (q4_K: the same 2 gemv rows)", 42, [][2]int{{0, 42}}, [][2]int{{0, 30}, {28, 42}}},
		{"42 vs 30 then the last 13 (q4_K: 1 gemv row)", 42, [][2]int{{0, 42}}, [][2]int{{0, 30}, {29, 42}}},
		{"42 vs 30 then the last 16 (q4_K: no gemv row)", 42, [][2]int{{0, 42}}, [][2]int{{0, 30}, {26, 42}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := prompt[:tc.prompt]
			a1, a2 := runChunks(t, m, p, 300, tc.ref)
			b1, b2 := runChunks(t, m, p, 300, tc.other)
			same := slices.Equal(classes(tc.prompt, tc.ref), classes(tc.prompt, tc.other))
			got := sameBits(a1, b1) && sameBits(a2, b2)
			if got != same && !(sameOnly && !same) {
				t.Fatalf("bit-identical logits: %v; every position computed in the same class: %v", got, same)
			}
			t.Logf("bit-identical logits: %v; same classes: %v", got, same)
		})
	}
}
