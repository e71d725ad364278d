package model

import (
	"math/rand/v2"
	"path/filepath"
	"testing"
)

// TestRowBlocksSameBits: computing a layer's per-row parts in pieces of
// rowBlock rows (Forward's cache blocking of long chunks) gives the same
// logits and K/V as one piece, for every weight type whose kernels pick a
// rounding per row (f32 and f16 tinyBLAS/vec_dot, q8_0 tiles, q4_K's gemm
// in fours, iq4_xs's panel gemm) and for sliding-window and q/k-norm
// families. Three sequences of 61, 34 and 29 new tokens share the batch, so
// pieces cut through sequences and through groups of four.
func TestRowBlocksSameBits(t *testing.T) {
	dir := t.TempDir()
	gen := func(name string, o GenOptions) string {
		p := filepath.Join(dir, name+".gguf")
		if err := GenerateGGUF(p, o); err != nil {
			t.Fatal(err)
		}
		return p
	}
	gemma := GenOptions{Arch: "gemma3", Hidden: 256, Layers: 4, Heads: 4, KVHeads: 2, FFN: 512, Vocab: 512, DType: "f16", Seed: 3,
		SlidingWindow: 32, SWAPattern: 2}
	for _, tc := range []struct{ name, path string }{
		{"stories260K f32", filepath.Join(modelsDir(t), "stories260K", "stories260K-f32.gguf")},
		{"tiny-random", "builtin:tiny-random"},
		{"q8_0", gen("q8_0", kquantModel("q8_0"))},
		{"q4_K_M", gen("q4_K_M", kquantModel("q4_K_M"))},
		{"iq4_xs", gen("iq4_xs", kquantModel("iq4_xs"))},
		{"gemma3 f16", gen("gemma3", gemma)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := Load(tc.path, LoadOptions{NoTokenizer: true, KVType: "f16"})
			if err != nil {
				t.Fatal(err)
			}
			defer m.Close()
			run := func(block int) [][]float32 {
				m.rowBlock = block
				return rowBlockRun(t, m)
			}
			want := run(0) // 0: one piece
			for _, block := range []int{7, 16, 64} {
				got := run(block)
				for i := range want {
					if !sameBits(got[i], want[i]) {
						t.Fatalf("pieces of %d rows: logits %d differ from one piece", block, i)
					}
				}
			}
			m.rowBlock = defaultRowBlock
		})
	}
}

// rowBlockRun prefills three sequences in one batch, then decodes one
// token of each, and returns every logit row of both steps.
func rowBlockRun(t *testing.T, m *Model) [][]float32 {
	t.Helper()
	lens := []int{61, 34, 29}
	rng := rand.New(rand.NewPCG(5, 6))
	kv := m.NewKV(256)
	b := &Batch{}
	slots := make([][]int32, len(lens))
	next := int32(0)
	for i, n := range lens {
		b.Seqs = append(b.Seqs, Seq{Start: len(b.Tokens), Len: n, WantLogits: true})
		for p := 0; p < n+1; p++ {
			slots[i] = append(slots[i], next)
			next++
		}
		for p := 0; p < n; p++ {
			b.Tokens = append(b.Tokens, int32(3+rng.IntN(m.cfg.Vocab-3)))
			b.Positions = append(b.Positions, int32(p))
		}
		b.Seqs[i].Slots = slots[i][:n]
	}
	var out [][]float32
	logits := make([][]float32, len(lens))
	for i := range logits {
		logits[i] = make([]float32, m.cfg.Vocab)
	}
	if err := m.Forward(b, kv, logits); err != nil {
		t.Fatal(err)
	}
	for _, l := range logits {
		out = append(out, append([]float32(nil), l...))
	}
	d := &Batch{}
	for i, n := range lens {
		d.Seqs = append(d.Seqs, Seq{Start: i, Len: 1, Slots: slots[i], WantLogits: true})
		d.Tokens = append(d.Tokens, int32(7+i))
		d.Positions = append(d.Positions, int32(n))
	}
	if err := m.Forward(d, kv, logits); err != nil {
		t.Fatal(err)
	}
	for _, l := range logits {
		out = append(out, append([]float32(nil), l...))
	}
	return out
}
