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

// BenchmarkEncode encodes the whole corpus per iteration; MB/s is input
// text. "-nocache" runs without the word cache (every word merged afresh),
// "-parallel" shares one tokenizer between GOMAXPROCS goroutines.
func BenchmarkEncode(b *testing.B) {
	texts, size := benchCorpus(b)
	for _, name := range []string{"llama3", "qwen3", "mistral"} {
		tk := loadFixture(b, name)
		tokens := 0
		for _, s := range texts {
			tokens += len(tk.Encode(s, false))
		}
		nocache, err := LoadDir(filepath.Join(sharedDir(b), "fixtures", "tokenizers", name))
		if err != nil {
			b.Fatal(err)
		}
		nocache.cache = nil
		for _, v := range []struct {
			suffix string
			tk     *Tokenizer
		}{{"", tk}, {"-nocache", nocache}} {
			b.Run(name+v.suffix, func(b *testing.B) {
				b.SetBytes(int64(size))
				b.ReportAllocs()
				for b.Loop() {
					for _, s := range texts {
						v.tk.Encode(s, false)
					}
				}
				b.ReportMetric(float64(tokens)*float64(b.N)/b.Elapsed().Seconds(), "tokens/s")
			})
		}
		b.Run(name+"-parallel", func(b *testing.B) {
			b.SetBytes(int64(size))
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					for _, s := range texts {
						tk.Encode(s, false)
					}
				}
			})
			b.ReportMetric(float64(tokens)*float64(b.N)/b.Elapsed().Seconds(), "tokens/s")
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
