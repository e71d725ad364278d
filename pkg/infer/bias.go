package infer

import (
	"fmt"
	"math"

	"github.com/lightllm-go/lightllm/pkg/engine"
	"github.com/lightllm-go/lightllm/shm"
)

// biasProcessor is OpenAI's logit_bias: each entry's value is added to its
// token's logit before the sampler sees the row, so greedy decoding obeys
// it too. It has no state, so a replayed request (restart, eviction) gets
// exactly the same rows.
type biasProcessor []shm.TokenBias

func (b biasProcessor) Process(row []float32) error {
	for _, e := range b {
		if int(e.ID) >= len(row) {
			return fmt.Errorf("logit_bias token %d: the model has %d logits", e.ID, len(row))
		}
		row[e.ID] += e.Bias
	}
	return nil
}

func (biasProcessor) Accept(int32) error { return nil }

// newBias is the engine's factory for a request's bias map.
func newBias(bias []shm.TokenBias) func() (engine.LogitsProcessor, error) {
	p := biasProcessor(bias)
	return func() (engine.LogitsProcessor, error) { return p, nil }
}

// allowProcessor is LightLLM's allowed_token_ids: every logit but the
// listed ones (sorted, distinct) is masked to -Inf. Stateless like the
// bias, so replay rebuilds it exactly.
type allowProcessor []int32

func (a allowProcessor) Process(row []float32) error {
	if last := a[len(a)-1]; int(last) >= len(row) {
		return fmt.Errorf("allowed_token_ids token %d: the model has %d logits", last, len(row))
	}
	next := 0
	for id := range row {
		if next < len(a) && int(a[next]) == id {
			next++
			continue
		}
		row[id] = float32(math.Inf(-1))
	}
	return nil
}

func (allowProcessor) Accept(int32) error { return nil }

// newAllowed is the engine's factory for a request's allowed ids.
func newAllowed(ids []int32) func() (engine.LogitsProcessor, error) {
	p := allowProcessor(ids)
	return func() (engine.LogitsProcessor, error) { return p, nil }
}

// processorChain runs several processors of one request in order (a bias
// map, then a grammar: a token the grammar masks stays -Inf whatever its
// bias).
type processorChain []engine.LogitsProcessor

func (c processorChain) Process(row []float32) error {
	for _, p := range c {
		if err := p.Process(row); err != nil {
			return err
		}
	}
	return nil
}

func (c processorChain) Accept(tok int32) error {
	for _, p := range c {
		if err := p.Accept(tok); err != nil {
			return err
		}
	}
	return nil
}

// chainFactories combines processor factories (nil ones skipped) into the
// one engine.Request.NewProcessor; nil when there are none.
func chainFactories(fs ...func() (engine.LogitsProcessor, error)) func() (engine.LogitsProcessor, error) {
	var live []func() (engine.LogitsProcessor, error)
	for _, f := range fs {
		if f != nil {
			live = append(live, f)
		}
	}
	switch len(live) {
	case 0:
		return nil
	case 1:
		return live[0]
	}
	return func() (engine.LogitsProcessor, error) {
		c := make(processorChain, 0, len(live))
		for _, f := range live {
			p, err := f()
			if err != nil {
				return nil, err
			}
			c = append(c, p)
		}
		return c, nil
	}
}
