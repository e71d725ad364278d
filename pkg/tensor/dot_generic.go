package tensor

import "encoding/binary"

// Portable dot products. They are the reference for the assembly versions
// and run on CPUs without AVX2/FMA/F16C.

func dotF32Generic(a, b []float32) float32 {
	b = b[:len(a)]
	var s0, s1, s2, s3 float32
	i := 0
	for ; i+4 <= len(a); i += 4 {
		s0 += a[i] * b[i]
		s1 += a[i+1] * b[i+1]
		s2 += a[i+2] * b[i+2]
		s3 += a[i+3] * b[i+3]
	}
	for ; i < len(a); i++ {
		s0 += a[i] * b[i]
	}
	return (s0 + s1) + (s2 + s3)
}

// dotF16Generic: w holds len(x) f16 values.
func dotF16Generic(w []byte, x []float32) float32 {
	w = w[:2*len(x)]
	var s0, s1 float32
	i := 0
	for ; i+2 <= len(x); i += 2 {
		s0 += F16ToF32(binary.LittleEndian.Uint16(w[2*i:])) * x[i]
		s1 += F16ToF32(binary.LittleEndian.Uint16(w[2*i+2:])) * x[i+1]
	}
	if i < len(x) {
		s0 += F16ToF32(binary.LittleEndian.Uint16(w[2*i:])) * x[i]
	}
	return s0 + s1
}

func dotBF16Generic(w []byte, x []float32) float32 {
	w = w[:2*len(x)]
	var s0, s1 float32
	i := 0
	for ; i+2 <= len(x); i += 2 {
		s0 += BF16ToF32(binary.LittleEndian.Uint16(w[2*i:])) * x[i]
		s1 += BF16ToF32(binary.LittleEndian.Uint16(w[2*i+2:])) * x[i+1]
	}
	if i < len(x) {
		s0 += BF16ToF32(binary.LittleEndian.Uint16(w[2*i:])) * x[i]
	}
	return s0 + s1
}

// dotQ8Generic: w holds len(ds) q8_0 blocks; xq/ds a quantized activation.
func dotQ8Generic(w []byte, xq []int8, ds []float32) float32 {
	var sum float32
	for b := range ds {
		blk := w[b*q8BlockBytes : (b+1)*q8BlockBytes]
		x := xq[b*QK : (b+1)*QK]
		var isum int32
		for j := 0; j < QK; j++ {
			isum += int32(int8(blk[2+j])) * int32(x[j])
		}
		sum += float32(isum) * (F16ToF32(binary.LittleEndian.Uint16(blk)) * ds[b])
	}
	return sum
}

func dotQ4Generic(w []byte, xq []int8, ds []float32) float32 {
	var sum float32
	for b := range ds {
		blk := w[b*q4BlockBytes : (b+1)*q4BlockBytes]
		x := xq[b*QK : (b+1)*QK]
		var isum int32
		for j := 0; j < QK/2; j++ {
			q := blk[2+j]
			isum += (int32(q&0xF) - 8) * int32(x[j])
			isum += (int32(q>>4) - 8) * int32(x[j+QK/2])
		}
		sum += float32(isum) * (F16ToF32(binary.LittleEndian.Uint16(blk)) * ds[b])
	}
	return sum
}

func axpyF32Generic(dst []float32, a float32, x []float32) {
	x = x[:len(dst)]
	for i := range dst {
		dst[i] += a * x[i]
	}
}
