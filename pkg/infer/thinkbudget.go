package infer

import (
	"fmt"
	"math"
	"slices"

	"github.com/lightllm-go/lightllm/pkg/engine"
	"github.com/lightllm-go/lightllm/shm"
)

// budgetPhase is where a thinkBudget processor stands.
type budgetPhase uint8

const (
	bStart budgetPhase = iota // the output may still open the block (matching Start)
	bThink                    // inside the block, counting
	bForce                    // the budget is spent: End is being forced
	bDone                     // the block ended (or never opened): no effect
)

// thinkBudget is vLLM's thinking_token_budget: once the thinking block has
// run Budget tokens without closing, every logit but the next token of End
// is masked until End is written, and the answer follows. The block is the
// one the prompt opened (Open) or the one the output opens with Start as
// its first tokens — the same rule the reasoning parser and a constraint's
// optional thinking block follow, so a grammar after it never sees a token
// it did not allow. Its state is a function of the accepted tokens only,
// so replay (restart, eviction) rebuilds it exactly.
type thinkBudget struct {
	cfg   shm.ThinkBudget
	phase budgetPhase
	n     int     // tokens matched of Start (bStart), in the block (bThink), of End forced (bForce)
	tail  []int32 // bThink: the block's last len(End) tokens, to see End written naturally
}

func newThinkBudget(cfg *shm.ThinkBudget) func() (engine.LogitsProcessor, error) {
	c := *cfg
	return func() (engine.LogitsProcessor, error) {
		p := &thinkBudget{cfg: c, tail: make([]int32, 0, len(c.End))}
		if c.Open {
			p.phase = bThink
		}
		return p, nil
	}
}

func (p *thinkBudget) forcing() bool {
	return p.phase == bForce || (p.phase == bThink && p.n >= int(p.cfg.Budget))
}

func (p *thinkBudget) Process(row []float32) error {
	if !p.forcing() {
		return nil
	}
	want := p.cfg.End[0]
	if p.phase == bForce {
		want = p.cfg.End[p.n]
	}
	if int(want) >= len(row) {
		return fmt.Errorf("thinking budget: end token %d, the model has %d logits", want, len(row))
	}
	v := row[want]
	if math.IsInf(float64(v), -1) {
		v = 0 // another processor banned it; the budget still ends the block
	}
	for i := range row {
		row[i] = float32(math.Inf(-1))
	}
	row[want] = v
	return nil
}

func (p *thinkBudget) Accept(tok int32) error {
	switch p.phase {
	case bStart:
		if tok != p.cfg.Start[p.n] {
			p.phase = bDone
			return nil
		}
		if p.n++; p.n == len(p.cfg.Start) {
			p.phase, p.n = bThink, 0
		}
	case bThink:
		if p.n >= int(p.cfg.Budget) {
			p.phase, p.n = bForce, 0
			return p.Accept(tok)
		}
		p.n++
		if len(p.tail) == len(p.cfg.End) {
			p.tail = append(p.tail[:0], p.tail[1:]...)
		}
		p.tail = append(p.tail, tok)
		if slices.Equal(p.tail, p.cfg.End) {
			p.phase = bDone
		}
	case bForce:
		if tok != p.cfg.End[p.n] {
			return fmt.Errorf("thinking budget: token %d where the end tag's %d was forced", tok, p.cfg.End[p.n])
		}
		if p.n++; p.n == len(p.cfg.End) {
			p.phase = bDone
		}
	}
	return nil
}
