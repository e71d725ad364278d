package engine

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/lightllm-go/lightllm/pkg/model"
	"github.com/lightllm-go/lightllm/pkg/sampler"
)

// The ids node prints for bench.mjs's prompt walk (vocabularies of 512 and
// 32000 tokens): they pin the float64 rounding JavaScript does.
func TestBenchPromptMatchesBenchMJS(t *testing.T) {
	cases := map[int][]int32{
		512:   {33, 63, 272, 16, 443, 95, 49, 314, 449, 326, 40, 208, 282, 480, 39, 356, 334, 452, 231, 99, 267, 111, 271, 100},
		32000: {11733, 17692, 13776, 2224, 18345, 25975, 11686, 5603, 18297, 8861, 22542, 17918, 3238, 2781, 7643, 29682, 11822, 8275, 26089, 2958, 17429, 11708, 1538, 22779},
	}
	for vocab, want := range cases {
		if got := benchPrompt(len(want), vocab); !slices.Equal(got, want) {
			t.Errorf("vocab %d: %v, want %v", vocab, got, want)
		}
	}
}

func TestDecodePrompts(t *testing.T) {
	for _, c := range []struct {
		s, n     int
		distinct bool
	}{{1, 16, false}, {4, 16, false}, {1, 16, true}, {5, 16, true}, {3, 7, true}} {
		ps := decodePrompts(c.s, c.n, 512, c.distinct)
		if len(ps) != c.s {
			t.Fatalf("%+v: %d prompts", c, len(ps))
		}
		first := benchPrompt(c.n, 512) // bench.mjs's prompt
		seen := map[string]bool{}
		for i, p := range ps {
			if len(p) != c.n {
				t.Errorf("%+v: prompt %d has %d tokens", c, i, len(p))
			}
			seen[fmt.Sprint(p)] = true
		}
		if !slices.Equal(ps[0], first) {
			t.Errorf("%+v: first prompt %v, want bench.mjs's %v", c, ps[0], first)
		}
		if want := map[bool]int{false: 1, true: c.s}[c.distinct]; len(seen) != want {
			t.Errorf("%+v: %d different prompts, want %d", c, len(seen), want)
		}
	}
}

// nullModel is a test double whose Forward does nothing but write constant
// logits: it isolates the engine's own cost per step.
type nullModel struct{ vocab int }

func (n nullModel) Config() ModelConfig {
	return model.Config{Vocab: n.vocab, MaxPos: 1 << 20, EOS: []int32{2}}
}
func (n nullModel) NewKV(int) *KV { return nil }
func (n nullModel) Forward(b *Batch, _ *KV, logits [][]float32) error {
	for i, s := range b.Seqs {
		if s.WantLogits {
			logits[i][int(b.Tokens[s.Start+s.Len-1])%n.vocab] = 1
		}
	}
	return nil
}

func TestBenchReportsEveryRate(t *testing.T) {
	res, err := Bench(context.Background(), nullModel{vocab: 64}, BenchOptions{PromptTokens: 40, GenTokens: 8, Sequences: []int{1, 3}})
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"prefill_tok_s", "decode_tok_s_x1", "decode_tok_s_x3", "overhead_pct_x1", "overhead_pct_x3"} {
		if v, ok := res[k]; !ok || !(v > 0) {
			t.Errorf("%s = %v (present %v)", k, v, ok)
		}
	}
	res, err = Bench(context.Background(), nullModel{vocab: 64}, BenchOptions{PromptTokens: 40, GenTokens: 8, Sequences: []int{3}, DistinctPrompts: true})
	if err != nil {
		t.Fatal(err)
	}
	if v := res["decode_only_tok_s_x3"]; !(v > 0) {
		t.Errorf("distinct prompts: decode_only_tok_s_x3 = %v", v)
	}
	res, err = Bench(context.Background(), nullModel{vocab: 64}, BenchOptions{PromptTokens: 4, GenTokens: 8, Sequences: []int{2}, Context: 200, Churn: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"decode_ctx_tok_s_x1", "decode_ctx_tok_s_x2", "churned"} {
		if v, ok := res[k]; !ok || !(v > 0) {
			t.Errorf("churned long context: %s = %v (present %v)", k, v, ok)
		}
	}
	for _, bad := range []BenchOptions{{PromptTokens: 0, GenTokens: 1, Sequences: []int{1}}, {PromptTokens: 1, GenTokens: 1}, {PromptTokens: 1, GenTokens: 1, Sequences: []int{0}},
		{PromptTokens: 1, GenTokens: 1, Sequences: []int{1}, Churn: true}, {PromptTokens: 1, GenTokens: 1, Sequences: []int{1}, Repeat: -1}} {
		if _, err := Bench(context.Background(), nullModel{vocab: 64}, bad); err == nil {
			t.Errorf("%+v: want error", bad)
		}
	}
}

// countingModel is nullModel counting the tokens it is given.
type countingModel struct {
	nullModel
	tokens *int
}

func (c countingModel) Forward(b *Batch, kv *KV, logits [][]float32) error {
	*c.tokens += len(b.Tokens)
	return c.nullModel.Forward(b, kv, logits)
}

// Repeat runs every decode test that many times: the model sees each
// test's prompts and generated tokens once per run (the prefill test once).
func TestBenchRepeat(t *testing.T) {
	const prompt, gen, seqs = 20, 8, 3
	for _, repeat := range []int{0, 1, 3} {
		var n int
		res, err := Bench(context.Background(), countingModel{nullModel{vocab: 64}, &n},
			BenchOptions{PromptTokens: prompt, GenTokens: gen, Sequences: []int{seqs}, Repeat: repeat})
		if err != nil {
			t.Fatal(err)
		}
		// A sequence's prompt (16 tokens) and all but its last generated
		// token go through Forward.
		if want := prompt + max(repeat, 1)*seqs*(16+gen-1); n != want {
			t.Errorf("repeat %d: the model saw %d tokens, want %d", repeat, n, want)
		}
		if v := res["decode_only_tok_s_x3"]; !(v > 0) {
			t.Errorf("repeat %d: decode_only_tok_s_x3 = %v", repeat, v)
		}
		// The null model's TPOT may round to 0 ms.
		if v, ok := res["mean_tpot_ms_x3"]; !ok || v < 0 {
			t.Errorf("repeat %d: mean_tpot_ms_x3 = %v (present %v)", repeat, v, ok)
		}
	}
}

// When the prompts take more than one step to admit, the first admitted
// decode in the steps that admit the rest: the decode-only window starts
// with some sequences past their first token, and counts only the tokens
// generated in it. 40 prompts of 16 tokens under a 512-token step: step 1
// admits 32 (their first tokens), step 2 the other 8 while the 32 get a
// second, so 32*(8-2) + 8*(8-1) = 248 tokens follow, not 40*(8-1).
func TestBenchRunCountsTokensAfterAllStarted(t *testing.T) {
	const seqs, gen = 40, 8
	p := sampler.DefaultParams()
	p.IgnoreEOS, p.MaxNewTokens = true, gen
	r, err := benchRun(context.Background(), nullModel{vocab: 64}, Options{MaxTotalTokens: seqs * (gen + 40), MaxReqTotalLen: 16 + gen,
		BatchMaxTokens: 512, DisablePromptCache: true, SkipLogProbs: true}, decodePrompts(seqs, 16, 64, true), p)
	if err != nil {
		t.Fatal(err)
	}
	if r.afterTokens != 248 {
		t.Errorf("%d tokens after every sequence started, want 248", r.afterTokens)
	}
	if r.tpotN != seqs || r.tpot <= 0 {
		t.Errorf("TPOT summed over %d sequences (%v), want %d", r.tpotN, r.tpot, seqs)
	}
	if r.afterFirst <= 0 || r.afterFirst > r.total {
		t.Errorf("decode-only window %v of %v", r.afterFirst, r.total)
	}
}

// batchLog is nullModel noting each Forward's sequences and tokens.
type batchLog struct {
	nullModel
	seqs, tokens *[]int
}

func (l batchLog) Forward(b *Batch, kv *KV, logits [][]float32) error {
	*l.seqs = append(*l.seqs, len(b.Seqs))
	*l.tokens = append(*l.tokens, len(b.Tokens))
	return l.nullModel.Forward(b, kv, logits)
}

// The long-context test's sequences prefill side by side and decode
// together: its last run (4 sequences after a 1024-token prompt, chunks
// of 512) is 2 steps of 4 chunks, then 4 steps decoding all 4.
func TestBenchContextDecodesTogether(t *testing.T) {
	var seqs, tokens []int
	_, err := Bench(context.Background(), batchLog{nullModel{vocab: 64}, &seqs, &tokens},
		BenchOptions{PromptTokens: 4, GenTokens: 5, Sequences: []int{4}, Context: 1024})
	if err != nil {
		t.Fatal(err)
	}
	last := len(seqs) - 6
	if last < 0 {
		t.Fatalf("%d forwards", len(seqs))
	}
	gotSeqs, gotTokens := seqs[last:], tokens[last:]
	if wantSeqs, wantTokens := []int{4, 4, 4, 4, 4, 4}, []int{2048, 2048, 4, 4, 4, 4}; !slices.Equal(gotSeqs, wantSeqs) || !slices.Equal(gotTokens, wantTokens) {
		t.Errorf("last run's steps: %v sequences, %v tokens; want %v, %v", gotSeqs, gotTokens, wantSeqs, wantTokens)
	}
}

// BenchmarkStepOverhead is the engine's cost per decode step (batching,
// KV allocation, sampling over a 32000-token vocabulary, bookkeeping) with a
// model that costs nothing.
func BenchmarkStepOverhead(b *testing.B) {
	for _, c := range []struct {
		n    int
		skip bool
	}{{1, false}, {16, false}, {16, true}, {64, true}} {
		n := c.n
		b.Run(fmt.Sprintf("x%d/skip_logprob=%v", n, c.skip), func(b *testing.B) {
			e, err := New(nullModel{vocab: 32000}, Options{MaxTotalTokens: 1 << 20, SkipLogProbs: c.skip})
			if err != nil {
				b.Fatal(err)
			}
			for i := range n {
				p := sampler.DefaultParams()
				p.MaxNewTokens, p.IgnoreEOS = 1<<30, true
				if err := e.Add(Request{ID: uint64(i), Prompt: []int32{1, 5, 9}, Params: p}); err != nil {
					b.Fatal(err)
				}
			}
			_, _ = e.Step()
			for b.Loop() {
				if _, err := e.Step(); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/token")
		})
	}
}
