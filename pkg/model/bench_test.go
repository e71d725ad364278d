package model

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
)

// benchModel returns the path of a benchmark model: the real stories260K
// (f32) or a generated ~125M-parameter q8_0 llama (built once per run in a
// temporary directory).
func benchModel(b *testing.B, name string) string {
	if name == "stories260K" {
		return filepath.Join(modelsDir(b), "stories260K", "stories260K-f32.gguf")
	}
	genOnce.Do(func() {
		dir, err := mkTemp()
		if err != nil {
			genErr = err
			return
		}
		genPath = filepath.Join(dir, "gen125m-q8_0.gguf")
		genErr = GenerateGGUF(genPath, GenOptions{Arch: "llama", Hidden: 768, Layers: 12, Heads: 12, KVHeads: 4,
			FFN: 2048, Vocab: 32000, DType: "q8_0", Seed: 1})
	})
	if genErr != nil {
		b.Fatal(genErr)
	}
	return genPath
}

var (
	genOnce sync.Once
	genPath string
	genErr  error
)

func loadBench(b *testing.B, path string) *Model {
	m, err := Load(path, LoadOptions{NoTokenizer: true})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { m.Close() })
	return m
}

// BenchmarkPrefill measures prompt processing: one 128-token prompt per
// iteration, reported as tokens/s.
func BenchmarkPrefill(b *testing.B) {
	for _, name := range []string{"stories260K", "gen125M-q8_0"} {
		b.Run(name, func(b *testing.B) {
			m := loadBench(b, benchModel(b, name))
			const P = 128
			kv := m.NewKV(P)
			toks, pos, slots := make([]int32, P), make([]int32, P), make([]int32, P)
			for i := range toks {
				toks[i] = int32(3 + i*7%(m.Config().Vocab-3))
				pos[i], slots[i] = int32(i), int32(i)
			}
			out := [][]float32{make([]float32, m.Config().Vocab)}
			batch := &Batch{Tokens: toks, Positions: pos, Seqs: []Seq{{Start: 0, Len: P, Slots: slots, WantLogits: true}}}
			for b.Loop() {
				if err := m.Forward(batch, kv, out); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(P*b.N)/b.Elapsed().Seconds(), "tok/s")
		})
	}
}

// BenchmarkDecode measures generation: S sequences with a 32-token
// context each advance one token per step; reported as aggregate tokens/s.
func BenchmarkDecode(b *testing.B) {
	for _, name := range []string{"stories260K", "gen125M-q8_0"} {
		for _, S := range []int{1, 4, 16} {
			b.Run(fmt.Sprintf("%s/seqs%d", name, S), func(b *testing.B) {
				m := loadBench(b, benchModel(b, name))
				const ctx = 32
				kv := m.NewKV(S * (ctx + 1))
				out := make([][]float32, S)
				// Prefill each sequence's context once.
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
					if err := m.Forward(&Batch{Tokens: toks, Positions: pos, Seqs: []Seq{{Start: 0, Len: ctx, Slots: slots[s][:ctx], WantLogits: false}}}, kv, out[:1]); err != nil {
						b.Fatal(err)
					}
				}
				// Each step rewrites position ctx, so the context stays fixed.
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
			})
		}
	}
}

// mkTemp makes the directory for generated benchmark models, shared by
// all benchmarks of one run and removed by TestMain.
func mkTemp() (string, error) {
	d, err := os.MkdirTemp("", "lightllm-bench")
	genDir = d
	return d, err
}

var genDir string

func TestMain(m *testing.M) {
	code := m.Run()
	if genDir != "" {
		os.RemoveAll(genDir)
	}
	os.Exit(code)
}
