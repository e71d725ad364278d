// exactness: MatMulGGML computes f32 matrix products with llama.cpp's CPU
// rounding (see ggml_exact.go); other weight types go to MatMul.

package tensor

import "fmt"

// ggmlTask computes f32 outputs row by row with the exact kernels.
type ggmlTask struct {
	outs  [maxOuts]Out
	n     int
	start [maxOuts + 1]int
	x     []float32
	sgemm []bool
	T     int
	cols  int
}

// MatMulGGML computes every out.Y = x · out.W^T like MatMul, but for f32
// weights it reproduces llama.cpp's summation order token by token: rows
// t with sgemm[t] set are summed as llamafile's tinyBLAS does (llama.cpp
// uses it for a mul_mat over two or more rows when the row length is a
// multiple of GGMLLanes() and the matrix has a multiple of 4 rows), the
// others as ggml_vec_dot_f32 (decode). Since the choice is per token, a
// row's result does not depend on the other rows of the batch. Non-f32
// weights are computed by MatMul. sgemm may be nil (all false).
func (c *Ctx) MatMulGGML(x []float32, T int, sgemm []bool, outs ...Out) error {
	if len(outs) == 0 || len(outs) > maxOuts {
		return fmt.Errorf("matmul: %d outputs (1..%d)", len(outs), maxOuts)
	}
	for _, o := range outs {
		if o.W.Type != F32 {
			return c.MatMul(x, T, outs...)
		}
	}
	cols := outs[0].W.Cols
	if T <= 0 || len(x) < T*cols {
		return fmt.Errorf("matmul: %d tokens of width %d need %d inputs, have %d", T, cols, T*cols, len(x))
	}
	if sgemm != nil && len(sgemm) < T {
		return fmt.Errorf("matmul: %d sgemm flags for %d tokens", len(sgemm), T)
	}
	m := &ggmlTask{}
	m.n, m.T, m.cols, m.x, m.sgemm = len(outs), T, cols, x[:T*cols], sgemm
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
	c.Pool.Run(m, rows, max(1, minChunkWork/(cols*T)))
	return nil
}

func (m *ggmlTask) Run(_, lo, hi int) {
	for i := 0; i < m.n; i++ {
		a, b := max(lo, m.start[i]), min(hi, m.start[i+1])
		if a >= b {
			continue
		}
		o := &m.outs[i]
		w, cols, nOut := o.W, m.cols, o.W.Rows
		gemmOK := cols%ggmlLanes == 0 && nOut%4 == 0
		for r := a - m.start[i]; r < b-m.start[i]; r++ {
			row := bytesAsF32(w.Data[r*w.rowBytes : (r+1)*w.rowBytes])
			for t := 0; t < m.T; t++ {
				xt := m.x[t*cols : (t+1)*cols]
				if gemmOK && m.sgemm != nil && m.sgemm[t] {
					o.Y[t*nOut+r] = DotF32Sgemm(row, xt)
				} else {
					o.Y[t*nOut+r] = DotF32GGML(row, xt)
				}
			}
		}
	}
}
