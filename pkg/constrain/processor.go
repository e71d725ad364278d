package constrain

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"sync"

	"github.com/lightllm-go/lightllm/pkg/grammar"
)

type phase uint8

const (
	pFirst   phase = iota // ThinkOptional: the first token may open a thinking block
	pThink                // inside the thinking block: free text up to </think>
	pTrigger              // free text up to the trigger
	pActive               // the grammar decides
)

// Processor is one request's constraint, an engine.LogitsProcessor.
//
// The mask for the next token is computed on a goroutine started by Accept
// (or by the constructor), so it runs while the engine does the forward
// pass; Process and Accept wait for it before touching the matcher. A
// processor the engine drops may leave that goroutine finishing one mask
// on its own state; it ends without side effects.
type Processor struct {
	f     *Factory
	spec  Spec
	m     *grammar.Matcher
	ph    phase
	tail  []byte // free text seen since the phase began (a tag may span tokens)
	vocab int    // logits per row

	bits    []uint64
	allowed int  // tokens set in bits
	ready   bool // bits hold the mask of the matcher's state
	wg      sync.WaitGroup
}

func newProcessor(f *Factory, spec Spec, g *grammar.Grammar, vocab int) *Processor {
	p := &Processor{f: f, spec: spec, m: grammar.NewMatcher(g, f.vocab), vocab: vocab,
		bits: make([]uint64, f.vocab.MaskWords())}
	switch {
	case spec.ThinkOpen:
		p.ph = pThink
	case spec.ThinkOptional && f.thinkID >= 0:
		p.ph = pFirst
	case spec.Trigger != "":
		p.ph = pTrigger
	default:
		p.ph = pActive
	}
	p.prepare()
	return p
}

// prepare starts computing the next mask when the grammar will decide it.
func (p *Processor) prepare() {
	p.ready = false
	if (p.ph != pActive && p.ph != pFirst) || p.m.Done() {
		return
	}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		p.allowed = p.m.FillMask(p.bits)
		p.ready = true
	}()
}

// Wait returns once the next mask is computed (or none is being): a caller
// timing a step with no credit for the overlap (engine.BenchConstrained)
// waits for it.
func (p *Processor) Wait() { p.wg.Wait() }

// Process masks row to the tokens the grammar allows (plus "<think>" as a
// first token when the model may think).
func (p *Processor) Process(row []float32) error {
	p.wg.Wait()
	if p.ph == pThink || p.ph == pTrigger {
		return nil
	}
	if !p.ready {
		p.allowed, p.ready = p.m.FillMask(p.bits), true
	}
	think := int32(-1)
	if p.ph == pFirst {
		think = p.f.thinkID
	}
	if err := p.m.Err(); err != nil {
		return fmt.Errorf("constraint: %w", err)
	}
	if p.allowed == 0 && think < 0 {
		return errors.New("constraint: the grammar allows no token here")
	}
	applyMask(row, p.bits, think, p.f.negs(len(row)))
	return nil
}

// applyMask sets every logit whose bit is clear to -Inf, except keep.
// negs is a row of -Inf at least as long as row: a run of all-clear words
// (most of the row under a JSON grammar) is one copy from it, which is
// several times faster than storing the logits one by one.
func applyMask(row []float32, bits []uint64, keep int32, negs []float32) {
	var keepV float32
	if keep >= 0 && int(keep) < len(row) {
		keepV = row[keep]
	}
	n := min(len(row), len(bits)*64)
	neg := float32(math.Inf(-1))
	for w := 0; w*64 < n; {
		base := w * 64
		switch word := bits[w]; word {
		case ^uint64(0):
			w++
		case 0:
			end := w + 1
			for end*64 < n && bits[end] == 0 {
				end++
			}
			copy(row[base:min(end*64, n)], negs)
			w = end
		default:
			for i := base; i < min(base+64, n); i++ {
				if word>>(i-base)&1 == 0 {
					row[i] = neg
				}
			}
			w++
		}
	}
	copy(row[n:], negs) // ids past the tokenizer's
	if keep >= 0 && int(keep) < len(row) {
		row[keep] = keepV
	}
}

// Accept advances past tok: through the free text while the answer has
// not started, through the grammar after.
func (p *Processor) Accept(tok int32) error {
	p.wg.Wait()
	switch p.ph {
	case pFirst:
		if tok == p.f.thinkID {
			p.ph, p.tail = pThink, nil
			return nil
		}
		p.ph = pActive
		if err := p.accept(tok); err != nil {
			return err
		}
	case pThink, pTrigger:
		if err := p.free(p.f.tok.TokenBytes(tok)); err != nil {
			return err
		}
	case pActive:
		if err := p.accept(tok); err != nil {
			return err
		}
	}
	p.prepare()
	return nil
}

func (p *Processor) accept(tok int32) error {
	if err := p.m.Accept(tok); err != nil {
		return fmt.Errorf("constraint: %w", err)
	}
	return nil
}

// free reads free text, looking for the tag that ends the phase (</think>
// or the trigger); what follows the tag belongs to the next phase.
func (p *Processor) free(b []byte) error {
	tag := []byte(p.spec.Trigger)
	if p.ph == pThink {
		tag = []byte(ThinkCloseTag)
	}
	p.tail = append(p.tail, b...)
	i := bytes.Index(p.tail, tag)
	if i < 0 {
		if keep := len(tag) - 1; len(p.tail) > keep {
			p.tail = append(p.tail[:0], p.tail[len(p.tail)-keep:]...)
		}
		return nil
	}
	rest := append([]byte(nil), p.tail[i+len(tag):]...)
	p.tail = nil
	if p.ph == pThink && p.spec.Trigger != "" {
		p.ph = pTrigger
		if len(rest) == 0 {
			return nil
		}
		return p.free(rest)
	}
	p.ph = pActive
	// Spaces between the tag and the answer are not the answer's (the
	// reasoning parser drops them too).
	rest = bytes.TrimLeft(rest, " \t\r\n")
	if len(rest) > 0 {
		if err := p.m.AcceptBytes(rest); err != nil {
			return fmt.Errorf("constraint: the text after %q: %w", tag, err)
		}
	}
	return nil
}
