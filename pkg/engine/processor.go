package engine

import "fmt"

// Logits processors (Request.NewProcessor) are rebuilt rather than saved:
// a paused request drops its processor with its KV, and the next time it
// samples a fresh one replays every generated token through Accept. The
// engine never samples a replayed token, so the processor sees exactly
// the sequence an uninterrupted run would have shown it.

// buildProcessor makes r's processor and replays r's generated tokens.
func (r *reqState) buildProcessor() error {
	if r.newProc == nil {
		return nil
	}
	p, err := r.newProc()
	if err != nil {
		return fmt.Errorf("logits processor: %w", err)
	}
	if p == nil {
		return fmt.Errorf("logits processor: the factory returned none")
	}
	for k, tok := range r.generated() {
		if err := p.Accept(tok); err != nil {
			return fmt.Errorf("logits processor: replaying generated token %d (%d): %w", k, tok, err)
		}
	}
	r.proc = p
	return nil
}

// process runs r's processor on the row of its next token, rebuilding it
// first if it was dropped.
func (r *reqState) process(row []float32) error {
	if r.newProc == nil {
		return nil
	}
	if r.proc == nil {
		if err := r.buildProcessor(); err != nil {
			return err
		}
	}
	if err := r.proc.Process(row); err != nil {
		return fmt.Errorf("logits processor: %w", err)
	}
	return nil
}

// fail ends r with FinishError (in collect, which releases it).
func (e *Engine) fail(r *reqState, err error) {
	e.outs = append(e.outs, Output{ID: r.id, Token: -1, Finished: true, Reason: FinishError, Err: err,
		PromptCacheLen: max(r.cacheLen, 0)})
	e.finished = append(e.finished, r)
}
