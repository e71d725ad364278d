package infer

import (
	"fmt"
	"sync"

	"github.com/lightllm-go/lightllm/pkg/constrain"
	"github.com/lightllm-go/lightllm/pkg/engine"
	"github.com/lightllm-go/lightllm/pkg/model"
)

// constraints turns a slot's constraint extras into the request's logits
// processor. The tokenizer (and the grammar vocabulary over it) is loaded
// on the first constrained request, so a server that never sees one pays
// nothing.
type constraints struct {
	modelDir string
	vocab    int     // logits per row
	eos      []int32 // the engine's end ids

	once sync.Once
	f    *constrain.Factory
	err  error
}

func newConstraints(modelDir string, mc engine.ModelConfig) *constraints {
	return &constraints{modelDir: modelDir, vocab: mc.Vocab, eos: mc.EOS}
}

// processor returns the engine's processor factory for an encoded
// constrain.Spec.
func (c *constraints) processor(spec []byte) (func() (engine.LogitsProcessor, error), error) {
	s, err := constrain.ParseSpec(spec)
	if err != nil {
		return nil, err
	}
	c.once.Do(func() {
		tok, err := model.LoadTokenizer(c.modelDir)
		if err != nil {
			c.err = fmt.Errorf("constraint: %w", err)
			return
		}
		c.f = constrain.NewFactory(tok, c.eos)
	})
	if c.err != nil {
		return nil, c.err
	}
	mk, err := c.f.New(s, c.vocab)
	if err != nil {
		return nil, err
	}
	return func() (engine.LogitsProcessor, error) { return mk() }, nil
}
