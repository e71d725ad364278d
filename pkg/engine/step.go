package engine

import (
	"fmt"
	"slices"
	"time"

	"github.com/lightllm-go/lightllm/pkg/sampler"
)

// Step runs one scheduler step: it serves the running requests oldest first
// (one decode token each, or the next prefill chunk), admits waiting ones
// while KV and the prefill budget allow, runs one Forward over all of them,
// samples, and returns the new tokens and finished/aborted requests. The
// returned slice is reused by the next Step. An error means the model failed
// or the engine's state is inconsistent; the caller should stop.
func (e *Engine) Step() ([]Output, error) {
	if e.fault != nil {
		return nil, e.fault
	}
	start := time.Now()
	e.outs = append(e.outs[:0], e.aborted...)
	e.aborted = e.aborted[:0]
	if err := e.plan(); err != nil {
		e.fault = err
		return e.outs, err
	}
	if len(e.batch.Seqs) == 0 {
		return e.outs, nil
	}
	if e.lpool != nil {
		e.stats.KVLocalPeak = max(e.stats.KVLocalPeak, e.lpool.UsedCount())
	}
	fwd := time.Now()
	if err := e.m.Forward(&e.batch, e.kv, e.logits); err != nil {
		// The requests keep their slots and kvLen: a retry recomputes the chunk.
		return e.outs, fmt.Errorf("engine: forward of %d tokens in %d sequences: %w",
			len(e.batch.Tokens), len(e.batch.Seqs), err)
	}
	e.stats.ForwardTime += time.Since(fwd)
	if e.stepPrefill {
		e.sincePrefill = 0
	} else {
		e.sincePrefill++
	}
	err := e.collect()
	if err != nil {
		e.fault = err
	}
	e.stats.Steps++
	e.stats.StepTime += time.Since(start)
	return e.outs, err
}

// plan fills e.batch. Running requests are served in arrival order; when KV
// runs out the newest running requests are paused (their KV freed) so older
// ones always progress. Waiting requests are admitted FCFS while the free KV
// covers their whole remaining prefill plus what admitted requests still
// need, so that admission rarely causes evictions (the router's Past-Future
// admission normally keeps usage below capacity anyway).
//
// How many tokens a request computes in a step is nextChunk's, never cut to
// the step's budget or free KV: the model rounds a chunk by its size, so a
// request whose chunks depended on the load would get load-dependent
// tokens. A chunk that does not fit waits for a later step.
//
// Under the non-aggressive schedule (Options.PrefillWaitSteps) a step whose
// turn for prompts has not come is planned with no prefill budget: only
// the tokens to decode run, and the prompts wait. Should nothing be left
// to run that way (the decoding requests paused for KV), the step takes
// the prompts after all, so the engine never idles with work.
func (e *Engine) plan() error {
	gated := e.opts.PrefillWaitSteps > 0 && e.sincePrefill < e.opts.PrefillWaitSteps && e.decoding()
	if err := e.planWith(gated); err != nil || !gated || len(e.batch.Seqs) > 0 {
		return err
	}
	return e.planWith(false)
}

// decoding reports whether a running request has a token to decode (or a
// generated one to replay) rather than a prompt chunk to compute.
func (e *Engine) decoding() bool {
	for _, r := range e.running {
		if r.kvLen >= r.promptLen {
			return true
		}
	}
	return false
}

// planWith is plan's pass; gated leaves the prompts out.
func (e *Engine) planWith(gated bool) error {
	b := &e.batch
	b.Tokens, b.Positions, b.Seqs = b.Tokens[:0], b.Positions[:0], b.Seqs[:0]
	e.batchReqs, e.logits = e.batchReqs[:0], e.logits[:0]
	e.stepPrefill = false
	rowsUsed := 0
	budget := e.opts.BatchMaxTokens
	if gated {
		budget = 0
	}
	reserved := 0 // slots still to be allocated by admitted requests still prefilling or replaying

	for i := 0; i < len(e.running); i++ {
		r := e.running[i]
		n := e.nextChunk(r)
		prefill := r.kvLen < r.promptLen // only prompt chunks count against the budget
		if prefill && n > budget {
			reserved += len(r.tokens) - len(r.slots)
			continue
		}
		need := r.kvLen + n - len(r.slots)
		for need > e.available() && len(e.running) > i+1 {
			if err := e.pause(e.running[len(e.running)-1]); err != nil {
				return err
			}
		}
		if need > e.available() {
			if !prefill {
				// A one-token step with no newer request to take from: yield our KV to the older ones.
				if err := e.pause(r); err != nil {
					return err
				}
				i--
				continue
			}
			// Older requests hold the KV; they finish or, short themselves, pause this one.
			reserved += len(r.tokens) - len(r.slots)
			continue
		}
		if err := e.allocate(r, need); err != nil {
			return err
		}
		if prefill {
			budget -= n
			e.stepPrefill = true
		}
		reserved += len(r.tokens) - len(r.slots)
		rowsUsed = e.addSeq(r, n, rowsUsed)
	}

	for len(e.waiting) > 0 && budget > 0 {
		if e.opts.MaxRunningReqs > 0 && len(e.running) >= e.opts.MaxRunningReqs {
			break
		}
		r := e.waiting[0]
		if err := e.matchCache(r); err != nil {
			return err
		}
		remaining := len(r.tokens) - r.kvLen
		headroom := len(e.running) // one decode token each next step
		if r.state == StatePaused {
			// The running requests grow by a token each step while this one
			// replays its generated tokens, one per step.
			headroom *= e.opts.PausedHeadroomSteps + len(r.tokens) - max(r.kvLen, r.promptLen)
		}
		n := e.nextChunk(r)
		prefill := r.kvLen < r.promptLen
		if (prefill && n > budget) || (e.available()-reserved-headroom < remaining && len(e.running) > 0) {
			if err := e.unmatchCache(r); err != nil {
				return err
			}
			break // FCFS: nobody overtakes the head of the queue
		}
		if r.cacheLen < 0 {
			r.cacheLen = r.kvLen
			e.stats.CachedTokens += uint64(r.kvLen)
		}
		if err := e.allocate(r, n); err != nil {
			return err
		}
		e.waiting = slices.Delete(e.waiting, 0, 1)
		r.state = StateRunning
		e.running = insertByArrival(e.running, r)
		if prefill {
			budget -= n
			e.stepPrefill = true
		}
		reserved += len(r.tokens) - len(r.slots)
		rowsUsed = e.addSeq(r, n, rowsUsed)
	}
	return nil
}

// addSeq appends r's next n tokens to the batch; the request wants logits
// when this chunk reaches its last token.
func (e *Engine) addSeq(r *reqState, n, rowsUsed int) int {
	b := &e.batch
	start := len(b.Tokens)
	b.Tokens = append(b.Tokens, r.tokens[r.kvLen:r.kvLen+n]...)
	for p := r.kvLen; p < r.kvLen+n; p++ {
		b.Positions = append(b.Positions, int32(p))
	}
	want := r.kvLen+n == len(r.tokens) && !r.params.Embed
	seq := Seq{Start: start, Len: n, Slots: r.slots[:r.kvLen+n], WantLogits: want}
	if e.lpool != nil {
		seq.Local = r.local[:r.kvLen+n]
	}
	e.hiddenFor(r, &seq, n)
	b.Seqs = append(b.Seqs, seq)
	e.batchReqs = append(e.batchReqs, r)
	var row []float32
	if want {
		if rowsUsed == len(e.rows) {
			e.rows = append(e.rows, make([]float32, e.cfg.Vocab))
		}
		row = e.rows[rowsUsed]
		rowsUsed++
	}
	e.logits = append(e.logits, row)
	if n == 1 && want {
		e.stats.DecodeTokens++
	} else {
		e.stats.PrefillTokens += uint64(n)
	}
	e.stats.ForwardTokens += uint64(n)
	return rowsUsed
}

// pause evicts a running request: its KV is freed and it waits, in arrival
// order, to be recomputed from its prompt and generated tokens.
func (e *Engine) pause(r *reqState) error {
	e.running = removeReq(e.running, r)
	err := e.freeKV(r, true)
	r.proc = nil // rebuilt by replay when it samples again (processor.go)
	r.state = StatePaused
	r.evictions++
	e.waiting = insertByArrival(e.waiting, r)
	e.stats.Evictions++
	e.log.Debug().Uint64("req", r.id).Int("tokens", len(r.tokens)).Int("available_kv", e.available()).
		Msg("KV exhausted: request paused for recompute")
	return err
}

// collect advances the requests of the batch that just ran, samples the
// ones that asked for logits and retires those that finished.
func (e *Engine) collect() error {
	e.finished = e.finished[:0]
	for i, seq := range e.batch.Seqs {
		r := e.batchReqs[i]
		e.computed(r, seq.Len)
		r.kvLen += seq.Len
		if err := e.dropLocal(r); err != nil {
			return err
		}
		if r.params.Embed && r.kvLen == r.promptLen {
			e.outs = append(e.outs, Output{ID: r.id, Token: -1, Finished: true, Reason: FinishStop, Embedding: e.embedding(r)})
			e.finished = append(e.finished, r)
			continue
		}
		if !seq.WantLogits {
			continue
		}
		row := e.logits[i]
		if err := r.process(row); err != nil {
			e.fail(r, err)
			continue
		}
		in := sampler.Input{Params: &r.params, Seed: r.seed, Prompt: r.tokens[:r.promptLen],
			Generated: r.generated(), EOS: e.cfg.EOS, SkipLogProb: e.opts.SkipLogProbs || r.params.NoLogProb}
		res, err := e.sampler.Sample(row, &in)
		if err != nil {
			return fmt.Errorf("engine: request %d: %w", r.id, err)
		}
		if r.proc != nil {
			if err := r.proc.Accept(res.Token); err != nil {
				e.fail(r, fmt.Errorf("logits processor refused token %d it allowed: %w", res.Token, err))
				continue
			}
		}
		out := Output{ID: r.id, Token: res.Token, LogProb: res.LogProb, PromptCacheLen: max(r.cacheLen, 0)}
		if n := r.params.TopLogprobs; n > 0 {
			out.Top, out.Rank = r.params.Top(row, res.Token, res.LogProb, n, make([]sampler.Alt, 0, n))
		}
		r.tokens = append(r.tokens, res.Token)
		why := r.finishReason(res.Token)
		out.Finished, out.Reason = why != NotFinished, why
		e.outs = append(e.outs, out)
		if why != NotFinished {
			e.finished = append(e.finished, r)
		}
	}
	var err error
	for _, r := range e.finished {
		e.running = removeReq(e.running, r)
		if ferr := e.release(r); ferr != nil && err == nil {
			err = ferr
		}
	}
	return err
}
