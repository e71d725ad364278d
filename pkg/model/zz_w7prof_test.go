package model

import (
	"os"
	"testing"
)

// Temporary profiling helper (issue 7); removed before hand-off.
func BenchmarkW7Decode(b *testing.B) {
	p := os.Getenv("W7_MODEL")
	if p == "" {
		b.Skip("W7_MODEL unset")
	}
	m, err := Load(p, LoadOptions{Threads: 1, NoTokenizer: true})
	if err != nil {
		b.Fatal(err)
	}
	defer m.Close()
	S := 1
	if os.Getenv("W7_S") == "16" {
		S = 16
	}
	const ctx = 16
	kv := m.NewKV(S * (ctx + 1))
	out := make([][]float32, S)
	slots := make([][]int32, S)
	for s := 0; s < S; s++ {
		out[s] = make([]float32, m.Config().Vocab)
		toks, pos := make([]int32, ctx), make([]int32, ctx)
		for i := 0; i <= ctx; i++ {
			slots[s] = append(slots[s], int32(s*(ctx+1)+i))
		}
		for i := range toks {
			toks[i], pos[i] = int32(3+(s*31+i*7)%(m.Config().Vocab-3)), int32(i)
		}
		if err := m.Forward(&Batch{Tokens: toks, Positions: pos, Seqs: []Seq{{0, ctx, slots[s][:ctx], false}}}, kv, out[:1]); err != nil {
			b.Fatal(err)
		}
	}
	batch := &Batch{Tokens: make([]int32, S), Positions: make([]int32, S)}
	for s := 0; s < S; s++ {
		batch.Tokens[s], batch.Positions[s] = int32(5+s), ctx
		batch.Seqs = append(batch.Seqs, Seq{Start: s, Len: 1, Slots: slots[s], WantLogits: true})
	}
	for b.Loop() {
		if err := m.Forward(batch, kv, out); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(S*b.N)/b.Elapsed().Seconds(), "tok/s")
}

func BenchmarkW7Prefill(b *testing.B) {
	p := os.Getenv("W7_MODEL")
	if p == "" {
		b.Skip("W7_MODEL unset")
	}
	m, err := Load(p, LoadOptions{Threads: 1, NoTokenizer: true})
	if err != nil {
		b.Fatal(err)
	}
	defer m.Close()
	const P = 64
	kv := m.NewKV(P)
	toks, pos, slots := make([]int32, P), make([]int32, P), make([]int32, P)
	for i := range toks {
		toks[i] = int32(3 + i*7%(m.Config().Vocab-3))
		pos[i], slots[i] = int32(i), int32(i)
	}
	out := [][]float32{make([]float32, m.Config().Vocab)}
	batch := &Batch{Tokens: toks, Positions: pos, Seqs: []Seq{{0, P, slots, true}}}
	for b.Loop() {
		if err := m.Forward(batch, kv, out); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(P*b.N)/b.Elapsed().Seconds(), "tok/s")
}
