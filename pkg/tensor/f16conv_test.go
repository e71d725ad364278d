package tensor

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestF16RowsMatchScalar: the row conversions give the bits of the scalar
// ones — every half value (NaNs included), and for float32 every sign,
// exponent and top mantissa bits with the low 13 bits (those rounding
// looks at) below, at and above the halfway point, plus dense random
// mantissas where the result is a subnormal half. Odd lengths cover the
// scalar tail.
func TestF16RowsMatchScalar(t *testing.T) {
	halves := make([]uint16, 1<<16)
	for h := range halves {
		halves[h] = uint16(h)
	}
	wide := make([]float32, len(halves))
	F16ToF32Row(wide, halves)
	for h, f := range wide {
		if want := F16ToF32(uint16(h)); math.Float32bits(f) != math.Float32bits(want) {
			t.Fatalf("F16ToF32Row(%#04x) = %#08x, scalar %#08x", h, math.Float32bits(f), math.Float32bits(want))
		}
	}

	r := rand.New(rand.NewPCG(1, 2))
	var src []float32
	for top := uint32(0); top < 1<<19; top++ {
		for _, low := range []uint32{0, 1, 0xFFF, 0x1000, 0x1001, 0x1FFF, r.Uint32() & 0x1FFF} {
			src = append(src, math.Float32frombits(top<<13|low))
		}
	}
	for exp := uint32(100); exp <= 113; exp++ { // half subnormals and the smallest normals
		for range 20000 {
			src = append(src, math.Float32frombits(r.Uint32()&0x80000000|exp<<23|r.Uint32()&0x7FFFFF))
		}
	}
	for _, n := range []int{len(src), len(src) - 7, 15, 1} {
		got := make([]uint16, n)
		F32ToF16Row(got, src[:n])
		for i, h := range got {
			if want := F32ToF16(src[i]); h != want {
				t.Fatalf("n=%d: F32ToF16Row(%#08x) = %#04x, scalar %#04x", n, math.Float32bits(src[i]), h, want)
			}
		}
	}
}
