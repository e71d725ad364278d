// Assembly K-quant kernels (kquant_amd64.s) where the CPU has AVX2/FMA/F16C.

package tensor

//go:noescape
func q4KDotAVX2(w *byte, xq *int8, xd *float32, xbs *int16, nb int, gemm int) float32

//go:noescape
func q5KRowsAVX2(w *byte, xq *int8, xd *float32, xbs *int16, nb int, rows int, out *float32)

//go:noescape
func q6KRowsAVX2(w *byte, xq *int8, xd *float32, xbs *int16, nb int, rows int, out *float32)

//go:noescape
func q5KRowsVNNI(w *byte, xq *int8, xd *float32, xbs *int16, nb int, rows int, out *float32)

//go:noescape
func q6KRowsVNNI(w *byte, xq *int8, xd *float32, xbs *int16, nb int, rows int, out *float32)

//go:noescape
func q6KRowsZ(w *byte, xq *int8, xd *float32, xbs *int16, nb int, rows int, out *float32)

//go:noescape
func q6KDotx4AVX2(w *byte, xq *int8, xd *float32, xbs *int16, nb int, out *[4]float32)

//go:noescape
func q6KDotx4VNNI(w *byte, xq *int8, xd *float32, xbs *int16, nb int, out *[4]float32)

//go:noescape
func q5KDotx4AVX2(w *byte, xq *int8, xd *float32, xbs *int16, nb int, out *[4]float32)

//go:noescape
func quantizeActQ8KAVX2(x *float32, q *int8, d *float32, bsums *int16, nb int)

// quantizeActQ8KAsm is quantizeActQ8KGeneric in assembly where the CPU
// has AVX2 (false: not done).
func quantizeActQ8KAsm(x []float32, q []int8, d []float32, bsums []int16) bool {
	nb := len(x) / QKK
	if !hasAVX2 || nb == 0 {
		return false
	}
	_, _, _ = q[nb*QKK-1], d[nb-1], bsums[16*nb-1]
	quantizeActQ8KAVX2(&x[0], &q[0], &d[0], &bsums[0], nb)
	return true
}

// kArgs checks the lengths the kernels read and returns nb.
func kArgs(w []byte, bb int, xq []int8, xd []float32, xbs []int16) int {
	nb := len(xd)
	_ = w[nb*bb-1]
	_ = xq[nb*QKK-1]
	_ = xbs[nb*16-1]
	return nb
}

func dotQ4K(w []byte, xq []int8, xd []float32, xbs []int16) float32 {
	if !hasAVX2 || len(xd) == 0 {
		return dotQ4KGeneric(w, xq, xd, xbs)
	}
	nb := kArgs(w, q4KBlockBytes, xq, xd, xbs)
	return q4KDotAVX2(&w[0], &xq[0], &xd[0], &xbs[0], nb, 0)
}

func dotQ4KGemm(w []byte, xq []int8, xd []float32, xbs []int16) float32 {
	if !hasAVX2 || len(xd) == 0 {
		return dotQ4KGemmGeneric(w, xq, xd, xbs)
	}
	nb := kArgs(w, q4KBlockBytes, xq, xd, xbs)
	return q4KDotAVX2(&w[0], &xq[0], &xd[0], &xbs[0], nb, 1)
}

func dotQ5K(w []byte, xq []int8, xd []float32, xbs []int16) float32 {
	if !hasAVX2 || len(xd) == 0 {
		return dotQ5KGeneric(w, xq, xd, xbs)
	}
	var out float32
	nb := kArgs(w, q5KBlockBytes, xq, xd, xbs)
	q5KRows()(&w[0], &xq[0], &xd[0], &xbs[0], nb, 1, &out)
	return out
}

func dotQ6K(w []byte, xq []int8, xd []float32, xbs []int16) float32 {
	if !hasAVX2 || len(xd) == 0 {
		return dotQ6KGeneric(w, xq, xd, xbs)
	}
	var out float32
	nb := kArgs(w, q6KBlockBytes, xq, xd, xbs)
	q6KRows()(&w[0], &xq[0], &xd[0], &xbs[0], nb, 1, &out)
	return out
}

// dotQ5KRows and dotQ6KRows are dotQ5K / dotQ6K on len(out) consecutive
// rows at w in one call (a decode step's rows: no Go call per row).
func dotQ5KRows(w []byte, xq []int8, xd []float32, xbs []int16, out []float32) {
	dotKRows(q5KRows(), dotQ5KGeneric, q5KBlockBytes, w, xq, xd, xbs, out)
}

func dotQ6KRows(w []byte, xq []int8, xd []float32, xbs []int16, out []float32) {
	dotKRows(q6KRows(), dotQ6KGeneric, q6KBlockBytes, w, xq, xd, xbs, out)
}

// q5KRows and q6KRows are the q5_K / q6_K rows kernels for this CPU.
func q5KRows() func(w *byte, xq *int8, xd *float32, xbs *int16, nb int, rows int, out *float32) {
	if hasVNNI {
		return q5KRowsVNNI
	}
	return q5KRowsAVX2
}

func q6KRows() func(w *byte, xq *int8, xd *float32, xbs *int16, nb int, rows int, out *float32) {
	if hasVNNI && hasGFNI {
		return q6KRowsZ
	}
	if hasVNNI {
		return q6KRowsVNNI
	}
	return q6KRowsAVX2
}

func dotKRows(asm func(w *byte, xq *int8, xd *float32, xbs *int16, nb int, rows int, out *float32),
	generic func(w []byte, xq []int8, xd []float32, xbs []int16) float32,
	bb int, w []byte, xq []int8, xd []float32, xbs []int16, out []float32) {
	nb := len(xd)
	if !hasAVX2 || nb == 0 || len(out) == 0 {
		dotKRowsGeneric(generic, bb, w, xq, xd, xbs, out)
		return
	}
	kArgs(w[(len(out)-1)*nb*bb:], bb, xq, xd, xbs)
	asm(&w[0], &xq[0], &xd[0], &xbs[0], nb, len(out), &out[0])
}

// dotQ6Kx4 is dotQ6K of one row against four consecutive tokens (xq, xd
// and xbs hold the four back to back); out[t] is bit-identical to dotQ6K
// on token t alone.
func dotQ6Kx4(w []byte, xq []int8, xd []float32, xbs []int16, out *[4]float32) {
	if !hasAVX2 || len(xd) == 0 {
		dotQ6Kx4Generic(w, xq, xd, xbs, out)
		return
	}
	nb := len(xd) / 4
	_, _, _ = w[nb*q6KBlockBytes-1], xq[4*nb*QKK-1], xbs[4*16*nb-1]
	if hasVNNI {
		q6KDotx4VNNI(&w[0], &xq[0], &xd[0], &xbs[0], nb, out)
		return
	}
	q6KDotx4AVX2(&w[0], &xq[0], &xd[0], &xbs[0], nb, out)
}

// dotQ5Kx4 is dotQ5K of one row against four consecutive tokens, as
// dotQ6Kx4.
func dotQ5Kx4(w []byte, xq []int8, xd []float32, xbs []int16, out *[4]float32) {
	if !hasAVX2 || len(xd) == 0 {
		dotQ5Kx4Generic(w, xq, xd, xbs, out)
		return
	}
	nb := len(xd) / 4
	_, _, _ = w[nb*q5KBlockBytes-1], xq[4*nb*QKK-1], xbs[4*16*nb-1]
	q5KDotx4AVX2(&w[0], &xq[0], &xd[0], &xbs[0], nb, out)
}
