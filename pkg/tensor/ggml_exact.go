// exactness: this file (and ggml_exact_*.go/.s, ggml_matmul.go) reproduces
// the rounding of llama.cpp's CPU backend bit for bit — ggml_vec_dot_f32,
// llamafile's tinyBLAS sgemm and ggml_vec_dot_f16 as GCC compiled them in the
// ggml-cpu variant llama.cpp loads on this CPU — so that greedy decoding
// matches llama.cpp token for token. pkg/model depends on these exact
// summation orders; please change them only together with a llama.cpp
// comparison (pkg/model's TestLlamaCppPrompts).

package tensor

import (
	"math"
	"os"

	"golang.org/x/sys/cpu"
)

// ggmlLanes is the f32 SIMD width of the ggml-cpu variant llama.cpp picks
// on this machine: 16 where its AVX-512 builds qualify (skylakex and later,
// zen4), else 8 (haswell / alderlake AVX2 builds). It fixes the
// accumulation order of every exact kernel.
// LIGHTLLM_GGML_LANES=8 or 16 overrides the detection, to reproduce a
// llama.cpp run made with the other kind of build.
var ggmlLanes = func() int {
	switch os.Getenv("LIGHTLLM_GGML_LANES") {
	case "8":
		return 8
	case "16":
		return 16
	}
	x := cpu.X86
	if x.HasAVX512F && x.HasAVX512CD && x.HasAVX512VL && x.HasAVX512DQ && x.HasAVX512BW {
		return 16
	}
	return 8
}()

// GGMLLanes reports the f32 vector width whose rounding the exact kernels
// reproduce (16 or 8).
func GGMLLanes() int { return ggmlLanes }

// FMA32 returns a*b+c rounded once to float32, as a fused multiply-add
// instruction does.
func FMA32(a, b, c float32) float32 {
	p := float64(a) * float64(b) // exact: 48 significant bits
	s := p + float64(c)
	// Fast path: s is not a float32 midpoint (normal range), so rounding
	// it once more gives the correctly rounded sum.
	if bits := math.Float64bits(s); bits&(1<<29-1) != 1<<28 && bits&(0x7ff<<52) >= 0x381<<52 {
		return float32(s)
	}
	return fma32Slow(p, c, s)
}

func fma32Slow(p float64, c float32, s float64) float32 {
	r := float32(s)
	if !f32Midpoint(s) {
		return r
	}
	// s sits exactly between two float32 values: rounding it again would be
	// a double rounding unless the float64 addition was exact (TwoSum).
	bb := s - p
	e := (p - (s - bb)) + (float64(c) - bb)
	if e == 0 {
		return r
	}
	lo, hi := r, r
	if float64(r) > s {
		lo = math.Nextafter32(r, float32(math.Inf(-1)))
	} else {
		hi = math.Nextafter32(r, float32(math.Inf(1)))
	}
	if e > 0 {
		return hi
	}
	return lo
}

// f32Midpoint reports whether s lies exactly halfway between two adjacent
// float32 values.
func f32Midpoint(s float64) bool {
	a := math.Abs(s)
	if a >= 0x1p-126 {
		return math.Float64bits(s)&(1<<29-1) == 1<<28
	}
	t := a * 0x1p149 // exact: float32 subnormals are multiples of 2^-149
	return t-math.Floor(t) == 0.5
}

// DotF32GGML is ggml_vec_dot_f32: four accumulators of GGMLLanes() lanes
// over whole 4*lanes steps (fused), a tree reduction, then the leftovers
// added one by one — unfused in groups of lanes/2 as GCC vectorised the
// products, fused for the last few.
func DotF32GGML(a, b []float32) float32 {
	b = b[:len(a)]
	if ggmlLanes == 16 {
		return dotF32GGML16(a, b)
	}
	return dotF32GGML8(a, b)
}

// DotF32Sgemm is one output of llamafile's tinyBLAS f32 kernel (used by
// llama.cpp for batches of two or more rows): a single vector accumulator
// of GGMLLanes() lanes over the whole row, then a horizontal sum.
// len(a) must be a multiple of GGMLLanes().
func DotF32Sgemm(a, b []float32) float32 {
	b = b[:len(a)]
	if ggmlLanes == 16 {
		return dotF32Sgemm16(a, b)
	}
	return dotF32Sgemm8(a, b)
}

// DotF16GGML is ggml_vec_dot_f16 over two IEEE-half vectors: the same
// vector accumulation as DotF32GGML over whole steps, leftovers summed in
// float64.
func DotF16GGML(x, y []uint16) float32 { return dotF16GGML(x, y[:len(x)]) }

// DotF16Sgemm is one output of llamafile's tinyBLAS over IEEE halves (f16
// weights times activations llama.cpp has converted to f16): one vector
// accumulator of GGMLLanes() lanes. len(a) must be a multiple of
// GGMLLanes().
func DotF16Sgemm(a, b []uint16) float32 { return sgemmF16(a, b[:len(a)]) }

func sgemmF16Generic(a, b []uint16) float32 {
	L := ggmlLanes
	var acc [16]float32
	for i := 0; i+L <= len(a); i += L {
		for l := 0; l < L; l++ {
			acc[l] = FMA32(F16ToF32(a[i+l]), F16ToF32(b[i+l]), acc[l])
		}
	}
	if L == 16 {
		return hsum16(&acc)
	}
	c0, c1, c2, c3 := acc[0]+acc[4], acc[1]+acc[5], acc[2]+acc[6], acc[3]+acc[7]
	return (c0 + c2) + (c1 + c3)
}

// dotF16GGMLRows (per arch) sets out[j] = DotF16GGML(base[offs[j]:offs[j]+len(q)], q)
// for every j (several keys against one query; DotF16GGMLHeads).
//
// flashAccF16 (per arch) is the value accumulation of ggml's flash
// attention over an f16 cache: for each key j in order,
// acc = f16(acc*ms[j]) when ms[j] != 1 (a new running maximum:
// ggml_vec_scale_f16), then acc = f16(fma(v[offs[j]:], vs[j], acc))
// (ggml_vec_mad_f16); FlashAccF16Heads.

func flashAccF16Generic(acc, v []uint16, offs []int, ms, vs []float32) {
	hd := len(acc)
	for j, o := range offs {
		if ms[j] != 1 {
			for i, a := range acc {
				acc[i] = F32ToF16(F16ToF32(a) * ms[j])
			}
		}
		madF16GGMLGeneric(acc, v[o:o+hd], vs[j])
	}
}

// FATile is the key tile of ggml's tiled flash attention (GGML_FA_TILE_KV).
const FATile = 64

// F16ToF32Row converts len(src) IEEE halves into dst.
func F16ToF32Row(dst []float32, src []uint16) { f16ToF32Row(dst[:len(src)], src) }

// F32ToF16Row converts len(src) values into dst, each as F32ToF16 does:
// with F16C where the CPU has it (the scalar conversion branches on every
// value, which made it ~5% of an f16 model's decode step).
func F32ToF16Row(dst []uint16, src []float32) { f32ToF16Row(dst[:len(src)], src) }

func madF16GGMLGeneric(acc, v []uint16, s float32) {
	for i, a := range acc {
		acc[i] = F32ToF16(FMA32(F16ToF32(v[i]), s, F16ToF32(a)))
	}
}

func dotF16GGMLGeneric(x, y []uint16) float32 {
	L := ggmlLanes
	n := len(x)
	np := n &^ (4*L - 1)
	var acc [4][16]float32
	for i := 0; i < np; i += 4 * L {
		for j := 0; j < 4; j++ {
			for l := 0; l < L; l++ {
				k := i + j*L + l
				acc[j][l] = FMA32(F16ToF32(x[k]), F16ToF32(y[k]), acc[j][l])
			}
		}
	}
	var sum float64
	if np > 0 {
		sum = float64(reduceVec(&acc, L))
	}
	for i := np; i < n; i++ {
		sum += float64(F16ToF32(x[i]) * F16ToF32(y[i]))
	}
	return float32(sum)
}

// reduceVec is GGML_F32_VEC_REDUCE: (acc0+acc2)+(acc1+acc3) lane-wise,
// then the horizontal sum of that build (_mm512_reduce_add_ps for 16
// lanes, two hadds for 8).
func reduceVec(acc *[4][16]float32, L int) float32 {
	var v [16]float32
	for l := 0; l < L; l++ {
		v[l] = (acc[0][l] + acc[2][l]) + (acc[1][l] + acc[3][l])
	}
	if L == 16 {
		return hsum16(&v)
	}
	c0, c1, c2, c3 := v[0]+v[4], v[1]+v[5], v[2]+v[6], v[3]+v[7]
	return (c0 + c1) + (c2 + c3)
}

// hsum16 is _mm512_reduce_add_ps: halves folded 256, 128, then (0+2)+(1+3).
func hsum16(v *[16]float32) float32 {
	var b [8]float32
	for l := range b {
		b[l] = v[l] + v[l+8]
	}
	c0, c1, c2, c3 := b[0]+b[4], b[1]+b[5], b[2]+b[6], b[3]+b[7]
	return (c0 + c2) + (c1 + c3)
}

func dotF32GGMLGeneric(a, b []float32, L int) float32 {
	n := len(a)
	np := n &^ (4*L - 1)
	var acc [4][16]float32
	for i := 0; i < np; i += 4 * L {
		for j := 0; j < 4; j++ {
			for l := 0; l < L; l++ {
				k := i + j*L + l
				acc[j][l] = FMA32(a[k], b[k], acc[j][l])
			}
		}
	}
	var sum float32
	if np > 0 {
		sum = reduceVec(&acc, L)
	}
	i := np
	for end := np + (n-np)&^(L/2-1); i < end; i++ {
		sum += float32(a[i] * b[i])
	}
	for ; i < n; i++ {
		sum = FMA32(a[i], b[i], sum)
	}
	return sum
}

func dotF32SgemmGeneric(a, b []float32, L int) float32 {
	var acc [16]float32
	for i := 0; i+L <= len(a); i += L {
		for l := 0; l < L; l++ {
			acc[l] = FMA32(a[i+l], b[i+l], acc[l])
		}
	}
	if L == 16 {
		return hsum16(&acc)
	}
	// hsum(__m256) of sgemm.cpp: 128-bit halves added, then movehl and
	// movehdup: (0+2)+(1+3).
	c0, c1, c2, c3 := acc[0]+acc[4], acc[1]+acc[5], acc[2]+acc[6], acc[3]+acc[7]
	return (c0 + c2) + (c1 + c3)
}
