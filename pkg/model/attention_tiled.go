package model

import (
	"math"

	"github.com/lightllm-go/lightllm/pkg/tensor"
)

// useTiledFA reports whether llama.cpp would run a sequence's attention
// with ggml_compute_forward_flash_attn_ext_tiled: a prompt of at least
// GGML_FA_TILE_Q tokens and a head size that is a whole number of f32
// vectors. Its rounding differs from the one-query path (f32 queries,
// sequential dot products, vectorised exp), so the choice must follow it.
func (m *Model) useTiledFA(seqLen int) bool {
	return seqLen >= tensor.FATile && m.cfg.HeadDim%m.lanes == 0
}

// packTiles stores, for every sequence that takes the tiled path, each
// tile of FATile keys per KV head transposed to f32 ([HeadDim][FATile]),
// the layout ggml packs for its score product; the tiles are shared by all
// query rows and query heads of the sequence.
func (m *Model) packTiles(b *Batch, kv *KV, layer int) {
	c, s := &m.cfg, &m.s
	hd := c.HeadDim
	tileSize := hd * tensor.FATile
	if len(s.ktOff) < len(b.Seqs) {
		s.ktOff = make([]int, len(b.Seqs)*5/4+4)
	}
	n := 0
	for si, sq := range b.Seqs {
		s.ktOff[si] = -1
		if m.useTiledFA(sq.Len) {
			s.ktOff[si] = n
			n += c.KVHeads * (len(sq.Slots) + tensor.FATile - 1) / tensor.FATile * tileSize
		}
	}
	if n == 0 {
		return
	}
	if len(s.kt) < n {
		s.kt = make([]float32, n*5/4)
	}
	row := s.krow[:hd]
	for si, sq := range b.Seqs {
		if s.ktOff[si] < 0 {
			continue
		}
		tiles := (len(sq.Slots) + tensor.FATile - 1) / tensor.FATile
		for g := 0; g < c.KVHeads; g++ {
			for tl := 0; tl < tiles; tl++ {
				kt := s.kt[s.ktOff[si]+(g*tiles+tl)*tileSize:][:tileSize]
				clear(kt)
				for j, slot := range sq.Slots[tl*tensor.FATile : min((tl+1)*tensor.FATile, len(sq.Slots))] {
					off := kv.off(layer, slot) + g*hd
					tensor.F16ToF32Row(row, kv.k16[off:off+hd])
					for d, v := range row {
						kt[d*tensor.FATile+j] = v
					}
				}
			}
		}
	}
}

// headTiled is llama.cpp's tiled flash attention for one query row over an
// f16 cache, per query head of the group. For each tile of 64 keys: the
// scores are f32 dot products summed in key-dimension order (simd_gemm)
// then scaled; the running maximum is updated once per tile and the tile's
// exps come from ggml_vec_soft_max_f32 (vectorised exp, float64 sum); the
// values are accumulated in f32 with one fused multiply-add per key.
// Keys past the query's position are masked: they add exact zeros, so only
// the tiles up to the query's position are visited.
func (t *attnTask) headTiled(worker, g, si int, slots []int32, qg, og []float32) {
	m := t.m
	c := &m.cfg
	hd := c.HeadDim
	group := len(qg) / hd
	scale := 1 / float32(math.Sqrt(float64(hd)))
	kv := t.kv
	kq := t.kq[worker][:tensor.FATile]
	vkq := t.vkq[worker][:hd]
	offs := t.offs[worker][:tensor.FATile]
	sq := &t.b.Seqs[si]
	tiles := (len(sq.Slots) + tensor.FATile - 1) / tensor.FATile
	tileSize := hd * tensor.FATile
	base := m.s.ktOff[si] + g*tiles*tileSize
	for h := 0; h < group; h++ {
		q := qg[h*hd : (h+1)*hd]
		clear(vkq)
		S, M := float32(0), float32(math.Inf(-1))
		for tl := 0; tl*tensor.FATile < len(slots); tl++ {
			keys := slots[tl*tensor.FATile : min((tl+1)*tensor.FATile, len(slots))]
			tensor.TileKQ(kq, m.s.kt[base+tl*tileSize:][:tileSize], q, scale)
			for j := len(keys); j < tensor.FATile; j++ {
				kq[j] = float32(math.Inf(-1))
			}
			tileMax := float32(math.Inf(-1))
			for _, v := range kq {
				tileMax = max(tileMax, v)
			}
			if tileMax == float32(math.Inf(-1)) {
				continue
			}
			Mnew := max(M, tileMax)
			if Mnew > M {
				ms := expf(M - Mnew)
				for d := range vkq {
					vkq[d] *= ms
				}
				S *= ms
			}
			M = Mnew
			S = float32(float64(S) + softMaxTile(kq, M, m.lanes))
			for j, slot := range keys {
				offs[j] = kv.off(t.layer, slot) + g*hd
			}
			tensor.TileVAcc(vkq, kv.v16, offs[:len(keys)], kq[:len(keys)])
		}
		inv := float32(0)
		if S != 0 {
			inv = 1 / S
		}
		o := og[h*hd : (h+1)*hd]
		for d := range o {
			o[d] = vkq[d] * inv
		}
	}
}

// softMaxTile is ggml_vec_soft_max_f32 over a tile of 64 scores: each x
// is replaced by exp(x - max) with ggml's vectorised exp, and the
// horizontal float32 sum of each vector is added in float64.
func softMaxTile(x []float32, mx float32, lanes int) float64 {
	for i := range x {
		x[i] -= mx
	}
	tensor.VExpGGML(x, x)
	var sum float64
	for i := 0; i+lanes <= len(x); i += lanes {
		sum += float64(hsumLanes(x[i:i+lanes], lanes))
	}
	return sum
}

// hsumLanes is _mm512_reduce_add_ps (16 lanes) or the 8-lane sum of
// ggml_vec_soft_max_f32's AVX2 branch: halves folded, then (0+2)+(1+3).
func hsumLanes(v []float32, lanes int) float32 {
	var b [8]float32
	if lanes == 16 {
		for l := range b {
			b[l] = v[l] + v[l+8]
		}
	} else {
		copy(b[:], v[:8])
	}
	c0, c1, c2, c3 := b[0]+b[4], b[1]+b[5], b[2]+b[6], b[3]+b[7]
	return (c0 + c2) + (c1 + c3)
}
