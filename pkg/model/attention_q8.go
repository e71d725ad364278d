package model

import (
	"encoding/binary"
	"math"

	"github.com/lightllm-go/lightllm/pkg/tensor"
)

// A q8_0 KV store is llama.cpp's -ctk q8_0 -ctv q8_0: each (layer, slot)
// row of keys and of values is quantized on store as ggml's set_rows does
// (quantize_row_q8_0), and attention runs llama.cpp's one-query flash
// attention for quantized caches (ggml_compute_forward_flash_attn_ext_f16_one_chunk;
// its tiled path takes only f16/f32 caches): the query converted to q8_0,
// each score ggml_vec_dot_q8_0_q8_0, an online softmax with glibc's expf,
// the values dequantized to f32 and accumulated in f32 with fused
// multiply-adds (ggml_vec_mad_f32).

// quantizeKV stores one row of len(x) values as q8_0 blocks in dst.
func (m *Model) quantizeKV(worker int, dst []byte, x []float32) {
	ws := &m.s.work[worker]
	nb := len(x) / tensor.QK
	if len(ws.kvq) < len(x) {
		ws.kvq, ws.kvd = make([]int8, len(x)), make([]float32, nb)
	}
	qs, ds := ws.kvq[:len(x)], ws.kvd[:nb]
	tensor.QuantizeActQ8(x, qs, ds)
	for b := 0; b < nb; b++ {
		blk := dst[b*q8Block : (b+1)*q8Block]
		binary.LittleEndian.PutUint16(blk, tensor.F32ToF16(ds[b]))
		for j, q := range qs[b*tensor.QK : (b+1)*tensor.QK] {
			blk[2+j] = byte(q)
		}
	}
}

// headQ8 is attention for one row and KV head g over a q8_0 store: every
// query head of the group against each key in order, the key and value
// blocks read once for the group.
func (t *attnTask) headQ8(worker, g int, slots []int32, qg, og []float32) {
	c := &t.m.cfg
	hd := c.HeadDim
	group := len(qg) / hd
	nb := hd / tensor.QK
	scale, cp := t.m.kqScale, c.AttnSoftcap
	if cp != 0 {
		scale /= cp
	}
	kv := t.kv
	w := &t.q8[worker]
	w.grow(group, hd)
	tensor.QuantizeActQ8(qg, w.qs[:group*hd], w.qd[:group*nb])
	acc, vrow := w.acc[:group*hd], w.v[:hd]
	clear(acc)
	M, S := w.m[:group], w.s[:group]
	for h := range M {
		M[h], S[h] = float32(math.Inf(-1)), 0
	}
	headOff := g * nb * q8Block
	for _, slot := range slots {
		o := kv.off8(t.layer, slot) + headOff
		kb, vb := kv.k8[o:o+nb*q8Block], kv.v8[o:o+nb*q8Block]
		dequantQ8(vrow, vb)
		for h := 0; h < group; h++ {
			s := tensor.DotQ8(kb, w.qs[h*hd:(h+1)*hd], w.qd[h*nb:(h+1)*nb]) * scale
			if cp != 0 {
				s = cp * tanhf(s)
			}
			a := acc[h*hd : (h+1)*hd]
			ms, vs := float32(1), float32(1)
			if s > M[h] {
				ms = tensor.Expf(M[h] - s)
				M[h] = s
				for d := range a {
					a[d] *= ms
				}
			} else {
				vs = tensor.Expf(s - M[h])
			}
			tensor.MadF32GGML(a, vrow, vs)
			S[h] = float32(S[h]*ms) + vs
		}
	}
	for h := 0; h < group; h++ {
		o, a := og[h*hd:(h+1)*hd], acc[h*hd:(h+1)*hd]
		if ms := t.sink(g*group+h, M[h], &S[h], false); ms != 1 {
			for d := range a {
				a[d] *= ms
			}
		}
		inv := float32(0)
		if S[h] != 0 {
			inv = 1 / S[h]
		}
		for d := range o {
			o[d] = a[d] * inv
		}
	}
}

// dequantQ8 is dequantize_row_q8_0: value = int8 * f16 scale.
func dequantQ8(dst []float32, src []byte) {
	for b := 0; b < len(dst)/tensor.QK; b++ {
		blk := src[b*q8Block : (b+1)*q8Block]
		d := tensor.F16ToF32(binary.LittleEndian.Uint16(blk))
		for j := 0; j < tensor.QK; j++ {
			dst[b*tensor.QK+j] = float32(int8(blk[2+j])) * d
		}
	}
}

// q8Scratch is one worker's buffers for headQ8.
type q8Scratch struct {
	qs     []int8
	qd     []float32
	acc, v []float32
	m, s   []float32
}

func (w *q8Scratch) grow(group, hd int) {
	if len(w.acc) >= group*hd && len(w.v) >= hd {
		return
	}
	w.qs, w.qd = make([]int8, group*hd), make([]float32, group*hd/tensor.QK)
	w.acc, w.v = make([]float32, group*hd), make([]float32, hd)
	w.m, w.s = make([]float32, group), make([]float32, group)
}

// With a quantized cache llama.cpp rotates attention by a Walsh-Hadamard
// matrix (llama_kv_cache's attn_rot_k / attn_rot_v, on when the head size
// is a multiple of 64): after RoPE, queries and keys are multiplied by the
// n x n Hadamard matrix, n the largest power of two >= 64 dividing the head
// size, values by the 64 x 64 one, and the attention output by the 64 x 64
// one again (it is its own inverse), which spreads outliers across a
// block before it is quantized. ggml computes the products as a fast
// Walsh-Hadamard transform (ggml_compute_forward_fwht_f32); fwht is that.

// kvRotation reports the rotation sizes (0: no rotation).
func (m *Model) kvRotation() (nk, nv int) {
	hd := m.cfg.HeadDim
	if !m.kvQ8 || hd%64 != 0 {
		return 0, 0
	}
	nk = 64
	for hd%(2*nk) == 0 {
		nk *= 2
	}
	return nk, 64
}

// fwhtRows transforms every consecutive n values of x: first scaled by
// 1/sqrt(n), then butterflies (u+v, u-v) of span 1, 2, 4, ... n/2.
func fwhtRows(x []float32, n int) {
	scale := 1 / float32(math.Sqrt(float64(n)))
	for r := 0; r+n <= len(x); r += n {
		row := x[r : r+n]
		for j := range row {
			row[j] *= scale
		}
		for span := 1; span < n; span <<= 1 {
			for i := 0; i < n; i += 2 * span {
				for j := i; j < i+span; j++ {
					u, v := row[j], row[j+span]
					row[j], row[j+span] = u+v, u-v
				}
			}
		}
	}
}
