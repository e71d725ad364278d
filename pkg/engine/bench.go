package engine

import (
	"context"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/lightllm-go/lightllm/pkg/model"
	"github.com/lightllm-go/lightllm/pkg/sampler"
)

// BenchOptions mirror shared/tools/llamacpp-ref/bench.mjs's arguments.
type BenchOptions struct {
	PromptTokens int   // prefill test prompt length (bench.mjs default 512)
	GenTokens    int   // tokens generated per sequence in the decode tests (64)
	Sequences    []int // decode tests with this many sequences at once (1,4,16)
	MmapWeights  bool  // model.LoadOptions.MmapWeights (BenchModel)
	// Context, when > 0, adds the long-context decode tests: S sequences
	// (S = 1 and the largest of Sequences), each first prefilled with a
	// Context-token prompt, then timed generating GenTokens tokens
	// (longctx.mjs's decode_tok_s_at_P for S = 1).
	Context int
	// Churn, with Context, first runs short requests through the engine of
	// each long-context test until they have used every KV slot, so that
	// the long prompts are placed in a pool laid out as a serving
	// process's is after a while rather than a fresh one.
	Churn bool
	// PrefillChunk is the prompt chunk (Options.BatchMaxTokens) of the
	// prefill tests; 0 is 512, llama.cpp's default n_ubatch, which
	// bench.mjs and longctx.mjs run with.
	PrefillChunk int
	// DistinctPrompts gives each sequence of the decode tests a prompt of
	// its own (consecutive windows of the same walk) instead of bench.mjs's
	// one prompt for all. A server benchmark's prompts differ, and
	// identical rows compute identical numbers, which some kernels run
	// faster (stories260K's 8-wide attention heads: 7.5% of a decode step,
	// its data-dependent branches repeating row after row); a baseline for
	// the server should not have that advantage.
	DistinctPrompts bool
	// Repeat runs each decode test this many times (0 is once), each on a
	// fresh engine, and reports the rates over all of them together: one
	// run of a small model at 64 sequences lasts half a second, short
	// enough for one hiccup of a shared host to move it by a tenth, and a
	// server benchmark it is held against runs several waves of requests.
	Repeat int
}

func (o BenchOptions) prefillChunk() int {
	if o.PrefillChunk > 0 {
		return o.PrefillChunk
	}
	return 512
}

// BenchModel loads a model and runs Bench on it; the result also names the
// model and the thread count, as bench.mjs prints them.
func BenchModel(ctx context.Context, path string, threads int, o BenchOptions) (map[string]any, error) {
	m, err := model.Load(path, model.LoadOptions{Threads: threads, NoTokenizer: true, MmapWeights: o.MmapWeights})
	if err != nil {
		return nil, fmt.Errorf("load model %s: %w", path, err)
	}
	defer m.Close()
	res, err := Bench(ctx, m, o)
	if err != nil {
		return nil, err
	}
	out := map[string]any{"model": path, "threads": m.Threads()}
	for k, v := range res {
		out[k] = v
	}
	return out, nil
}

// Bench measures the engine over m the way bench.mjs measures llama.cpp:
// prefill_tok_s is the prompt length over the time to prefill a pseudo-random
// prompt (in chunks of up to 512 tokens, llama.cpp's batch); decode_tok_s_xS
// is S*GenTokens over the time for S sequences, each with the prompt's first
// 16 tokens (or 16 of their own, BenchOptions.DistinctPrompts), to generate
// GenTokens greedy tokens together (their short
// prefill included, as in bench.mjs). decode_only_tok_s_xS leaves that
// prefill out: the tokens generated after every sequence has its first
// one, over the time they took; it is the rate to hold against the memory
// roofline, since the short prefill of bench.mjs's method is not decode.
// mean_tpot_ms_xS is a serving benchmark's mean TPOT over the S sequences
// (each one's time from its first token to its last over its tokens after
// the first), computed as `lightllm bench` computes a server's: where the
// prompts take several steps to admit, it includes, for the sequences
// admitted first, the steps that prefill the others, which decode_only
// leaves out (measured at 64 and 256 sequences it grows no slower than the
// decode-only step: docs/performance.md, twenty-ninth session).
// overhead_pct_xS is the share of the whole time spent in the engine outside
// model.Forward.
func Bench(ctx context.Context, m Forwarder, o BenchOptions) (map[string]float64, error) {
	if o.PromptTokens < 1 || o.GenTokens < 1 || len(o.Sequences) == 0 {
		return nil, fmt.Errorf("bench: prompt_tokens %d and gen_tokens %d must be >= 1, with at least one sequence count",
			o.PromptTokens, o.GenTokens)
	}
	for _, s := range o.Sequences {
		if s < 1 {
			return nil, fmt.Errorf("bench: sequence count %d must be >= 1", s)
		}
	}
	if o.Repeat < 0 {
		return nil, fmt.Errorf("bench: repeat %d must be >= 0", o.Repeat)
	}
	if o.Churn && o.Context <= 0 {
		return nil, fmt.Errorf("bench: --churn applies to the long-context tests: it needs --context")
	}
	vocab := m.Config().Vocab
	prompt := benchPrompt(o.PromptTokens, vocab)
	res := map[string]float64{}

	greedy := sampler.DefaultParams()
	greedy.IgnoreEOS = true
	ctxLen := o.PromptTokens + o.GenTokens + 8
	greedy.MaxNewTokens = 1
	r, err := benchRun(ctx, m, Options{MaxTotalTokens: ctxLen, MaxReqTotalLen: ctxLen,
		BatchMaxTokens: min(o.prefillChunk(), o.PromptTokens), DisablePromptCache: true, SkipLogProbs: true}, [][]int32{prompt}, greedy)
	if err != nil {
		return nil, err
	}
	res["prefill_tok_s"] = round2(float64(o.PromptTokens) / r.total.Seconds())

	short := prompt[:min(16, len(prompt))]
	greedy.MaxNewTokens = o.GenTokens
	for _, s := range o.Sequences {
		prompts := decodePrompts(s, len(short), vocab, o.DistinctPrompts)
		runs := max(o.Repeat, 1)
		var sum benchResult
		for range runs {
			r, err := benchRun(ctx, m, Options{MaxTotalTokens: s * (o.GenTokens + 40), MaxReqTotalLen: len(short) + o.GenTokens,
				BatchMaxTokens: 512, DisablePromptCache: true, SkipLogProbs: true}, prompts, greedy)
			if err != nil {
				return nil, err
			}
			sum.add(r)
		}
		res[fmt.Sprintf("decode_tok_s_x%d", s)] = round2(float64(runs*s*o.GenTokens) / sum.total.Seconds())
		if sum.afterTokens > 0 && sum.afterFirst > 0 {
			res[fmt.Sprintf("decode_only_tok_s_x%d", s)] = round2(float64(sum.afterTokens) / sum.afterFirst.Seconds())
		}
		if sum.tpotN > 0 {
			res[fmt.Sprintf("mean_tpot_ms_x%d", s)] = math.Round(float64(sum.tpot)/float64(sum.tpotN)/1e3) / 1e3 // to the µs
		}
		res[fmt.Sprintf("overhead_pct_x%d", s)] = round2(100 * float64(sum.stats.StepTime-sum.stats.ForwardTime) / float64(sum.stats.StepTime))
	}
	if o.Context > 0 {
		if err := benchContext(ctx, m, o, res); err != nil {
			return nil, err
		}
	}
	return res, nil
}

// benchContext measures decode after a long prompt: decode_ctx_tok_s_xS is
// the tokens the S sequences generate together after each has its first
// token (their Context-token prompts prefilled side by side), over the
// time they took;
// prefill_ctx_tok_s is the single sequence's prompt over the time to its
// first token (longctx.mjs's prefill_tok_s).
func benchContext(ctx context.Context, m Forwarder, o BenchOptions, res map[string]float64) error {
	if o.GenTokens < 2 {
		return fmt.Errorf("bench: --context needs gen_tokens >= 2")
	}
	prompt := benchPrompt(o.Context, m.Config().Vocab)
	greedy := sampler.DefaultParams()
	greedy.IgnoreEOS = true
	greedy.MaxNewTokens = o.GenTokens
	counts := []int{1}
	if mx := slices.Max(o.Sequences); mx > 1 {
		counts = append(counts, mx)
	}
	for _, s := range counts {
		prompts := make([][]int32, s)
		for i := range prompts {
			prompts[i] = prompt
		}
		per := o.Context + o.GenTokens + 8
		var before func(*Engine) error
		if o.Churn {
			before = func(e *Engine) error { return churn(ctx, e) }
		}
		// A step's prefill budget of one chunk per sequence prefills the
		// S prompts side by side, each in the same chunks as alone, so
		// they all decode together from the same step. Under one chunk's
		// budget they were admitted one after another (S*Context/chunk
		// steps), the first finished before the last had started, and the
		// rate after the last one's first token was that of a few
		// sequences, not S (16 at 2048 with 33 tokens: 8 to 1).
		r, err := benchRunAfter(ctx, m, Options{MaxTotalTokens: s * per, MaxReqTotalLen: per,
			BatchMaxTokens: s * o.prefillChunk(), ChunkedPrefillSize: o.prefillChunk(), DisablePromptCache: true, SkipLogProbs: true},
			prompts, greedy, before)
		if err != nil {
			return err
		}
		if r.afterFirst > 0 && r.afterTokens > 0 {
			res[fmt.Sprintf("decode_ctx_tok_s_x%d", s)] = round2(float64(r.afterTokens) / r.afterFirst.Seconds())
			if s == 1 {
				// The prompt's prefill: Add to its first token.
				res["prefill_ctx_tok_s"] = round2(float64(o.Context) / (r.total - r.afterFirst).Seconds())
			}
		}
	}
	res["context"] = float64(o.Context)
	if o.Churn {
		res["churned"] = 1
	}
	return nil
}

// churn runs short requests (a 64-token prompt, 32 generated tokens) through
// e, two arriving per step, until they have taken as many KV slots as the
// pool holds, and then until they are done: their decode slots were
// handed out step by step among each other's, as a server's are.
func churn(ctx context.Context, e *Engine) error {
	const promptLen, gen = 64, 32
	p := sampler.DefaultParams()
	p.IgnoreEOS, p.MaxNewTokens = true, gen
	prompt := benchPrompt(min(promptLen, e.opts.MaxReqTotalLen-gen), e.cfg.Vocab)
	id := uint64(1 << 62) // apart from the measured requests' ids
	for taken := 0; taken < e.pool.Size() || e.HasWork(); {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("bench interrupted: %w", err)
		}
		for k := 0; k < 2 && taken < e.pool.Size(); k++ {
			if err := e.Add(Request{ID: id, Prompt: prompt, Params: p}); err != nil {
				return fmt.Errorf("bench: churn: %w", err)
			}
			id++
			taken += len(prompt) + gen
		}
		if _, err := e.Step(); err != nil {
			return fmt.Errorf("bench: churn: %w", err)
		}
	}
	return nil
}

// benchResult is one benchRun's timing.
type benchResult struct {
	total      time.Duration // Add of the first request to the last token
	afterFirst time.Duration // from the step where the last request got its first token to the end
	// afterTokens are the tokens generated in afterFirst. Not every
	// sequence has just one token when it starts: prompts that take more
	// than one step's prefill budget are admitted over several steps, and
	// the first admitted decode in the steps that admit the rest (64
	// sequences of 16 tokens take 2 steps of 512, 256 take 8).
	afterTokens int
	// tpot is the sum over the sequences of each one's time per output
	// token after its first, (last token - first token) / (tokens - 1),
	// over tpotN sequences: a benchmark client's mean TPOT, which for a
	// sequence admitted early includes the steps that prefilled the
	// others.
	tpot  time.Duration
	tpotN int
	stats Stats
}

// add accumulates another run's times and counts (of stats, the two
// times overhead_pct is made of).
func (r *benchResult) add(o benchResult) {
	r.total += o.total
	r.afterFirst += o.afterFirst
	r.afterTokens += o.afterTokens
	r.tpot += o.tpot
	r.tpotN += o.tpotN
	r.stats.StepTime += o.stats.StepTime
	r.stats.ForwardTime += o.stats.ForwardTime
}

// benchRun runs prompts to completion on a fresh engine and times it.
func benchRun(ctx context.Context, m Forwarder, opts Options, prompts [][]int32, p sampler.Params) (benchResult, error) {
	return benchRunAfter(ctx, m, opts, prompts, p, nil)
}

// benchRunAfter is benchRun with before, when not nil, run on the engine
// first, untimed.
func benchRunAfter(ctx context.Context, m Forwarder, opts Options, prompts [][]int32, p sampler.Params, before func(*Engine) error) (benchResult, error) {
	e, err := New(m, opts)
	if err != nil {
		return benchResult{}, fmt.Errorf("bench: %w", err)
	}
	if before != nil {
		if err := before(e); err != nil {
			return benchResult{}, err
		}
		e.stats = Stats{} // the timed run's counters only
	}
	start := time.Now()
	for i, pr := range prompts {
		if err := e.Add(Request{ID: uint64(i), Prompt: pr, Params: p}); err != nil {
			return benchResult{}, fmt.Errorf("bench: %w", err)
		}
	}
	// Per sequence (IDs are prompt indexes): its tokens so far and the
	// times of its first and last.
	type seq struct {
		n           int
		first, last time.Time
	}
	seqs := make([]seq, len(prompts))
	started := 0
	var r benchResult
	var allStarted time.Time
	for e.HasWork() {
		if err := ctx.Err(); err != nil {
			return benchResult{}, fmt.Errorf("bench interrupted: %w", err)
		}
		outs, err := e.Step()
		if err != nil {
			return benchResult{}, fmt.Errorf("bench: %w", err)
		}
		now := time.Now()
		for _, o := range outs {
			if o.Token < 0 || o.ID >= uint64(len(seqs)) { // no token, or not a measured request
				continue
			}
			sq := &seqs[o.ID]
			if sq.n == 0 {
				sq.first = now
				started++
			}
			sq.n++
			sq.last = now
			if !allStarted.IsZero() {
				r.afterTokens++
			}
		}
		if allStarted.IsZero() && started == len(prompts) {
			allStarted = now
		}
	}
	end := time.Now()
	r.total, r.stats = end.Sub(start), e.Stats()
	if !allStarted.IsZero() {
		r.afterFirst = end.Sub(allStarted)
	}
	for _, sq := range seqs {
		if sq.n > 1 {
			r.tpot += sq.last.Sub(sq.first) / time.Duration(sq.n-1)
			r.tpotN++
		}
	}
	return r, nil
}

// decodePrompts are the decode tests' prompts for s sequences, n tokens
// each: bench.mjs's (the walk's first n tokens for every sequence) or, with
// distinct, the walk's consecutive n-token windows, so the first sequence
// keeps bench.mjs's prompt.
func decodePrompts(s, n, vocab int, distinct bool) [][]int32 {
	prompts := make([][]int32, s)
	if !distinct {
		short := benchPrompt(n, vocab)
		for i := range prompts {
			prompts[i] = short
		}
		return prompts
	}
	walk := benchPrompt(s*n, vocab)
	for i := range prompts {
		prompts[i] = walk[i*n : (i+1)*n : (i+1)*n]
	}
	return prompts
}

// benchPrompt is bench.mjs's prompt: a fixed pseudo-random walk over the
// vocabulary (no zeros, no BOS). JavaScript computes x*1103515245+12345 in
// float64 (rounding once the product passes 2^53) and then takes it modulo
// 2^32 (>>> 0); this does the same so the ids are identical.
func benchPrompt(n, vocab int) []int32 {
	mod := uint32(max(1, min(vocab, 30000)-3))
	x := uint32(12345)
	out := make([]int32, n)
	for i := range out {
		// The explicit conversion forbids fusing into an FMA, which would skip JS's rounding.
		f := float64(float64(x)*1103515245) + 12345
		x = uint32(uint64(int64(f)))
		out[i] = int32(3 + x%mod)
	}
	return out
}

func round2(x float64) float64 { return math.Round(x*100) / 100 }
