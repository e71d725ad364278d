// Package constrain is a request's structured-output constraint inside
// infer: a grammar (pkg/grammar) applied to the answer as an engine logits
// processor. It decides where the answer starts — after a thinking block,
// after a tool-call trigger — masks the logits there, and computes the
// next step's mask on its own goroutine while the engine runs the forward
// pass, so constrained requests do not lengthen the batch's step.
package constrain

import (
	"encoding/json"
	"fmt"
	"math"
	"sync"

	"github.com/lightllm-go/lightllm/pkg/grammar"
)

// Spec is a constraint as it travels from the apiserver to infer (in the
// request's extras, as JSON).
type Spec struct {
	Grammar grammar.Spec `json:"grammar"`
	// Trigger: constraining starts once this text has been generated (auto
	// tool calls: the format's call tag); "" starts at once.
	Trigger string `json:"trigger,omitempty"`
	// ThinkOpen: the prompt opened a thinking block, so constraining (or
	// waiting for Trigger) starts after "</think>".
	ThinkOpen bool `json:"think_open,omitempty"`
	// ThinkOptional: the model may open a thinking block with its first
	// token ("<think>"), which then runs to "</think>" unconstrained.
	ThinkOptional bool `json:"think_optional,omitempty"`
}

// Marshal encodes s for the extras.
func (s Spec) Marshal() []byte {
	b, _ := json.Marshal(s) // plain strings and bools: cannot fail
	return b
}

// ParseSpec decodes what Marshal wrote.
func ParseSpec(b []byte) (Spec, error) {
	var s Spec
	if err := json.Unmarshal(b, &s); err != nil {
		return Spec{}, fmt.Errorf("constraint spec: %w", err)
	}
	return s, nil
}

// Tags of the thinking block.
const (
	ThinkOpenTag  = "<think>"
	ThinkCloseTag = "</think>"
)

// TokenSource is what a Factory needs of a tokenizer.
type TokenSource interface {
	grammar.TokenSource
	TokenID(token string) (int32, bool)
}

// Factory makes the processors of one model's requests: it holds the
// grammar vocabulary (built on first use: a 128k-token trie takes a
// moment) and a cache of compiled grammars. Safe for concurrent use.
type Factory struct {
	tok   TokenSource
	eos   []int32
	cache *grammar.Cache
	opts  grammar.Options

	once    sync.Once
	vocab   *grammar.Vocab
	thinkID int32 // the "<think>" token, -1 if the tokenizer has none

	negMu  sync.Mutex
	negRow []float32 // all -Inf, read-only once made: what masking copies from
}

// negs returns a row of at least n -Inf values (shared, never written).
func (f *Factory) negs(n int) []float32 {
	f.negMu.Lock()
	defer f.negMu.Unlock()
	if len(f.negRow) < n {
		f.negRow = make([]float32, n)
		for i := range f.negRow {
			f.negRow[i] = float32(math.Inf(-1))
		}
	}
	return f.negRow
}

// NewFactory serves a model whose tokenizer is tok and whose generation
// stops on eos (the engine's EOS ids: the grammar allows them exactly where
// the answer may end).
func NewFactory(tok TokenSource, eos []int32) *Factory {
	return &Factory{tok: tok, eos: append([]int32(nil), eos...), cache: grammar.NewCache(256), thinkID: -1}
}

func (f *Factory) init() {
	f.once.Do(func() {
		f.vocab = grammar.VocabFromTokenizer(f.tok, f.eos...)
		if id, ok := f.tok.TokenID(ThinkOpenTag); ok {
			f.thinkID = id
		}
	})
}

// Compile checks that spec can be enforced (an error names what cannot)
// and keeps its grammar for New.
func (f *Factory) Compile(spec Spec) (*grammar.Grammar, error) {
	g, err := f.cache.Compile(spec.Grammar, f.opts)
	if err != nil {
		return nil, err
	}
	return g, nil
}

// New returns a constructor of processors for spec (the engine calls it
// whenever it rebuilds the request's state); vocabSize is the model's
// logit row length.
func (f *Factory) New(spec Spec, vocabSize int) (func() (*Processor, error), error) {
	g, err := f.Compile(spec)
	if err != nil {
		return nil, err
	}
	f.init()
	if vocabSize < f.vocab.Size() {
		return nil, fmt.Errorf("constraint: the model's %d logits are fewer than the tokenizer's %d tokens", vocabSize, f.vocab.Size())
	}
	return func() (*Processor, error) { return newProcessor(f, spec, g, vocabSize), nil }, nil
}
