package infer

import (
	"math"
	"time"

	"github.com/lightllm-go/lightllm/pkg/engine"
	"github.com/lightllm-go/lightllm/pkg/sampler"
	"github.com/lightllm-go/lightllm/shm"
)

// topWaitBudget is how long, in total per request, infer waits for the
// apiserver to copy top-logprob entries out of a full ring before it
// overwrites them (docs/FORMAT.md): a stalled apiserver costs the other
// requests at most this much once.
const topWaitBudget = 200 * time.Millisecond

// topReq is what a live request asked for.
type topReq struct {
	n      int     // alternatives per token; 0: none
	invT   float32 // 1/temperature as the sampler applies it (1 when greedy)
	waited time.Duration
}

func newTopReq(p sampler.Params, n uint32) topReq {
	t := topReq{n: int(min(n, shm.MaxTopLogprobs)), invT: 1}
	if !p.Greedy() && p.Temperature > 0 {
		t.invT = 1 / p.Temperature
	}
	return t
}

// logprobState is the Worker's scratch for top logprobs.
type logprobState struct {
	rows   [][]float32 // per output of the current step: its logit row, or nil
	alts   []shm.TopLogprob
	warned bool // a row/output mismatch was logged
}

// sampledRows lines the executor's sampled logit rows up with outs (nil
// where an output has no row, or when no request asked for alternatives).
func (w *Worker) sampledRows(outs []engine.Output) [][]float32 {
	w.lp.rows = w.lp.rows[:0]
	src, ok := w.ex.(logitSource)
	if !ok {
		return nil
	}
	want := false
	for _, l := range w.live {
		want = want || l.top.n > 0
	}
	if !want {
		return nil
	}
	rows := src.SampledLogits()
	sampled := 0
	for _, o := range outs {
		if o.Token >= 0 {
			sampled++
		}
	}
	if sampled != len(rows) {
		if sampled > 0 && !w.lp.warned {
			w.lp.warned = true
			w.o.Log.Warn().Int("outputs", sampled).Int("rows", len(rows)).Msg("sampled rows do not match the outputs: no top logprobs this step")
		}
		return nil
	}
	k := 0
	for _, o := range outs {
		var row []float32
		if o.Token >= 0 {
			row = rows[k]
			k++
		}
		w.lp.rows = append(w.lp.rows, row)
	}
	return w.lp.rows
}

// writeLogprobs stores output o's log-probability at l's next output index
// and, when asked, its alternatives; both before the Publish covering it.
func (w *Worker) writeLogprobs(l *liveReq, o engine.Output, rows [][]float32, k int) {
	s := l.slot
	if err := s.SetOutputLogprob(l.out, o.LogProb); err != nil {
		w.o.Log.Error().Err(err).Int("slot", s.Index).Msg("logprob")
	}
	if l.top.n == 0 || k >= len(rows) || rows[k] == nil {
		return
	}
	alts, rank, lp := topLogprobs(rows[k], l.top.invT, o.Token, l.top.n, w.lp.alts)
	w.lp.alts = alts
	if !logprobAgrees(lp, o.LogProb) {
		if !w.lp.warned {
			w.lp.warned = true
			w.o.Log.Warn().Float64("recomputed", lp).Float32("sampler", o.LogProb).Int("slot", s.Index).
				Msg("logit row does not match the sampled token: no top logprobs for it")
		}
		return
	}
	for i := range alts {
		if alts[i].ID == o.Token {
			alts[i].Logprob = o.LogProb // the very value the per-token array holds
		}
	}
	for !s.TopRoom(l.out) && l.top.waited < topWaitBudget && s.Abort.Load() == 0 {
		w.api.Bell().Ring()
		time.Sleep(time.Millisecond)
		l.top.waited += time.Millisecond
	}
	if err := s.WriteTop(l.gen, l.out, rank, alts); err != nil {
		w.o.Log.Error().Err(err).Int("slot", s.Index).Msg("top logprobs")
		return
	}
	w.ringAPI = true
}

// Top alternatives (OpenAI's top_logprobs) are not something pkg/engine
// reports: its Output carries the chosen token's log-probability only. The
// role gets them from the logits instead. logitTap wraps the model and
// remembers, for each Forward, the logit rows of the sequences that sample;
// the engine samples those rows in batch order and returns one Output with
// a token per row, in the same order (after any token-less abort outputs),
// and its sampler applies penalties and masks to the rows in place. So once
// Step has returned, row k holds exactly the logits the k-th sampled token
// was drawn from, before temperature. Each row is checked against its
// Output (the chosen token's log-probability must agree) before its
// alternatives are published, so a change in that order cannot publish
// another token's alternatives.

// logitSource is implemented by executors that expose the last step's
// sampled logit rows (tappedEngine).
type logitSource interface {
	SampledLogits() [][]float32
}

// logitTap is an engine.Forwarder that records the rows Forward fills.
type logitTap struct {
	engine.Forwarder
	rows [][]float32
}

func (t *logitTap) Forward(b *engine.Batch, kv *engine.KV, logits [][]float32) error {
	t.rows = t.rows[:0]
	err := t.Forwarder.Forward(b, kv, logits)
	if err != nil {
		return err
	}
	for i, s := range b.Seqs {
		if s.WantLogits && i < len(logits) {
			t.rows = append(t.rows, logits[i])
		}
	}
	return nil
}

// tappedEngine is the engine with its model wrapped in a logitTap.
type tappedEngine struct {
	*engine.Engine
	tap *logitTap
}

var (
	_ Executor    = (*tappedEngine)(nil)
	_ logitSource = (*tappedEngine)(nil)
)

// Step runs one engine step; a step that runs no Forward leaves no rows.
func (e *tappedEngine) Step() ([]engine.Output, error) {
	e.tap.rows = e.tap.rows[:0]
	return e.Engine.Step()
}

// SampledLogits are the rows of the last step's sampled tokens, in output
// order; valid until the next Step.
func (e *tappedEngine) SampledLogits() [][]float32 { return e.tap.rows }

// topLogprobs computes, from one sampled row (penalties and masks applied,
// temperature not), the n most likely tokens under softmax(row*invT), best
// first (ties: lower id first), the chosen token's rank (1 + the tokens with
// a strictly higher logit) and its log-probability, the same quantity the
// sampler reports. alts reuses dst.
func topLogprobs(row []float32, invT float32, chosen int32, n int, dst []shm.TopLogprob) (alts []shm.TopLogprob, rank int, chosenLP float64) {
	alts = dst[:0]
	if chosen < 0 || int(chosen) >= len(row) {
		return alts, 0, math.Inf(-1)
	}
	m := float32(math.Inf(-1))
	for _, v := range row {
		if v > m { // NaN never compares greater
			m = v
		}
	}
	if math.IsInf(float64(m), -1) {
		return alts, 0, math.Inf(-1) // everything masked: no distribution
	}
	n = min(n, len(row), shm.MaxTopLogprobs)
	lc := row[chosen]
	var z float64
	rank = 1
	for id, v := range row {
		if v != v || math.IsInf(float64(v), -1) {
			continue
		}
		z += math.Exp(float64((v - m) * invT))
		if v > lc {
			rank++
		}
		if n == 0 || (len(alts) == n && !(v > row[alts[n-1].ID])) {
			continue
		}
		// Insertion into the best-first list; equal logits keep id order.
		if len(alts) < n {
			alts = append(alts, shm.TopLogprob{})
		}
		j := len(alts) - 1
		for j > 0 && v > row[alts[j-1].ID] {
			alts[j] = alts[j-1]
			j--
		}
		alts[j] = shm.TopLogprob{ID: int32(id)}
	}
	logZ := math.Log(z)
	lp := func(v float32) float64 { return float64((v-m)*invT) - logZ }
	for i := range alts {
		alts[i].Logprob = float32(lp(row[alts[i].ID]))
	}
	if lc != lc || math.IsInf(float64(lc), -1) {
		return alts, rank, math.Inf(-1)
	}
	return alts, rank, lp(lc)
}

// logprobAgrees reports whether a recomputed log-probability matches the
// sampler's (different exp implementations agree to far better than this).
func logprobAgrees(recomputed float64, sampler float32) bool {
	s := float64(sampler)
	if math.IsInf(recomputed, -1) || math.IsInf(s, -1) {
		return math.IsInf(recomputed, -1) && math.IsInf(s, -1)
	}
	return math.Abs(recomputed-s) <= 1e-2+1e-3*math.Abs(s)
}
