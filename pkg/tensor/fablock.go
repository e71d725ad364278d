package tensor

// Query-blocked kernels of ggml's tiled flash attention. ggml's tiled path
// (ggml_compute_forward_flash_attn_ext_tiled) multiplies a tile of queries
// by a tile of FATile keys with simd_gemm: every score is one fused
// multiply-add chain over the key dimension in order, and every output
// element one chain over the tile's keys in order. Those chains do not
// depend on how many queries share a pass, so a pass can hold FABlock
// query vectors (rows of one sequence and the query heads sharing a KV
// head) and read each converted key and value once for all of them — the
// same bits as one query at a time, several times fewer loads and no
// latency-bound single chains.

// FABlock is the number of query vectors one blocked pass computes
// (simd_gemm's AVX2 microkernel height).
const FABlock = 6

// TileKQBlock sets out[r*FATile+j] = scale * Σ_d kt[d*FATile+j]*q[r*dk+d]
// (the chain in d order, then the scale) for the FABlock query vectors of
// q ([FABlock][dk]) against a transposed key tile kt ([dk][FATile]).
func TileKQBlock(out, kt, q []float32, dk int, scale float32) {
	_ = out[FABlock*FATile-1]
	_ = kt[dk*FATile-1]
	_ = q[FABlock*dk-1]
	tileKQBlock(out, kt, q, dk, scale)
}

// TileVAccBlock adds acc[r*dv+n] += Σ_k p[r*FATile+k]*v[k*dv+n] for the
// FABlock rows, the chain over the tile's FATile keys in order (v is the
// value tile converted to f32, [FATile][dv]; masked keys carry p = 0).
func TileVAccBlock(acc, v, p []float32, dv int) {
	_ = acc[FABlock*dv-1]
	_ = v[FATile*dv-1]
	_ = p[FABlock*FATile-1]
	tileVAccBlock(acc, v, p, dv)
}

func tileKQBlockGeneric(out, kt, q []float32, dk int, scale float32) {
	for r := 0; r < FABlock; r++ {
		qr := q[r*dk : (r+1)*dk]
		for j := 0; j < FATile; j++ {
			var s float32
			for d, qd := range qr {
				s = FMA32(kt[d*FATile+j], qd, s)
			}
			out[r*FATile+j] = s * scale
		}
	}
}

func tileVAccBlockGeneric(acc, v, p []float32, dv int) {
	for r := 0; r < FABlock; r++ {
		a := acc[r*dv : (r+1)*dv]
		for k := 0; k < FATile; k++ {
			w := p[r*FATile+k]
			vk := v[k*dv : (k+1)*dv]
			for n := range a {
				a[n] = FMA32(vk[n], w, a[n])
			}
		}
	}
}

// TileMax is ggml_vec_max_f32 over a tile of FATile scores (the order of
// a maximum does not matter; no NaN reaches it).
func TileMax(x []float32) float32 { return tileMax(x[:FATile]) }

// TileSub subtracts m from every score of a tile (ggml_vec_soft_max_f32's
// x - max before the exp).
func TileSub(x []float32, m float32) { tileSub(x[:FATile], m) }

func tileMaxGeneric(x []float32) float32 {
	m := x[0]
	for _, v := range x[1:] {
		if v > m {
			m = v
		}
	}
	return m
}

func tileSubGeneric(x []float32, m float32) {
	for i := range x {
		x[i] -= m
	}
}

// TileSum is the sum ggml_vec_soft_max_f32 returns for a tile of FATile
// exps: each vector of lanes (ggml's f32 width, 16 or 8) summed
// horizontally in float32, those sums added in float64 in order.
func TileSum(x []float32, lanes int) float64 { return tileSum(x[:FATile], lanes) }

// tileSumGeneric: _mm512_reduce_add_ps (16 lanes: halves folded, then
// (0+4)..(3+7), then (0+2)+(1+3)) or the 8-lane sum of the AVX2 branch.
func tileSumGeneric(x []float32, lanes int) float64 {
	var sum float64
	for i := 0; i+lanes <= len(x); i += lanes {
		var b [8]float32
		if lanes == 16 {
			for l := range b {
				b[l] = x[i+l] + x[i+l+8]
			}
		} else {
			copy(b[:], x[i:i+8])
		}
		c0, c1, c2, c3 := b[0]+b[4], b[1]+b[5], b[2]+b[6], b[3]+b[7]
		sum += float64((c0 + c2) + (c1 + c3))
	}
	return sum
}

// DotQ8 is ggml_vec_dot_q8_0_q8_0 of len(ds) q8_0 blocks w against a
// quantized activation (xq values, ds f16-rounded block scales), as the
// decode matmul computes it.
func DotQ8(w []byte, xq []int8, ds []float32) float32 { return dotQ8(w, xq, ds) }

// MadF32GGML is ggml_vec_mad_f32: acc[i] = fma(x[i], v, acc[i]).
func MadF32GGML(acc, x []float32, v float32) {
	x = x[:len(acc)]
	for i := range acc {
		acc[i] = FMA32(x[i], v, acc[i])
	}
}
