package tensor

import "unsafe"

//go:noescape
func dotF16HeadsAVX512(base unsafe.Pointer, offs *int, rows int, q *float32, n, heads int, out *float32, ostride int)

//go:noescape
func flashAccHeadsAVX512(acc, v unsafe.Pointer, offs *int, ms, vs *float32, n, heads, astride int)

// headsMax is the most query heads one fused kernel call serves.
const headsMax = 4

func dotF16Heads(out []float32, base []uint16, offs []int, q []uint16, heads int, qf []float32) {
	hd := len(q) / heads
	// The kernel is 16-lane ggml_vec_dot_f16 without leftovers.
	if !hasFA512 || ggmlLanes != 16 || hd == 0 || hd%64 != 0 {
		dotF16HeadsLoop(out, base, offs, q, heads)
		return
	}
	for _, o := range offs {
		_ = base[o+hd-1]
	}
	f16ToF32Row(qf, q)
	n := len(offs)
	for h0 := 0; h0 < heads; h0 += headsMax {
		hh := min(headsMax, heads-h0)
		dotF16HeadsAVX512(unsafe.Pointer(&base[0]), &offs[0], n, &qf[h0*hd], hd, hh, &out[h0*n], n)
	}
}

func flashAccHeads(acc, v []uint16, offs []int, ms, vs []float32, heads int) {
	hd := len(acc) / heads
	if !hasFA512 || hd == 0 || hd%64 != 0 {
		flashAccHeadsLoop(acc, v, offs, ms, vs, heads)
		return
	}
	for _, o := range offs {
		_ = v[o+hd-1]
	}
	n := len(offs)
	for h0 := 0; h0 < heads; h0 += headsMax {
		hh := min(headsMax, heads-h0)
		for c := 0; c < hd; c += 64 {
			flashAccHeadsAVX512(unsafe.Pointer(&acc[h0*hd+c]), unsafe.Pointer(&v[c]), &offs[0], &ms[h0*n], &vs[h0*n], n, hh, hd)
		}
	}
}
