package tokenizer

import (
	"path/filepath"
	"testing"
)

// benchCorpus is the reference corpus, total bytes included.
func benchCorpus(b *testing.B) ([]string, int) {
	var corpus struct {
		Texts []string `json:"texts"`
	}
	readJSON(b, filepath.Join(sharedDir(b), "fixtures", "tokenizers", "corpus.json"), &corpus)
	n := 0
	for _, s := range corpus.Texts {
		n += len(s)
	}
	return corpus.Texts, n
}

// BenchmarkEncode encodes the whole corpus per iteration; MB/s is input text.
func BenchmarkEncode(b *testing.B) {
	texts, size := benchCorpus(b)
	for _, name := range []string{"llama3", "qwen3", "mistral"} {
		tk := loadFixture(b, name)
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(size))
			b.ReportAllocs()
			for b.Loop() {
				for _, s := range texts {
					tk.Encode(s, false)
				}
			}
		})
		b.Run(name+"-parallel", func(b *testing.B) {
			b.SetBytes(int64(size))
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					for _, s := range texts {
						tk.Encode(s, false)
					}
				}
			})
		})
	}
}

// BenchmarkDecodeIncremental streams the corpus ids token by token.
func BenchmarkDecodeIncremental(b *testing.B) {
	texts, _ := benchCorpus(b)
	tk := loadFixture(b, "llama3")
	var all []int32
	for _, s := range texts[:200] {
		all = append(all, tk.Encode(s, false)...)
	}
	b.ReportAllocs()
	for b.Loop() {
		st := DecodeState{}
		for i := range all {
			tk.DecodeIncremental(all[:i+1], &st, false)
		}
	}
	b.ReportMetric(float64(len(all))*float64(b.N)/b.Elapsed().Seconds(), "tokens/s")
}
