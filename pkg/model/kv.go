package model

// KV is a token-granular key/value store: for every layer, Slots rows of
// KVHeads*HeadDim keys and as many values. A sequence owns a list of slot
// indexes (one per position, in any order), so memory is shared by all
// sequences at token granularity (LightLLM's TokenAttention); which slots
// are free is tracked outside (pkg/kvcache).
type KV struct {
	layers, slots, dim int
	f16                bool
	k32, v32           []float32 // [layers][slots][dim] when f32
	k16, v16           []uint16  // same layout, IEEE half, when f16
}

// NewKV allocates a KV store of the given number of token slots.
func (m *Model) NewKV(slots int) *KV {
	slots = max(slots, 0)
	c := &m.cfg
	dim := c.KVHeads * c.HeadDim
	kv := &KV{layers: c.Layers, slots: slots, dim: dim, f16: m.kvF16}
	n := c.Layers * slots * dim
	if m.kvF16 {
		kv.k16, kv.v16 = make([]uint16, n), make([]uint16, n)
	} else {
		kv.k32, kv.v32 = make([]float32, n), make([]float32, n)
	}
	return kv
}

// Slots is the number of token slots.
func (kv *KV) Slots() int { return kv.slots }

// KVBytesPerToken is the KV memory one token slot takes over all layers.
func (m *Model) KVBytesPerToken() int {
	c := &m.cfg
	elem := 4
	if m.kvF16 {
		elem = 2
	}
	return 2 * c.Layers * c.KVHeads * c.HeadDim * elem
}

// off is the index of (layer, slot)'s first element.
func (kv *KV) off(layer int, slot int32) int { return (layer*kv.slots + int(slot)) * kv.dim }
