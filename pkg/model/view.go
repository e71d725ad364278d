package model

import "github.com/lightllm-go/lightllm/pkg/tensor"

// Weights is a read-only view of a loaded model's tensors and of how its
// forward pass applies RoPE to them, for a backend that runs the same
// model elsewhere (pkg/cuda uploads it to a GPU). It is the one place that
// knows the files: a backend never reads them itself. The slices and
// matrices are the model's own, valid until Close; callers must not
// modify them.
type Weights struct {
	Embed   *tensor.Matrix // [Vocab x Hidden]
	Output  *tensor.Matrix // [Vocab x Hidden]; == Embed when tied
	OutNorm []float32      // [Hidden]
	Layers  []LayerWeights
	// RopeNeox: rotate (x[i], x[i+d/2]) of each head as the stored q/k
	// rows are ordered; false: adjacent pairs (x[2i], x[2i+1]). Hugging
	// Face llama checkpoints (rotate-half rows) are NEOX here although the
	// CPU pass permutes them to adjacent pairs: both compute the same.
	RopeNeox   bool
	RopeScale  float32   // theta^(-2/HeadDim): frequency ratio between pairs
	FreqScale  float32   // linear RoPE scaling: 1/factor (1 when none)
	FreqFactor []float32 // per-pair frequency divisors [HeadDim/2], nil when none
}

// LayerWeights is one decoder layer's tensors; the optional ones are nil
// when the family has none (Config.QKVBias, Config.QKNorm say which).
type LayerWeights struct {
	AttnNorm, FFNNorm []float32      // [Hidden]
	Wq                *tensor.Matrix // [Heads*HeadDim x Hidden]
	Wk, Wv            *tensor.Matrix // [KVHeads*HeadDim x Hidden]
	Wo                *tensor.Matrix // [Hidden x Heads*HeadDim]
	Gate, Up          *tensor.Matrix // [FFN x Hidden]
	Down              *tensor.Matrix // [Hidden x FFN]
	Bq                []float32      // [Heads*HeadDim]
	Bk, Bv            []float32      // [KVHeads*HeadDim]
	QNorm, KNorm      []float32      // [HeadDim]
}

// Weights returns the view of m's tensors.
func (m *Model) Weights() Weights {
	w := Weights{Embed: m.embed, Output: m.output, OutNorm: m.outNorm, Layers: make([]LayerWeights, len(m.layers)),
		RopeNeox: m.ropeNeox || m.permQK, RopeScale: m.ropeScale, FreqScale: m.freqScale, FreqFactor: m.freqFactor}
	for i := range m.layers {
		ly := &m.layers[i]
		w.Layers[i] = LayerWeights{AttnNorm: ly.attnNorm, FFNNorm: ly.ffnNorm, Wq: ly.wq, Wk: ly.wk, Wv: ly.wv, Wo: ly.wo,
			Gate: ly.wGate, Up: ly.wUp, Down: ly.wDown, Bq: ly.bq, Bk: ly.bk, Bv: ly.bv, QNorm: ly.qNorm, KNorm: ly.kNorm}
	}
	return w
}
