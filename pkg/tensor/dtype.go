// Package tensor holds the numeric core of the CPU engine: element types
// (f32, f16, bf16 and ggml's q8_0/q4_0 blocks), weight matrices viewed over
// mmap'd bytes, dot-product kernels (AVX2/FMA assembly with portable Go
// fallbacks chosen at run time) and a persistent worker pool that splits
// matrix rows across cores.
package tensor

import (
	"encoding/binary"
	"fmt"
	"math"
	"strings"
	"unsafe"
)

// DType is the element type of a weight matrix.
type DType uint8

// Supported weight types. Q8_0, Q4_0 and the K-quants use ggml's block
// layouts:
// q8_0 = {f16 d; int8 qs[32]} (34 bytes per 32 values),
// q4_0 = {f16 d; uint8 qs[16]} (18 bytes per 32 values; value j is the low
// nibble of qs[j] and value j+16 the high nibble, both minus 8).
const (
	F32 DType = iota
	F16
	BF16
	Q8_0
	Q4_0
	Q4_K // ggml's K-quants: 256-value super-blocks (kquant.go)
	Q5_K
	Q6_K
	Q4_1 // the other ggml types of llama-quantize's files (lowbit.go)
	Q5_0
	Q5_1
	Q2_K
	Q3_K
	IQ4_NL
	IQ4_XS
	MXFP4 // gpt-oss's expert weights: 32 FP4 (e2m1) values per E8M0 scale
)

// QK is the number of values in a q8_0 / q4_0 block.
const QK = 32

const (
	q8BlockBytes = 34
	q4BlockBytes = 18
)

var dtypeNames = [...]string{"f32", "f16", "bf16", "q8_0", "q4_0", "q4_K", "q5_K", "q6_K",
	"q4_1", "q5_0", "q5_1", "q2_K", "q3_K", "iq4_nl", "iq4_xs", "mxfp4"}

func (d DType) String() string {
	if int(d) < len(dtypeNames) {
		return dtypeNames[d]
	}
	return fmt.Sprintf("DType(%d)", uint8(d))
}

// ParseDType maps a type's name ("f32", "q4_K", "iq4_xs", ...) to a DType.
func ParseDType(s string) (DType, error) {
	for i, n := range dtypeNames {
		if n == s {
			return DType(i), nil
		}
	}
	return 0, fmt.Errorf("unknown dtype %q (want one of %s)", s, strings.Join(dtypeNames[:], ", "))
}

// Quantized reports whether the type is block-quantized (activations are
// then quantized to ggml's vec_dot_type of the type, q8_0, q8_1 or q8_K,
// for the dot products).
func (d DType) Quantized() bool { return d == Q8_0 || d == Q4_0 || d.KQuant() || d.lowBit() }

// BlockLen is the number of values per block: 1 for float types, 32 for
// q8_0/q4_0/q4_1/q5_0/q5_1/iq4_nl/mxfp4, 256 for the K-quants and iq4_xs.
func (d DType) BlockLen() int {
	switch {
	case d.KQuant() || d == Q2_K || d == Q3_K || d == IQ4_XS:
		return QKK
	case d.Quantized():
		return QK
	}
	return 1
}

// RowBytes is the encoded size of n values, or an error when n does not
// fill whole blocks.
func (d DType) RowBytes(n int) (int, error) {
	switch d {
	case F32:
		return 4 * n, nil
	case F16, BF16:
		return 2 * n, nil
	}
	if bl := d.BlockLen(); d.Quantized() {
		if n%bl != 0 {
			return 0, fmt.Errorf("%s row of %d values is not a multiple of %d", d, n, bl)
		}
		return n / bl * blockBytes(d), nil
	}
	return 0, fmt.Errorf("unknown dtype %d", uint8(d))
}

// Matrix is a row-major weight matrix [Rows x Cols] whose rows are encoded
// in Type and stored contiguously in Data (typically a slice of an mmap'd
// file). A PyTorch Linear weight [out, in] is Rows=out, Cols=in.
type Matrix struct {
	Type       DType
	Rows, Cols int
	Data       []byte
	rowBytes   int
	// q4 is a q4_0 matrix with a multiple of 8 rows repacked eight rows
	// at a time (see packQ4x8); MatMul reads it instead of Data.
	q4 []byte
	// k4 is the same for q4_K (packQ4Kx8).
	k4 []byte
}

// Repacked reports whether MatMul reads a copy of the matrix made at load
// (in the arena passed to NewMatrixIn) instead of Data.
func (m *Matrix) Repacked() bool { return m.q4 != nil || m.k4 != nil }

// NewMatrix checks that data holds exactly rows x cols values of type t.
// It has the OS map data's pages at once (see prefault), so a matrix over
// an mmap'd file costs no page faults when first multiplied.
func NewMatrix(t DType, rows, cols int, data []byte) (*Matrix, error) {
	return NewMatrixIn(nil, t, rows, cols, data)
}

// NewMatrixIn is NewMatrix with the copies made at load (q4_0's and
// q4_K's repacked rows) placed in arena a (nil: the Go heap).
func NewMatrixIn(a *WeightArena, t DType, rows, cols int, data []byte) (*Matrix, error) {
	m, err := newMatrix(t, rows, cols, data)
	if err != nil {
		return nil, err
	}
	prefault(data)
	if q4Chain(m) {
		// Like llama.cpp's CPU_REPACK buffers: a copy in the layout the
		// kernels stream best, made once at load.
		m.q4 = packQ4x8(a.Alloc(rows/8*(cols/QK)*q4x8GroupBytes), data, rows, cols)
	}
	if t == Q4_K && rows%8 == 0 {
		m.k4 = packQ4Kx8(a.Alloc(rows/8*(cols/QKK)*q4Kx8GroupBytes), data, rows, cols)
	}
	return m, nil
}

// NewGatherMatrix is NewMatrix for a table read a row at a time (an
// embedding table that is not also the output head): its pages are left
// to be faulted in by the rows looked up, and it gets no repacked copy,
// which only MatMul reads. MatMul still works on it, more slowly.
func NewGatherMatrix(t DType, rows, cols int, data []byte) (*Matrix, error) {
	return newMatrix(t, rows, cols, data)
}

func newMatrix(t DType, rows, cols int, data []byte) (*Matrix, error) {
	if rows <= 0 || cols <= 0 {
		return nil, fmt.Errorf("matrix %dx%d: empty", rows, cols)
	}
	rb, err := t.RowBytes(cols)
	if err != nil {
		return nil, err
	}
	if len(data) != rows*rb {
		return nil, fmt.Errorf("%s matrix %dx%d needs %d bytes, have %d", t, rows, cols, rows*rb, len(data))
	}
	return &Matrix{Type: t, Rows: rows, Cols: cols, Data: data, rowBytes: rb}, nil
}

// RowBytes is the encoded size of one row.
func (m *Matrix) RowBytes() int { return m.rowBytes }

// Row returns the encoded bytes of row r.
func (m *Matrix) Row(r int) []byte { return m.Data[r*m.rowBytes : (r+1)*m.rowBytes] }

// DequantizeRow decodes row r into dst (len Cols).
func (m *Matrix) DequantizeRow(r int, dst []float32) {
	Dequantize(m.Type, m.Row(r), dst)
}

// Dequantize decodes len(dst) values of type t from src.
func Dequantize(t DType, src []byte, dst []float32) {
	switch t {
	case F32:
		copy(dst, bytesAsF32(src[:4*len(dst)]))
	case F16:
		for i := range dst {
			dst[i] = F16ToF32(binary.LittleEndian.Uint16(src[2*i:]))
		}
	case BF16:
		for i := range dst {
			dst[i] = BF16ToF32(binary.LittleEndian.Uint16(src[2*i:]))
		}
	case Q8_0:
		for b := 0; b < len(dst)/QK; b++ {
			blk := src[b*q8BlockBytes:]
			d := F16ToF32(binary.LittleEndian.Uint16(blk))
			for j := 0; j < QK; j++ {
				dst[b*QK+j] = float32(int8(blk[2+j])) * d
			}
		}
	case Q4_0:
		for b := 0; b < len(dst)/QK; b++ {
			blk := src[b*q4BlockBytes:]
			d := F16ToF32(binary.LittleEndian.Uint16(blk))
			for j := 0; j < QK/2; j++ {
				q := blk[2+j]
				dst[b*QK+j] = float32(int(q&0xF)-8) * d
				dst[b*QK+j+QK/2] = float32(int(q>>4)-8) * d
			}
		}
	case Q4_K, Q5_K, Q6_K:
		dequantizeK(t, src, dst)
	default:
		if t.lowBit() {
			dequantizeLow(t, src, dst)
		}
	}
}

// Quantize encodes src into type t (the inverse of Dequantize). q8_0 and
// q4_0 follow ggml's reference quantizers (quantize_row_q8_0_ref and
// quantize_row_q4_0_ref), so files written here match llama-quantize; the
// K-quants and the types of lowbit.go use plain quantizers (quantizeK,
// quantizeLow).
func Quantize(t DType, src []float32) ([]byte, error) {
	n, err := t.RowBytes(len(src))
	if err != nil {
		return nil, err
	}
	dst := make([]byte, n)
	switch t {
	case F32:
		for i, v := range src {
			binary.LittleEndian.PutUint32(dst[4*i:], math.Float32bits(v))
		}
	case F16:
		for i, v := range src {
			binary.LittleEndian.PutUint16(dst[2*i:], F32ToF16(v))
		}
	case BF16:
		for i, v := range src {
			binary.LittleEndian.PutUint16(dst[2*i:], F32ToBF16(v))
		}
	case Q8_0:
		for b := 0; b < len(src)/QK; b++ {
			x := src[b*QK : (b+1)*QK]
			blk := dst[b*q8BlockBytes:]
			var amax float32
			for _, v := range x {
				amax = max(amax, abs32(v))
			}
			d := amax / 127
			var id float32
			if d != 0 {
				id = 1 / d
			}
			binary.LittleEndian.PutUint16(blk, F32ToF16(d))
			for j, v := range x {
				blk[2+j] = byte(int8(roundAway(v * id)))
			}
		}
	case Q4_0:
		for b := 0; b < len(src)/QK; b++ {
			x := src[b*QK : (b+1)*QK]
			blk := dst[b*q4BlockBytes:]
			var amax, mx float32
			for _, v := range x {
				if abs32(v) > amax {
					amax, mx = abs32(v), v
				}
			}
			d := mx / -8
			var id float32
			if d != 0 {
				id = 1 / d
			}
			binary.LittleEndian.PutUint16(blk, F32ToF16(d))
			for j := 0; j < QK/2; j++ {
				x0 := min(15, int8(x[j]*id+8.5))
				x1 := min(15, int8(x[j+QK/2]*id+8.5))
				blk[2+j] = byte(x0) | byte(x1)<<4
			}
		}
	case Q4_K, Q5_K, Q6_K:
		quantizeK(t, src, dst)
	default:
		quantizeLow(t, src, dst)
	}
	return dst, nil
}

func abs32(x float32) float32 { return math.Float32frombits(math.Float32bits(x) &^ (1 << 31)) }

// roundAway rounds half away from zero, as C's roundf.
func roundAway(x float32) float32 { return float32(math.Round(float64(x))) }

// bytesAsF32 views little-endian f32 bytes as []float32 without copying.
func bytesAsF32(b []byte) []float32 {
	if len(b) == 0 {
		return nil
	}
	return unsafe.Slice((*float32)(unsafe.Pointer(&b[0])), len(b)/4)
}

// F32Bytes views a []float32 as bytes without copying.
func F32Bytes(f []float32) []byte {
	if len(f) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&f[0])), 4*len(f))
}

// F16ToF32 converts an IEEE half-precision value.
func F16ToF32(h uint16) float32 {
	sign := uint32(h>>15) << 31
	exp := uint32(h>>10) & 0x1F
	mant := uint32(h) & 0x3FF
	switch {
	case exp == 0x1F: // inf / nan (a NaN comes out quiet, as F16C makes it)
		if mant != 0 {
			mant |= 0x200
		}
		return math.Float32frombits(sign | 0x7F800000 | mant<<13)
	case exp != 0:
		return math.Float32frombits(sign | (exp+112)<<23 | mant<<13)
	case mant == 0:
		return math.Float32frombits(sign)
	}
	// Subnormal half: value = mant * 2^-24, exact in f32.
	f := float32(mant) * (1.0 / (1 << 24))
	return math.Float32frombits(sign | math.Float32bits(f))
}

// F32ToF16 converts to half precision with round-to-nearest-even, as the
// F16C instruction and ggml do.
func F32ToF16(f float32) uint16 {
	b := math.Float32bits(f)
	sign := uint16(b>>16) & 0x8000
	exp := int32(b>>23) & 0xFF
	mant := b & 0x7FFFFF
	if exp == 0xFF {
		if mant != 0 {
			return sign | 0x7E00 | uint16(mant>>13)
		}
		return sign | 0x7C00
	}
	e := exp - 127 + 15
	if e >= 0x1F {
		return sign | 0x7C00
	}
	if e <= 0 {
		if e < -10 {
			return sign
		}
		mant |= 0x800000
		shift := uint32(14 - e)
		half := uint32(1) << (shift - 1)
		r := mant >> shift
		rem := mant & (1<<shift - 1)
		if rem > half || (rem == half && r&1 == 1) {
			r++
		}
		return sign | uint16(r)
	}
	r := uint32(e)<<10 | mant>>13
	rem := mant & 0x1FFF
	if rem > 0x1000 || (rem == 0x1000 && r&1 == 1) {
		r++ // may carry into the exponent, which is the correct rounding
	}
	return sign | uint16(r)
}

// BF16ToF32 converts a bfloat16 value.
func BF16ToF32(h uint16) float32 { return math.Float32frombits(uint32(h) << 16) }

// F32ToBF16 converts with round-to-nearest-even (NaN stays NaN).
func F32ToBF16(f float32) uint16 {
	b := math.Float32bits(f)
	if b&0x7FFFFFFF > 0x7F800000 {
		return uint16(b>>16) | 0x40
	}
	return uint16((b + 0x7FFF + (b>>16)&1) >> 16)
}
