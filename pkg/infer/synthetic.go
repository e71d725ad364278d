package infer

import (
	"errors"
	"fmt"
	"time"

	"github.com/lightllm-go/lightllm/pkg/engine"
)

// SyntheticModel is the deterministic test backend (--backend synthetic): an
// engine.Forwarder that runs no model. Each sequence's next token is a hash
// of its last token and that token's position, made the only likely token,
// so greedy decoding gives a reproducible stream that depends on nothing but
// the sequence itself (not on the batch, the step or a restart); every
// Forward call takes StepTime. It exists for pipeline tests and overhead
// benchmarks; it is never the default backend.
type SyntheticModel struct {
	Vocab    int
	MaxPos   int
	BOS      int32
	EOS      []int32
	StepTime time.Duration
	// Sleep is time.Sleep; tests replace it.
	Sleep func(time.Duration)
}

// NewSyntheticModel returns a synthetic model over a vocabulary of vocab ids.
func NewSyntheticModel(vocab, maxPos int, bos int32, eos []int32, step time.Duration) (*SyntheticModel, error) {
	if vocab < 2 {
		return nil, fmt.Errorf("synthetic backend: vocabulary of %d ids, need at least 2", vocab)
	}
	if step < 0 {
		return nil, fmt.Errorf("synthetic backend: negative step time %s", step)
	}
	return &SyntheticModel{Vocab: vocab, MaxPos: maxPos, BOS: bos, EOS: append([]int32(nil), eos...), StepTime: step, Sleep: time.Sleep}, nil
}

// Config implements engine.Forwarder.
func (m *SyntheticModel) Config() engine.ModelConfig {
	return engine.ModelConfig{Arch: "synthetic", Vocab: m.Vocab, MaxPos: m.MaxPos, BOS: m.BOS, EOS: m.EOS}
}

// NewKV implements engine.Forwarder: the synthetic model keeps no KV.
func (m *SyntheticModel) NewKV(int) *engine.KV { return nil }

// Forward implements engine.Forwarder.
func (m *SyntheticModel) Forward(b *engine.Batch, _ *engine.KV, logits [][]float32) error {
	if len(b.Positions) != len(b.Tokens) || len(logits) < len(b.Seqs) {
		return errors.New("synthetic backend: malformed batch")
	}
	for i, s := range b.Seqs {
		if !s.WantLogits {
			continue
		}
		last := s.Start + s.Len - 1
		if s.Len < 1 || last >= len(b.Tokens) || len(logits[i]) != m.Vocab {
			return fmt.Errorf("synthetic backend: sequence %d out of the batch", i)
		}
		row := logits[i]
		clear(row)
		row[m.Next(b.Tokens[last], b.Positions[last])] = 20
	}
	if m.StepTime > 0 {
		m.Sleep(m.StepTime)
	}
	return nil
}

// Next is the token that follows tok at position pos: never an EOS id, so a
// synthetic request runs to its max_new_tokens (or a stop id it asked for).
func (m *SyntheticModel) Next(tok, pos int32) int32 {
	h := uint64(uint32(tok))<<32 | uint64(uint32(pos))
	h ^= h >> 33
	h *= 0xff51afd7ed558ccd
	h ^= h >> 33
	h *= 0xc4ceb9fe1a85ec53
	h ^= h >> 33
	for k := 0; ; k++ {
		id := int32((h + uint64(k)) % uint64(m.Vocab))
		if !m.isEOS(id) || k == m.Vocab {
			return id
		}
	}
}

func (m *SyntheticModel) isEOS(id int32) bool {
	for _, e := range m.EOS {
		if e == id {
			return true
		}
	}
	return false
}

// eosOverride replaces a model's end-of-sequence ids with the configured
// --eos_id, as LightLLM takes them from its arguments.
type eosOverride struct {
	engine.Forwarder
	eos []int32
}

// RowClass passes the wrapped model's rounding classes through.
func (e eosOverride) RowClass(n, i int) int { return engine.RowClass(e.Forwarder, n, i) }

// ForwardsHidden passes the wrapped model's hidden-state support through.
func (e eosOverride) ForwardsHidden() bool { return engine.ForwardsHidden(e.Forwarder) }

func (e eosOverride) Config() engine.ModelConfig {
	c := e.Forwarder.Config()
	c.EOS = e.eos
	return c
}

// LocalWindow passes the wrapped model's windowed KV support through
// (engine.WindowedKVer).
func (e eosOverride) LocalWindow() int {
	if w, ok := e.Forwarder.(engine.WindowedKVer); ok {
		return w.LocalWindow()
	}
	return 0
}

// NewWindowKV is the wrapped model's (engine.WindowedKVer).
func (e eosOverride) NewWindowKV(slots int) *engine.KV {
	if w, ok := e.Forwarder.(engine.WindowedKVer); ok {
		return w.NewWindowKV(slots)
	}
	return e.Forwarder.NewKV(slots)
}
