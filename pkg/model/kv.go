package model

import (
	"fmt"

	"github.com/lightllm-go/lightllm/pkg/tensor"
)

// KV is a token-granular key/value store: for every layer, Slots rows of
// KVHeads*HeadDim keys and as many values. A sequence owns a list of slot
// indexes (one per position, in any order), so memory is shared by all
// sequences at token granularity (LightLLM's TokenAttention); which slots
// are free is tracked outside (pkg/kvcache).
//
// A windowed store (NewWindowKV) keeps the sliding-window (local) layers
// apart, in a second store with slot indexes of its own (Seq.Local): a
// local layer only ever reads the last Window positions of a sequence, so
// the caller frees a position's local slot once it falls out of every
// reader's window, and the local store holds about window + chunk slots per
// sequence instead of its whole context (llama.cpp's iswa cache, vLLM's
// sliding-window KV groups). Its memory grows on demand to the highest
// local slot ever used, so it costs what the load really needed.
type KV struct {
	layers, slots, dim int
	f16, q8            bool
	k32, v32           []float32 // [layers][slots][dim] when f32 ([slots][layers][dim] when bySlot)
	k16, v16           []uint16  // same layout, IEEE half, when f16
	k8, v8             []byte    // [layers][slots][dim/32 q8_0 blocks] when q8
	row8               int       // bytes of one (layer, slot) row of q8_0 blocks

	// A windowed store: local holds the local layers, the arrays above the
	// others; store[l] is model layer l's index in the store it lives in.
	local   *KV
	isLocal []bool
	store   []int
	// The local store: rows laid out slot-major so that it grows by
	// appending, up to maxSlots.
	bySlot   bool
	maxSlots int
}

// NewKV allocates a KV store of the given number of token slots, every
// layer in one slot space.
func (m *Model) NewKV(slots int) *KV {
	slots = max(slots, 0)
	c := &m.cfg
	kv := m.newStore(c.Layers, slots)
	kv.layers = c.Layers
	return kv
}

// newStore allocates layers x slots rows.
func (m *Model) newStore(layers, slots int) *KV {
	c := &m.cfg
	dim := c.KVHeads * c.HeadDim
	kv := &KV{layers: layers, slots: slots, dim: dim, f16: m.kvF16, q8: m.kvQ8}
	n := layers * slots * dim
	switch {
	case m.kvQ8:
		kv.row8 = dim / tensor.QK * q8Block
		kv.k8, kv.v8 = make([]byte, layers*slots*kv.row8), make([]byte, layers*slots*kv.row8)
	case m.kvF16:
		kv.k16, kv.v16 = make([]uint16, n), make([]uint16, n)
	default:
		kv.k32, kv.v32 = make([]float32, n), make([]float32, n)
	}
	return kv
}

// LocalWindow is the longest sliding window of the model's local layers:
// a query at position p reads their K/V at p-LocalWindow+1 .. p only. 0
// when every layer attends to the whole context.
func (m *Model) LocalWindow() int {
	w := 0
	for i := range m.layers {
		w = max(w, m.layers[i].window)
	}
	return w
}

// NewWindowKV allocates a store of slots token slots for the global
// layers and up to slots local slots (Seq.Local) for the sliding-window
// layers, whose memory is allocated as slots are used. A model without
// local layers gets NewKV's store.
func (m *Model) NewWindowKV(slots int) *KV {
	slots = max(slots, 0)
	nLocal := 0
	isLocal := make([]bool, len(m.layers))
	store := make([]int, len(m.layers))
	for i := range m.layers {
		if m.layers[i].window > 0 {
			isLocal[i], store[i] = true, nLocal
			nLocal++
		} else {
			store[i] = i - nLocal
		}
	}
	if nLocal == 0 {
		return m.NewKV(slots)
	}
	kv := m.newStore(len(m.layers)-nLocal, slots)
	kv.layers = len(m.layers)
	kv.local = m.newStore(nLocal, 0)
	kv.local.bySlot, kv.local.maxSlots = true, slots
	kv.isLocal, kv.store = isLocal, store
	return kv
}

// Slots is the number of token slots.
func (kv *KV) Slots() int { return kv.slots }

// Windowed reports whether the local layers have a store of their own
// (Seq.Local is then required).
func (kv *KV) Windowed() bool { return kv != nil && kv.local != nil }

// LocalSlots is the number of local slots the windowed store has memory
// for now: the highest local slot used so far + 1 (0 when not windowed).
func (kv *KV) LocalSlots() int {
	if !kv.Windowed() {
		return 0
	}
	return kv.local.slots
}

// Bytes is the memory the store's keys and values take now.
func (kv *KV) Bytes() int64 {
	if kv == nil {
		return 0
	}
	n := 2 * (int64(len(kv.k32))*4 + int64(len(kv.k16))*2 + int64(len(kv.k8)))
	if kv.local != nil {
		n += kv.local.Bytes()
	}
	return n
}

// at is the store holding model layer l and l's index in it.
func (kv *KV) at(l int) (*KV, int) {
	if kv.local == nil {
		return kv, l
	}
	if kv.isLocal[l] {
		return kv.local, kv.store[l]
	}
	return kv, kv.store[l]
}

// seqSlots is the slot list of sq for model layer l.
func (kv *KV) seqSlots(sq *Seq, l int) []int32 {
	if kv.local != nil && kv.isLocal[l] {
		return sq.Local
	}
	return sq.Slots
}

// growLocal makes the local store hold slots [0, n) (n <= maxSlots),
// growing by a quarter at least so that appends stay amortised.
func (kv *KV) growLocal(n int) error {
	s := kv.local
	if n <= s.slots {
		return nil
	}
	if n > s.maxSlots {
		return fmt.Errorf("forward: local slot %d outside the KV store (%d slots)", n-1, s.maxSlots)
	}
	n = min(s.maxSlots, max(n, s.slots+s.slots/4+64))
	add := (n - s.slots) * s.layers
	switch {
	case s.q8:
		s.k8, s.v8 = append(s.k8, make([]byte, add*s.row8)...), append(s.v8, make([]byte, add*s.row8)...)
	case s.f16:
		s.k16, s.v16 = append(s.k16, make([]uint16, add*s.dim)...), append(s.v16, make([]uint16, add*s.dim)...)
	default:
		s.k32, s.v32 = append(s.k32, make([]float32, add*s.dim)...), append(s.v32, make([]float32, add*s.dim)...)
	}
	s.slots = n
	return nil
}

// q8Block is the bytes of one q8_0 block: an f16 scale and 32 int8 values.
const q8Block = 2 + tensor.QK

// row is the index of (layer, slot)'s row in the store's arrays.
func (kv *KV) row(layer int, slot int32) int {
	if kv.bySlot {
		return int(slot)*kv.layers + layer
	}
	return layer*kv.slots + int(slot)
}

// off8 is the byte offset of (layer, slot)'s first q8_0 block.
func (kv *KV) off8(layer int, slot int32) int { return kv.row(layer, slot) * kv.row8 }

// off is the index of (layer, slot)'s first element.
func (kv *KV) off(layer int, slot int32) int { return kv.row(layer, slot) * kv.dim }
