package tensor

import "fmt"

// Out is one product of a MatMul: Y[t*W.Rows + r] = W[r] · x[t].
type Out struct {
	W *Matrix
	Y []float32
}

// maxOuts bounds how many matrices one MatMul call fuses (q/k/v, gate/up).
const maxOuts = 4

// tokenTile is how many activation rows are swept per pass over a weight
// chunk, so both stay in cache during prefill.
const tokenTile = 16

// minChunkWork is roughly the multiply-adds per parallel chunk below which
// handing work to another core costs more than it saves.
const minChunkWork = 1 << 16

// Ctx runs matrix products on a worker pool and owns the scratch they need
// (quantized activations). It grows its buffers to the largest request and
// then allocates nothing. Not safe for concurrent use.
type Ctx struct {
	Pool *Pool
	xq   []int8
	xd   []float32
	xdT  []float32
	mm   mmTask
}

// NewCtx creates a context with its own pool of threads workers
// (<= 0: GOMAXPROCS).
func NewCtx(threads int) *Ctx { return &Ctx{Pool: NewPool(threads)} }

// Close stops the pool.
func (c *Ctx) Close() { c.Pool.Close() }

type mmTask struct {
	outs  [maxOuts]Out
	n     int
	start [maxOuts + 1]int // row offsets of each matrix in the fused row space
	x     []float32
	xq    []int8
	xd    []float32
	xdT   []float32 // scales of each group of 4 tokens, interleaved per block
	T     int
	cols  int
}

// q4Chain reports whether w is computed with llama.cpp's repacked-q4_0
// rounding, which llama.cpp uses for q4_0 matrices with a multiple of 8
// rows; matching it keeps greedy output identical to llama.cpp's.
func q4Chain(w *Matrix) bool { return w.Type == Q4_0 && w.Rows%8 == 0 }

// MatMul computes every out.Y = x · out.W^T for T activation rows x
// (x is [T x cols], each W is [rows x cols], each Y is [T x rows]). All
// matrices share the input, so it is quantized once and the rows of all
// of them are split across the pool in one dispatch.
func (c *Ctx) MatMul(x []float32, T int, outs ...Out) error {
	if len(outs) == 0 || len(outs) > maxOuts {
		return fmt.Errorf("matmul: %d outputs (1..%d)", len(outs), maxOuts)
	}
	cols := outs[0].W.Cols
	if T <= 0 || len(x) < T*cols {
		return fmt.Errorf("matmul: %d tokens of width %d need %d inputs, have %d", T, cols, T*cols, len(x))
	}
	quant, chain := false, false
	m := &c.mm
	m.n, m.T, m.cols, m.x = len(outs), T, cols, x[:T*cols]
	rows := 0
	for i, o := range outs {
		if o.W.Cols != cols || len(o.Y) < T*o.W.Rows {
			return fmt.Errorf("matmul: output %d: %dx%d matrix, input width %d, %d outputs for %d tokens",
				i, o.W.Rows, o.W.Cols, cols, len(o.Y), T)
		}
		quant = quant || o.W.Type.Quantized()
		chain = chain || q4Chain(o.W)
		m.outs[i] = o
		m.start[i] = rows
		rows += o.W.Rows
	}
	m.start[len(outs)] = rows
	if quant {
		if cols%QK != 0 {
			return fmt.Errorf("matmul: width %d of a quantized matrix is not a multiple of %d", cols, QK)
		}
		if len(c.xq) < T*cols {
			c.xq = make([]int8, T*cols)
			c.xd = make([]float32, T*cols/QK)
		}
		for t := 0; t < T; t++ {
			QuantizeActQ8(x[t*cols:(t+1)*cols], c.xq[t*cols:(t+1)*cols], c.xd[t*cols/QK:(t+1)*cols/QK])
		}
		m.xq, m.xd = c.xq[:T*cols], c.xd[:T*cols/QK]
		if chain && T >= 4 {
			nb, T4 := cols/QK, T&^3
			if len(c.xdT) < T4*nb {
				c.xdT = make([]float32, T4*nb)
			}
			for g := 0; g < T4/4; g++ {
				for k := 0; k < 4; k++ {
					for b := 0; b < nb; b++ {
						c.xdT[g*4*nb+4*b+k] = c.xd[(4*g+k)*nb+b]
					}
				}
			}
			m.xdT = c.xdT[:T4*nb]
		}
	}
	grain := max(1, minChunkWork/(cols*T))
	c.Pool.Run(m, rows, grain)
	for i := range m.outs[:m.n] {
		m.outs[i] = Out{}
	}
	m.x, m.xq, m.xd, m.xdT = nil, nil, nil, nil
	return nil
}

func (m *mmTask) Run(_, lo, hi int) {
	for i := 0; i < m.n; i++ {
		a, b := max(lo, m.start[i]), min(hi, m.start[i+1])
		if a >= b {
			continue
		}
		m.rows(&m.outs[i], a-m.start[i], b-m.start[i])
	}
}

// rows computes rows [r0, r1) of one output for all tokens.
func (m *mmTask) rows(o *Out, r0, r1 int) {
	w, cols, nOut := o.W, m.cols, o.W.Rows
	rb := w.rowBytes
	nb := cols / QK
	if q4Chain(w) {
		m.rowsQ4Chain(o, r0, r1)
		return
	}
	for t0 := 0; t0 < m.T; t0 += tokenTile {
		t1 := min(m.T, t0+tokenTile)
		for r := r0; r < r1; r++ {
			row := w.Data[r*rb : (r+1)*rb]
			switch w.Type {
			case F32:
				wf := bytesAsF32(row)
				for t := t0; t < t1; t++ {
					o.Y[t*nOut+r] = DotF32(wf, m.x[t*cols:(t+1)*cols])
				}
			case F16:
				for t := t0; t < t1; t++ {
					o.Y[t*nOut+r] = dotF16(row, m.x[t*cols:(t+1)*cols])
				}
			case BF16:
				for t := t0; t < t1; t++ {
					o.Y[t*nOut+r] = dotBF16(row, m.x[t*cols:(t+1)*cols])
				}
			case Q8_0, Q4_0:
				m.rowQ(o, w.Type, row, r, t0, t1, nOut, nb)
			}
		}
	}
}

// rowsQ4Chain computes rows [r0, r1) of a q4_0 matrix with llama.cpp's
// repacked rounding: groups of four tokens per row, remaining tokens eight
// rows at a time. Every kernel gives the same bits for a (row, token).
func (m *mmTask) rowsQ4Chain(o *Out, r0, r1 int) {
	w, cols, nOut := o.W, m.cols, o.W.Rows
	rb, nb := w.rowBytes, cols/QK
	T4 := m.T &^ 3
	var res [4]float32
	for g0 := 0; g0 < T4; g0 += tokenTile {
		g1 := min(T4, g0+tokenTile)
		for r := r0; r < r1; r++ {
			row := w.Data[r*rb : (r+1)*rb]
			for t := g0; t < g1; t += 4 {
				dotQ4Tok4(row, m.xq[t*cols:(t+4)*cols], m.xdT[t*nb:(t+4)*nb], &res)
				for k := range res {
					o.Y[(t+k)*nOut+r] = res[k]
				}
			}
		}
	}
	var res8 [8]float32
	for t := T4; t < m.T; t++ {
		xq, xd := m.xq[t*cols:(t+1)*cols], m.xd[t*nb:(t+1)*nb]
		r := r0
		for ; r+8 <= r1; r += 8 {
			dotQ4Rows8(w.Data[r*rb:(r+8)*rb], rb, xq, xd, &res8)
			copy(o.Y[t*nOut+r:t*nOut+r+8], res8[:])
		}
		for ; r < r1; r++ {
			o.Y[t*nOut+r] = dotQ4Chain(w.Data[r*rb:(r+1)*rb], xq, xd)
		}
	}
}

// rowQ computes one quantized weight row against tokens [t0, t1), four
// tokens per kernel call so the weight block is decoded once for all four.
func (m *mmTask) rowQ(o *Out, typ DType, row []byte, r, t0, t1, nOut, nb int) {
	cols := m.cols
	var res [4]float32
	t := t0
	for ; t+4 <= t1; t += 4 {
		xq, xd := m.xq[t*cols:(t+4)*cols], m.xd[t*nb:(t+4)*nb]
		if typ == Q8_0 {
			dotQ8x4(row, xq, xd, &res)
		} else {
			dotQ4x4(row, xq, xd, &res)
		}
		for k := range res {
			o.Y[(t+k)*nOut+r] = res[k]
		}
	}
	for ; t < t1; t++ {
		if typ == Q8_0 {
			o.Y[t*nOut+r] = dotQ8(row, m.xq[t*cols:(t+1)*cols], m.xd[t*nb:(t+1)*nb])
		} else {
			o.Y[t*nOut+r] = dotQ4(row, m.xq[t*cols:(t+1)*cols], m.xd[t*nb:(t+1)*nb])
		}
	}
}
