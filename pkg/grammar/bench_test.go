package grammar

import (
	"runtime"
	"testing"

	"github.com/lightllm-go/lightllm/pkg/cputime"
)

func BenchmarkCompileSmall(b *testing.B) {
	schema := []byte(`{"type":"object","properties":{"name":{"type":"string"},"age":{"type":"integer","minimum":0,"maximum":150},"tags":{"type":"array","items":{"type":"string"}}},"required":["name","age"]}`)
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var leaves leafDFAs
	c0 := cputime.Thread()
	for i := 0; i < b.N; i++ {
		if _, err := CompileJSONSchema(schema, Options{leaves: &leaves}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64((cputime.Thread()-c0).Nanoseconds())/float64(b.N), "cpu-ns/op")
}

// BenchmarkCompileCorpus compiles every corpus schema through one Cache's
// shared automata, as a server does.
func BenchmarkCompileCorpus(b *testing.B) {
	corpus, err := LoadBenchCorpus("testdata/schemas")
	if err != nil {
		b.Fatal(err)
	}
	var leaves leafDFAs
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for _, sc := range corpus {
			if _, err := CompileJSONSchema(sc.Schema, Options{leaves: &leaves}); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// BenchmarkCorpusRandom runs the bench-grammar workload (compile, examples,
// random generations) with the Llama-3 vocabulary, for profiles.
func BenchmarkCorpusRandom(b *testing.B) {
	v := loadLlama3(b)
	corpus, err := LoadBenchCorpus("testdata/schemas")
	if err != nil {
		b.Fatal(err)
	}
	for i := 0; i < b.N; i++ {
		if _, err := Bench(BenchConfig{Vocab: v, Corpus: corpus, RandomRuns: 2, MaxTokens: 1024, Seed: uint64(i)}); err != nil {
			b.Fatal(err)
		}
	}
}
