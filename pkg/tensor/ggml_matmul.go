// exactness: MatMulGGML computes f32 and f16 matrix products with
// llama.cpp's CPU rounding (see ggml_exact.go); other weight types go to
// MatMul.

package tensor

import (
	"fmt"
	"unsafe"
)

// ggmlTask computes f32 / f16 outputs row by row with the exact kernels.
type ggmlTask struct {
	outs  [maxOuts]Out
	n     int
	start [maxOuts + 1]int
	x     []float32
	x16   []uint16 // x converted to f16 (for f16 weights), [T x cols]
	// Blocked tinyBLAS path for f16 weights (sgemmF16Block, the same bits
	// as DotF16Sgemm): the sgemm tokens and their x16 widened to f32.
	toks []int
	x32  []float32
	// All tokens single-row (ggml_vec_dot): ggmlF16Block, DotF16GGML's bits,
	// over x32 holding every token.
	blockG bool
	accG   [][][ggmlTok * 64]float32 // ggmlF16Block's scratch, per worker
	modes  []RowMode
	T      int
	cols   int
}

// RowMode says which of llama.cpp's batch kernels the product of one token
// (activation row) reproduces; the zero value is its single-row kernels.
type RowMode uint8

const (
	// RowSgemm: f32/f16 weights through llamafile's tinyBLAS, not
	// ggml_vec_dot.
	RowSgemm RowMode = 1 << iota
	// RowGemm4: q4_K and q2_K weights through the repacked gemm, which
	// llama.cpp runs on the tokens of a batch in fours (the rest through
	// the gemv).
	RowGemm4
	// RowPanel8: iq4_xs weights through llama.cpp's IQ panel gemm, which
	// it runs on batches of 8 or more tokens.
	RowPanel8
)

// LlamaCppRowMode is the rounding llama.cpp gives token i of a batch of n
// tokens computed together (one sequence's chunk).
func LlamaCppRowMode(n, i int) RowMode {
	var m RowMode
	if n >= 2 {
		m |= RowSgemm
	}
	if i < n-n%4 {
		m |= RowGemm4
	}
	if n >= 8 {
		m |= RowPanel8
	}
	return m
}

// MatMulGGML computes every out.Y = x · out.W^T like MatMul, but
// reproduces llama.cpp's CPU rounding token by token. For f32 and f16
// weights llama.cpp multiplies a batch of two or more rows with llamafile's
// tinyBLAS when the row length is a multiple of GGMLLanes() and the matrix
// has a multiple of 4 rows, and a single row with ggml_vec_dot; the two
// sum in different orders. Rows t with RowSgemm in modes[t] follow
// tinyBLAS, the others ggml_vec_dot, so a row's result does not depend on
// the other rows of the batch. For f16 weights the activations are first
// rounded to f16, as llama.cpp does. q4_K and q2_K rows with RowGemm4
// follow its repacked gemm, the others its gemv; iq4_xs rows with
// RowPanel8 its IQ panel gemm, iq4_nl rows with RowSgemm tinyBLAS. Other
// weight types are computed by MatMul. modes may be nil (all zero).
func (c *Ctx) MatMulGGML(x []float32, T int, modes []RowMode, outs ...Out) error {
	if len(outs) == 0 || len(outs) > maxOuts {
		return fmt.Errorf("matmul: %d outputs (1..%d)", len(outs), maxOuts)
	}
	exact, f16 := 0, false
	for _, o := range outs {
		switch o.W.Type {
		case F32:
			exact++
		case F16:
			exact++
			f16 = true
		}
	}
	if exact < len(outs) {
		if exact == 0 {
			if modes != nil && len(modes) < T {
				return fmt.Errorf("matmul: %d row modes for %d tokens", len(modes), T)
			}
			return c.matMul(x, T, modes, outs...)
		}
		// Mixed types: each output on its own path.
		for _, o := range outs {
			if err := c.MatMulGGML(x, T, modes, o); err != nil {
				return err
			}
		}
		return nil
	}
	cols := outs[0].W.Cols
	if T <= 0 || len(x) < T*cols {
		return fmt.Errorf("matmul: %d tokens of width %d need %d inputs, have %d", T, cols, T*cols, len(x))
	}
	if modes != nil && len(modes) < T {
		return fmt.Errorf("matmul: %d row modes for %d tokens", len(modes), T)
	}
	m := &c.gg
	m.n, m.T, m.cols, m.x, m.modes = len(outs), T, cols, x[:T*cols], modes
	rows := 0
	for i, o := range outs {
		if o.W.Cols != cols || len(o.Y) < T*o.W.Rows {
			return fmt.Errorf("matmul: output %d: %dx%d matrix, input width %d, %d outputs for %d tokens",
				i, o.W.Rows, o.W.Cols, cols, len(o.Y), T)
		}
		m.outs[i] = o
		m.start[i] = rows
		rows += o.W.Rows
	}
	m.start[len(outs)] = rows
	if f16 {
		if cap(m.x16) < T*cols {
			m.x16 = make([]uint16, T*cols)
		}
		m.x16 = m.x16[:T*cols]
		F32ToF16Row(m.x16, m.x)
		m.toks = m.toks[:0]
		if hasSgemmF16 && ggmlLanes == 16 && cols%16 == 0 && modes != nil {
			for t := 0; t < T; t++ {
				if modes[t]&RowSgemm != 0 {
					m.toks = append(m.toks, t)
				}
			}
			m.x32 = widenTokens(m.x32, m.x16, m.toks, cols)
		}
		m.blockG = hasSgemmF16 && ggmlLanes == 16 && cols%64 == 0 && T >= 2 && len(m.toks) == 0
		for t := 0; m.blockG && modes != nil && t < T; t++ {
			m.blockG = modes[t]&RowSgemm == 0
		}
		if m.blockG {
			m.x32 = widenAll(m.x32, m.x16)
			for len(m.accG) < c.Pool.Threads() {
				m.accG = append(m.accG, nil)
			}
		}
	}
	c.Pool.Run(m, rows, max(1, minChunkWork/(cols*T)))
	for i := range m.outs[:m.n] {
		m.outs[i] = Out{}
	}
	m.x, m.modes = nil, nil
	return nil
}

// sgemm reports whether token t follows tinyBLAS.
func (m *ggmlTask) sgemm(t int) bool { return m.modes != nil && m.modes[t]&RowSgemm != 0 }

func (m *ggmlTask) Run(worker, lo, hi int) {
	for i := 0; i < m.n; i++ {
		a, b := max(lo, m.start[i]), min(hi, m.start[i+1])
		if a >= b {
			continue
		}
		o := &m.outs[i]
		w, cols, nOut := o.W, m.cols, o.W.Rows
		gemmOK := cols%ggmlLanes == 0 && nOut%4 == 0
		if w.Type == F16 && m.blockG {
			m.accG[worker] = ggmlF16Block(w, a-m.start[i], b-m.start[i], m.x32, m.T, o.Y, m.accG[worker])
			continue
		}
		blocked := w.Type == F16 && gemmOK && len(m.toks) > 0
		if blocked {
			sgemmF16Block(w, a-m.start[i], b-m.start[i], m.x32, m.toks, o.Y)
		}
		for r := a - m.start[i]; r < b-m.start[i]; r++ {
			raw := w.Data[r*w.rowBytes : (r+1)*w.rowBytes]
			if w.Type == F16 {
				row := bytesAsU16(raw)
				for t := 0; t < m.T; t++ {
					xt := m.x16[t*cols : (t+1)*cols]
					if gemmOK && m.sgemm(t) {
						if blocked {
							continue // done by sgemmF16Block
						}
						o.Y[t*nOut+r] = DotF16Sgemm(row, xt)
					} else {
						o.Y[t*nOut+r] = DotF16GGML(row, xt)
					}
				}
				continue
			}
			row := bytesAsF32(raw)
			for t := 0; t < m.T; t++ {
				xt := m.x[t*cols : (t+1)*cols]
				if gemmOK && m.sgemm(t) {
					o.Y[t*nOut+r] = DotF32Sgemm(row, xt)
				} else {
					o.Y[t*nOut+r] = DotF32GGML(row, xt)
				}
			}
		}
	}
}

// widenTokens gathers the f16 activations of tokens toks (rows of cols in
// x16) into dst as f32, growing it as needed.
func widenTokens(dst []float32, x16 []uint16, toks []int, cols int) []float32 {
	if cap(dst) < len(toks)*cols {
		dst = make([]float32, len(toks)*cols)
	}
	dst = dst[:len(toks)*cols]
	for j, t := range toks {
		F16ToF32Row(dst[j*cols:(j+1)*cols], x16[t*cols:(t+1)*cols])
	}
	return dst
}

// widenAll converts every f16 value of x16 to f32 into dst, growing it as
// needed.
func widenAll(dst []float32, x16 []uint16) []float32 {
	if cap(dst) < len(x16) {
		dst = make([]float32, len(x16))
	}
	dst = dst[:len(x16)]
	F16ToF32Row(dst, x16)
	return dst
}

// bytesAsU16 views little-endian 16-bit values without copying.
func bytesAsU16(b []byte) []uint16 {
	if len(b) == 0 {
		return nil
	}
	return unsafe.Slice((*uint16)(unsafe.Pointer(&b[0])), len(b)/2)
}
