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
// kernel's tail.
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
	// Short windows start near 1.0 (top bits 0x1FC00), where every rounding
	// case matters, so the kernel's tail sees them too.
	mid := 7 * 0x1FC00
	for _, w := range []struct{ lo, n int }{{0, len(src)}, {0, len(src) - 7}, {mid, 15}, {mid + 3, 7}, {mid + 5, 1}} {
		in := src[w.lo : w.lo+w.n]
		got := make([]uint16, w.n)
		F32ToF16Row(got, in)
		for i, h := range got {
			if want := F32ToF16(in[i]); h != want {
				t.Fatalf("n=%d: F32ToF16Row(%#08x) = %#04x, scalar %#04x", w.n, math.Float32bits(in[i]), h, want)
			}
		}
	}
}
