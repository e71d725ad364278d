package model

import (
	"math"

	"github.com/lightllm-go/lightllm/pkg/tensor"
)

// faTile is the key (and query) tile of ggml's tiled flash attention
// (GGML_FA_TILE_KV, GGML_FA_TILE_Q).
const faTile = 64

// useTiledFA reports whether llama.cpp would run a sequence's attention
// with ggml_compute_forward_flash_attn_ext_tiled: a prompt of at least
// GGML_FA_TILE_Q tokens and a head size that is a whole number of f32
// vectors. Its rounding differs from the one-query path (f32 queries,
// sequential dot products, vectorised exp), so the choice must follow it.
func (m *Model) useTiledFA(seqLen int) bool {
	return seqLen >= faTile && m.cfg.HeadDim%m.lanes == 0
}

// headTiled is llama.cpp's tiled flash attention for one query row over an
// f16 cache, per query head of the group. For each tile of 64 keys: the
// scores are f32 dot products summed in key-dimension order (simd_gemm)
// then scaled; the running maximum is updated once per tile and the tile's
// exps come from ggml_vec_soft_max_f32 (vectorised exp, float64 sum); the
// values are accumulated in f32 with one fused multiply-add per key.
// Keys past the query's position are masked: they add exact zeros, so only
// the tiles up to the query's position are visited.
func (t *attnTask) headTiled(worker, g int, slots []int32, qg, og []float32) {
	c := &t.m.cfg
	hd := c.HeadDim
	group := len(qg) / hd
	scale := 1 / float32(math.Sqrt(float64(hd)))
	kv := t.kv
	lanes := t.m.lanes
	kq := t.kq[worker][:faTile]
	vkq := t.vkq[worker][:hd]
	kf := t.kf[worker][:hd]
	for h := 0; h < group; h++ {
		q := qg[h*hd : (h+1)*hd]
		clear(vkq)
		S, M := float32(0), float32(math.Inf(-1))
		for t0 := 0; t0 < len(slots); t0 += faTile {
			keys := slots[t0:min(t0+faTile, len(slots))]
			tileMax := float32(math.Inf(-1))
			for j, slot := range keys {
				off := kv.off(t.layer, slot) + g*hd
				var s float32
				for d, kh := range kv.k16[off : off+hd] {
					kf[d] = tensor.F16ToF32(kh)
					s = fma32(kf[d], q[d], s)
				}
				kq[j] = s * scale
				tileMax = max(tileMax, kq[j])
			}
			for j := len(keys); j < faTile; j++ {
				kq[j] = float32(math.Inf(-1))
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
			S = float32(float64(S) + softMaxTile(kq, M, lanes))
			for j, slot := range keys {
				off := kv.off(t.layer, slot) + g*hd
				w := kq[j]
				for d, vh := range kv.v16[off : off+hd] {
					vkq[d] = fma32(tensor.F16ToF32(vh), w, vkq[d])
				}
			}
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

// softMaxTile is ggml_vec_soft_max_f32 over a tile of 64 scores: each
// x is replaced by exp(x - max) with ggml's vectorised exp, and the sum of
// each vector (its horizontal sum in float32) is added in float64.
func softMaxTile(x []float32, mx float32, lanes int) float64 {
	var sum float64
	var v [16]float32
	for i := 0; i+lanes <= len(x); i += lanes {
		for l := 0; l < lanes; l++ {
			d := x[i+l] - mx
			if lanes == 16 {
				v[l] = vExpf16(d)
			} else {
				v[l] = vExpf8(d)
			}
			x[i+l] = v[l]
		}
		sum += float64(hsumLanes(&v, lanes))
	}
	return sum
}

// hsumLanes is _mm512_reduce_add_ps (16 lanes) or the 8-lane sum of
// ggml_vec_soft_max_f32's AVX2 branch: halves folded, then (0+2)+(1+3).
func hsumLanes(v *[16]float32, lanes int) float32 {
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
