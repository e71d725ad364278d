package engine

import (
	"errors"
	"fmt"
	"math"

	"github.com/lightllm-go/lightllm/pkg/model"
)

// Embedding requests (sampler.Params.Embed) are prefilled like any prompt,
// in the same canonical chunks, but sample nothing: each chunk hands the
// model a buffer for its final hidden states (after the final norm), the
// last chunk completes the pooled vector, and the request finishes in the
// step that computed its last prompt token, with one Output carrying the
// vector. Such a request neither reuses nor leaves prompt-cache KV: a cached
// prefix would skip the rows mean and CLS pooling need, and a prompt kept
// only to be embedded again would hold KV generation could use; its KV
// returns to the pool at once.

// Pool says how an embedding is pooled over a prompt's final hidden states.
type Pool uint8

const (
	PoolNone Pool = iota // the engine serves no embeddings
	PoolLast             // the last token's
	PoolMean             // the mean over every token
	PoolCLS              // the first token's
)

// EmbedOptions configure embedding requests; the zero value refuses them.
type EmbedOptions struct {
	Pool      Pool
	Normalize bool // L2-normalise the pooled vector
}

// ErrNoEmbeddings: an embedding request to an engine that serves none.
var ErrNoEmbeddings = errors.New("engine: embeddings are not served")

// hiddenForwarder is a Forwarder that honours model.Seq.Hidden.
type hiddenForwarder interface{ ForwardsHidden() bool }

// ForwardsHidden reports whether f writes Seq.Hidden (a wrapper of a
// Forwarder passes its model's answer on with it).
func ForwardsHidden(f Forwarder) bool {
	h, ok := f.(hiddenForwarder)
	return ok && h.ForwardsHidden()
}

// checkEmbed refuses an embedding request the engine cannot serve.
func (e *Engine) checkEmbed(id uint64) error {
	if e.opts.Embed.Pool == PoolNone {
		return fmt.Errorf("%w (request %d): no pooling configured", ErrNoEmbeddings, id)
	}
	if !ForwardsHidden(e.m) {
		return fmt.Errorf("%w (request %d): this model backend does not return hidden states", ErrNoEmbeddings, id)
	}
	return nil
}

// hiddenFor sets seq's hidden-state buffer for r's next chunk of n tokens
// from position r.kvLen: every chunk for mean pooling, the first for CLS,
// the last for last-token pooling. A chunk at position 0 (the first, or the
// first again after a pause for lack of KV) starts the pooled sum afresh.
func (e *Engine) hiddenFor(r *reqState, seq *model.Seq, n int) {
	if !r.params.Embed {
		return
	}
	if r.kvLen == 0 {
		if r.pooled == nil {
			r.pooled = make([]float32, e.cfg.Hidden)
		}
		clear(r.pooled)
	}
	switch e.opts.Embed.Pool {
	case PoolMean:
		seq.Hidden, seq.HiddenMode = r.pooled, model.HiddenSum
	case PoolCLS:
		if r.kvLen == 0 {
			seq.Hidden, seq.HiddenMode = r.pooled, model.HiddenFirst
		}
	default:
		if r.kvLen+n == r.promptLen {
			seq.Hidden, seq.HiddenMode = r.pooled, model.HiddenLast
		}
	}
}

// embedding finishes r's pooled vector: the mean divides by the prompt's
// length, then the L2 normalisation. It returns a copy the caller owns.
func (e *Engine) embedding(r *reqState) []float32 {
	v := append([]float32(nil), r.pooled...)
	if e.opts.Embed.Pool == PoolMean {
		inv := 1 / float32(r.promptLen)
		for i := range v {
			v[i] *= inv
		}
	}
	if e.opts.Embed.Normalize {
		normalizeL2(v)
	}
	return v
}

// normalizeL2 scales v to unit Euclidean length (sentence-transformers'
// Normalize, with torch's eps of 1e-12 so that a zero vector stays zero).
func normalizeL2(v []float32) {
	var ss float64
	for _, x := range v {
		ss += float64(x) * float64(x)
	}
	inv := 1 / math.Max(math.Sqrt(ss), 1e-12)
	for i := range v {
		v[i] = float32(float64(v[i]) * inv)
	}
}
