package model

import "github.com/lightllm-go/lightllm/pkg/tensor"

// KV is a token-granular key/value store: for every layer, Slots rows of
// KVHeads*HeadDim keys and as many values. A sequence owns a list of slot
// indexes (one per position, in any order), so memory is shared by all
// sequences at token granularity (LightLLM's TokenAttention); which slots
// are free is tracked outside (pkg/kvcache).
type KV struct {
	layers, slots, dim int
	f16, q8            bool
	k32, v32           []float32 // [layers][slots][dim] when f32
	k16, v16           []uint16  // same layout, IEEE half, when f16
	k8, v8             []byte    // [layers][slots][dim/32 q8_0 blocks] when q8
	row8               int       // bytes of one (layer, slot) row of q8_0 blocks
}

// NewKV allocates a KV store of the given number of token slots.
func (m *Model) NewKV(slots int) *KV {
	slots = max(slots, 0)
	c := &m.cfg
	dim := c.KVHeads * c.HeadDim
	kv := &KV{layers: c.Layers, slots: slots, dim: dim, f16: m.kvF16, q8: m.kvQ8}
	n := c.Layers * slots * dim
	switch {
	case m.kvQ8:
		kv.row8 = dim / tensor.QK * q8Block
		kv.k8, kv.v8 = make([]byte, c.Layers*slots*kv.row8), make([]byte, c.Layers*slots*kv.row8)
	case m.kvF16:
		kv.k16, kv.v16 = make([]uint16, n), make([]uint16, n)
	default:
		kv.k32, kv.v32 = make([]float32, n), make([]float32, n)
	}
	return kv
}

// Slots is the number of token slots.
func (kv *KV) Slots() int { return kv.slots }

// KVBytesPerToken is the KV memory one token slot takes over all layers.
func (m *Model) KVBytesPerToken() int {
	c := &m.cfg
	dim := c.KVHeads * c.HeadDim
	switch {
	case m.kvQ8:
		return 2 * c.Layers * dim / tensor.QK * q8Block
	case m.kvF16:
		return 2 * c.Layers * dim * 2
	}
	return 2 * c.Layers * dim * 4
}

// q8Block is the bytes of one q8_0 block: an f16 scale and 32 int8 values.
const q8Block = 2 + tensor.QK

// off8 is the byte offset of (layer, slot)'s first q8_0 block.
func (kv *KV) off8(layer int, slot int32) int { return (layer*kv.slots + int(slot)) * kv.row8 }

// off is the index of (layer, slot)'s first element.
func (kv *KV) off(layer int, slot int32) int { return (layer*kv.slots + int(slot)) * kv.dim }
