// exactness: Ctx holds the state of MatMulGGML (ggml_matmul.go), which
// reproduces llama.cpp's rounding for f32/f16 weights.

package tensor

import "fmt"

// Out is one product of a MatMul: Y[t*W.Rows + r] = W[r] · x[t].
type Out struct {
	W *Matrix
	Y []float32
}

// maxOuts bounds how many matrices one MatMul call fuses (q/k/v, gate/up).
const maxOuts = 4

// minChunkWork is roughly the multiply-adds per parallel chunk below which
// handing work to another core costs more than it saves.
const minChunkWork = 1 << 16

// Cache blocking for batches: a block of weight rows (about blockWeights
// bytes) stays in L2 while a tile of tokens (about tileActs bytes of
// activations) passes over it, so weights come from memory once per
// MatMul and activations from L2.
const (
	blockWeights = 64 << 10
	tileActs     = 256 << 10
	l1Acts       = 24 << 10
)

// f16 batches run in pieces of f16Piece values per row (whole 32-value
// steps), f16Rows rows at a time: three tokens' activation pieces (6 KB)
// and the rows' weight pieces (16 KB) then stay in L1 while the
// accumulators are carried from piece to piece.
const (
	f16Piece = 512
	f16Rows  = 16
)

// f16Tile is the number of tokens (a multiple of 3) whose activations,
// cols wide, are swept by one pass of a block of f16 rows.
func f16Tile(cols int) int { return max(3, tileActs/(4*cols)/3*3) }

// Ctx runs matrix products on a worker pool and owns the scratch they need
// (quantized activations). It grows its buffers to the largest request and
// then allocates nothing. Not safe for concurrent use.
type Ctx struct {
	Pool *Pool
	xq   []int8
	xd   []float32
	xds  []float32
	xs1  []float32 // q8_1 block sums (q4_1/q5_1 matrices)
	xt   []byte    // q8_0 activation tiles (VNNI kernels)
	xk   ActQ8K    // q8_K activations (K-quant matrices)
	acc  [][]float32
	low  []lowRow // per worker: the decoded row of a lowbit.go matrix
	mm   mmTask
	gg   ggmlTask // exactness: state of MatMulGGML (ggml_matmul.go)
	qt   quantTask
}

// NewCtx creates a context with its own pool of threads workers
// (<= 0: GOMAXPROCS).
func NewCtx(threads int) *Ctx { return &Ctx{Pool: NewPool(threads)} }

// Close stops the pool.
func (c *Ctx) Close() { c.Pool.Close() }

type mmTask struct {
	outs  [maxOuts]Out
	n     int
	start [maxOuts + 1]int // unit offsets of each matrix in the fused unit space
	unit  [maxOuts]int     // rows per unit: 8 for packed q4_0 groups, else 1
	x     []float32
	xq    []int8
	xd    []float32
	xds   []float32   // per token and block: scale, 8*sum as int32 bits (packed q4_0)
	xs1   []float32   // per token and block: q8_1's d*sum (q4_1, q5_1)
	xt    []byte      // activation tiles of eight tokens (q8_0 with VNNI)
	xk    ActQ8K      // q8_K activations (K-quant matrices)
	modes []RowMode   // per token, or nil (MatMulGGML)
	acc   [][]float32 // per worker: f16 accumulators carried between pieces
	low   []lowRow    // per worker: decoded rows (lowbit.go types)
	T     int
	cols  int
}

// q4Chain reports whether w is computed with llama.cpp's repacked-q4_0
// rounding, which llama.cpp uses for q4_0 matrices with a multiple of 8
// rows; matching it keeps greedy output identical to llama.cpp's. Such
// matrices are packed eight rows at a time (packQ4x8).
func q4Chain(w *Matrix) bool { return w.Type == Q4_0 && w.Rows%8 == 0 }

// MatMul computes every out.Y = x · out.W^T for T activation rows x
// (x is [T x cols], each W is [rows x cols], each Y is [T x rows]). All
// matrices share the input, so it is quantized once and the rows of all
// of them are split across the pool in one dispatch. Every result is
// computed by the same sequence of operations whatever T is, so a token's
// output does not depend on the other tokens of the batch.
func (c *Ctx) MatMul(x []float32, T int, outs ...Out) error { return c.matMul(x, T, nil, outs...) }

// matMul is MatMul with llama.cpp's per-token kernel choice for q4_K
// (MatMulGGML); modes may be nil.
func (c *Ctx) matMul(x []float32, T int, modes []RowMode, outs ...Out) error {
	if len(outs) == 0 || len(outs) > maxOuts {
		return fmt.Errorf("matmul: %d outputs (1..%d)", len(outs), maxOuts)
	}
	cols := outs[0].W.Cols
	if T <= 0 || len(x) < T*cols {
		return fmt.Errorf("matmul: %d tokens of width %d need %d inputs, have %d", T, cols, T*cols, len(x))
	}
	quant, q81, kquant, packed, tiled, f16 := false, false, false, false, false, false
	m := &c.mm
	m.n, m.T, m.cols, m.x, m.modes = len(outs), T, cols, x[:T*cols], modes
	units := 0
	for i, o := range outs {
		if o.W.Cols != cols || len(o.Y) < T*o.W.Rows {
			return fmt.Errorf("matmul: output %d: %dx%d matrix, input width %d, %d outputs for %d tokens",
				i, o.W.Rows, o.W.Cols, cols, len(o.Y), T)
		}
		t := o.W.Type
		quant = quant || (t.Quantized() && !t.actQ8K())
		q81 = q81 || t.actQ8_1()
		kquant = kquant || t.actQ8K()
		if t.lowBit() && len(c.low) < c.Pool.Threads() {
			c.low = make([]lowRow, c.Pool.Threads())
		}
		tiled = tiled || (o.W.Type == Q8_0 && T > 1 && hasVNNI)
		f16 = f16 || f16Pieces(o.W, T)
		m.outs[i] = o
		m.start[i] = units
		m.unit[i] = 1
		if o.W.q4 != nil {
			packed = true
			m.unit[i] = 8
		}
		if o.W.k4 != nil {
			m.unit[i] = 8
		}
		units += o.W.Rows / m.unit[i]
	}
	m.start[len(outs)] = units
	if quant {
		if cols%QK != 0 {
			return fmt.Errorf("matmul: width %d of a quantized matrix is not a multiple of %d", cols, QK)
		}
		c.quantize(x, T, cols, packed, tiled)
		if q81 {
			nb := T * cols / QK
			if len(c.xs1) < nb {
				c.xs1 = make([]float32, nb)
			}
			fillQ8_1Sums(c.xs1[:nb], x[:T*cols], c.xq[:T*cols])
			m.xs1 = c.xs1[:nb]
		}
	}
	if kquant {
		if cols%QKK != 0 {
			return fmt.Errorf("matmul: width %d of a K-quant matrix is not a multiple of %d", cols, QKK)
		}
		c.quantizeK(x, T, cols)
	}
	if f16 {
		n := f16Rows * f16Tile(cols) / 3 * 96
		if len(c.acc) < c.Pool.Threads() {
			c.acc = make([][]float32, c.Pool.Threads())
		}
		for i := range c.acc {
			if len(c.acc[i]) < n {
				c.acc[i] = make([]float32, n)
			}
		}
		m.acc = c.acc
	}
	m.low = c.low
	grain := max(1, minChunkWork/(cols*T))
	if packed || kquant {
		grain = max(1, grain/8)
	}
	c.Pool.Run(m, units, grain)
	for i := range m.outs[:m.n] {
		m.outs[i] = Out{}
	}
	m.x, m.xq, m.xd, m.xds, m.xs1, m.xt, m.acc = nil, nil, nil, nil, nil, nil, nil
	m.xk, m.modes, m.low = ActQ8K{}, nil, nil
	return nil
}

// quantizeK converts the T activation rows to q8_K once for all K-quant
// matrices of a MatMul.
func (c *Ctx) quantizeK(x []float32, T, cols int) {
	nb := cols / QKK
	if len(c.xk.Q) < T*cols {
		c.xk = ActQ8K{Q: make([]int8, T*cols), D: make([]float32, T*nb), BSums: make([]int16, T*nb*16), S: make([]int32, T*nb*8)}
	}
	c.mm.xk = ActQ8K{Q: c.xk.Q[:T*cols], D: c.xk.D[:T*nb], BSums: c.xk.BSums[:16*T*nb], S: c.xk.S[:8*T*nb]}
	c.runQuant(quantQ8K, x, T, cols)
}

// quantize converts the T activation rows to q8_0 once for all matrices
// (and, for packed q4_0 matrices, the block sums their kernel needs).
func (c *Ctx) quantize(x []float32, T, cols int, sums, tiles bool) {
	nb := cols / QK
	if len(c.xq) < T*cols {
		c.xq = make([]int8, T*cols)
		c.xd = make([]float32, T*nb)
		c.xds = make([]float32, 2*T*nb)
	}
	m := &c.mm
	m.xq, m.xd = c.xq[:T*cols], c.xd[:T*nb]
	if sums {
		m.xds = c.xds[:2*T*nb]
	}
	if tiles {
		nt := (T + q8TileTokens - 1) / q8TileTokens
		tb := nb * q8TileBlockBytes
		if len(c.xt) < nt*tb {
			c.xt = make([]byte, nt*tb)
		}
		m.xt = c.xt[:nt*tb]
	}
	c.runQuant(quantQ8, x, T, cols)
}

// quantKind is which activation format a quantTask writes.
type quantKind uint8

const (
	quantQ8  quantKind = iota // q8_0 (plus the q4_0 sums and VNNI tiles mmTask asks for)
	quantQ8K                  // q8_K
)

// quantTask quantizes a MatMul's activation rows over the pool, a tile of
// eight tokens per unit (each token is quantized on its own, so the split
// changes nothing). Done serially it was ~5% of a prefill at one thread,
// time the second thread then waited through.
type quantTask struct {
	c    *Ctx
	kind quantKind
	x    []float32
	T    int
	cols int
}

// quantGrain is the fewest activation values a thread quantizes: below
// it waking the pool costs more than it saves.
const quantGrain = 32 << 10

func (c *Ctx) runQuant(kind quantKind, x []float32, T, cols int) {
	q := &c.qt
	*q = quantTask{c: c, kind: kind, x: x, T: T, cols: cols}
	units := (T + q8TileTokens - 1) / q8TileTokens
	c.Pool.Run(q, units, max(1, quantGrain/(q8TileTokens*cols)))
	*q = quantTask{}
}

func (q *quantTask) Run(_, lo, hi int) {
	m, x, cols := &q.c.mm, q.x, q.cols
	t0, t1 := lo*q8TileTokens, min(q.T, hi*q8TileTokens)
	if q.kind == quantQ8K {
		nb := cols / QKK
		for t := t0; t < t1; t++ {
			quantizeActQ8K(x[t*cols:(t+1)*cols], m.xk.Q[t*cols:(t+1)*cols], m.xk.D[t*nb:(t+1)*nb], m.xk.BSums[16*t*nb:16*(t+1)*nb])
		}
		sub := ActQ8K{BSums: m.xk.BSums[16*t0*nb : 16*t1*nb], S: m.xk.S[8*t0*nb : 8*t1*nb]}
		sub.fillS()
		return
	}
	nb := cols / QK
	for t := t0; t < t1; t++ {
		QuantizeActQ8(x[t*cols:(t+1)*cols], m.xq[t*cols:(t+1)*cols], m.xd[t*nb:(t+1)*nb])
	}
	if m.xds != nil {
		fillQ4Sums(m.xds[2*t0*nb:2*t1*nb], m.xq[t0*cols:t1*cols], m.xd[t0*nb:t1*nb])
	}
	if m.xt != nil {
		tb := nb * q8TileBlockBytes
		for i := lo; i < hi; i++ {
			s := i * q8TileTokens
			fillQ8Tile(m.xt[i*tb:(i+1)*tb], m.xq[s*cols:], m.xd[s*nb:], nb, min(q8TileTokens, q.T-s))
		}
	}
}

func (m *mmTask) Run(worker, lo, hi int) {
	for i := 0; i < m.n; i++ {
		a, b := max(lo, m.start[i]), min(hi, m.start[i+1])
		if a >= b {
			continue
		}
		u := m.unit[i]
		m.rows(&m.outs[i], worker, (a-m.start[i])*u, (b-m.start[i])*u)
	}
}

// rows computes rows [r0, r1) of one output for all tokens.
func (m *mmTask) rows(o *Out, worker, r0, r1 int) {
	w := o.W
	switch {
	case f16Pieces(w, m.T):
		m.rowsF16(o, m.acc[worker], r0, r1)
	case w.q4 != nil:
		m.rowsQ4x8(o, r0, r1)
	case w.k4 != nil:
		m.rowsQ4Kx8(o, r0, r1)
	case w.Type.lowBit():
		m.rowsLow(o, &m.low[worker], r0, r1)
	case w.Type.KQuant():
		m.rowsK(o, r0, r1)
	case w.Type == Q8_0 && m.xt != nil:
		m.rowsQ8Tile(o, r0, r1)
	case m.T == 1 && w.Type == Q8_0:
		// Two rows at a time, from the two halves of the range: a row's
		// blocks form one FMA chain, which alone runs at about memory
		// speed, and two chains side by side go 25% faster
		// (BenchmarkDotQ8Rows). Adjacent rows as the pair measured 2.5x
		// slower out of cache (two streams in one region confuse the
		// prefetcher), rows half a range apart do not.
		h, rb := (r1-r0)/2, w.rowBytes
		var out [2]float32
		for i := 0; i < h; i++ {
			dotQ8x2(w.Data[(r0+i)*rb:], h*rb, m.xq, m.xd, &out)
			o.Y[r0+i], o.Y[r0+h+i] = out[0], out[1]
		}
		for r := r0 + 2*h; r < r1; r++ {
			o.Y[r] = dotQ8(w.Data[r*rb:(r+1)*rb], m.xq, m.xd)
		}
	case m.T == 1 && w.Type == F16:
		for r := r0; r < r1; r++ {
			o.Y[r] = dotF16(w.Data[r*w.rowBytes:(r+1)*w.rowBytes], m.x)
		}
	default:
		m.rowsBlocked(o, r0, r1)
	}
}

// rowsBlocked computes a batch over rows [r0, r1) in cache blocks: a
// block of weight rows stays in L2 while groups of tokens, small enough
// for their activations to stay in L1, pass over it.
func (m *mmTask) rowsBlocked(o *Out, r0, r1 int) {
	w := o.W
	perTok, group := 4*m.cols, 4
	switch {
	case w.Type.Quantized():
		perTok = m.cols + m.cols/QK*4
	case w.Type == F16:
		group = 3 // dotF16x3
	}
	rowBlock := max(1, blockWeights/w.rowBytes)
	tokTile := max(group, l1Acts/perTok/group*group)
	for b0 := r0; b0 < r1; b0 += rowBlock {
		b1 := min(r1, b0+rowBlock)
		for t0 := 0; t0 < m.T; t0 += tokTile {
			t1 := min(m.T, t0+tokTile)
			for r := b0; r < b1; r++ {
				m.row(o, r, t0, t1)
			}
		}
	}
}

// row computes one weight row against tokens [t0, t1).
func (m *mmTask) row(o *Out, r, t0, t1 int) {
	w, cols, nOut := o.W, m.cols, o.W.Rows
	row := w.Data[r*w.rowBytes : (r+1)*w.rowBytes]
	switch w.Type {
	case F32:
		wf := bytesAsF32(row)
		for t := t0; t < t1; t++ {
			o.Y[t*nOut+r] = DotF32(wf, m.x[t*cols:(t+1)*cols])
		}
	case F16:
		var res [3]float32
		t := t0
		for ; t+3 <= t1; t += 3 {
			dotF16x3(row, m.x[t*cols:(t+3)*cols], &res)
			for k := range res {
				o.Y[(t+k)*nOut+r] = res[k]
			}
		}
		for ; t < t1; t++ {
			o.Y[t*nOut+r] = dotF16(row, m.x[t*cols:(t+1)*cols])
		}
	case BF16:
		for t := t0; t < t1; t++ {
			o.Y[t*nOut+r] = dotBF16(row, m.x[t*cols:(t+1)*cols])
		}
	case Q8_0, Q4_0:
		m.rowQ(o, w.Type, row, r, t0, t1)
	}
}

// f16Pieces reports whether a batch of T tokens through f16 matrix w is
// computed piecewise by rowsF16.
func f16Pieces(w *Matrix, T int) bool {
	return w.Type == F16 && T >= 3 && hasAVX2 && w.Cols%8 == 0
}

// rowsF16 computes a batch of f16 rows [r0, r1): for each block of f16Rows
// rows and tile of tokens, the rows are swept piece by piece with three
// tokens at a time, the accumulators of every (row, token triple) kept in
// acc between pieces; the tokens left over are done one at a time.
// Results equal dotF16's.
func (m *mmTask) rowsF16(o *Out, acc []float32, r0, r1 int) {
	w, cols, nOut := o.W, m.cols, o.W.Rows
	rb := w.rowBytes
	tile := f16Tile(cols)
	T3 := m.T / 3 * 3
	var res [3]float32
	for b0 := r0; b0 < r1; b0 += f16Rows {
		b1 := min(r1, b0+f16Rows)
		for t0 := 0; t0 < T3; t0 += tile {
			t1 := min(T3, t0+tile)
			ng := (t1 - t0) / 3
			clear(acc[:(b1-b0)*ng*96])
			for k0 := 0; k0 < cols; k0 += f16Piece {
				k1 := min(cols, k0+f16Piece)
				last := k1 == cols
				for g := 0; g < ng; g++ {
					t := t0 + 3*g
					x := m.x[t*cols+k0:]
					for r := b0; r < b1; r++ {
						a := (*[96]float32)(acc[((r-b0)*ng+g)*96:])
						piece := w.Data[r*rb+2*k0 : r*rb+2*k1]
						if !last {
							dotF16x3Part(piece, x, cols, a, nil)
							continue
						}
						dotF16x3Part(piece, x, cols, a, &res)
						for k := range res {
							o.Y[(t+k)*nOut+r] = res[k]
						}
					}
				}
			}
		}
		for t := T3; t < m.T; t++ {
			for r := b0; r < b1; r++ {
				o.Y[t*nOut+r] = dotF16(w.Data[r*rb:(r+1)*rb], m.x[t*cols:(t+1)*cols])
			}
		}
	}
}

// rowsQ4x8 computes rows [r0, r1) (multiples of 8) of a packed q4_0
// matrix: eight rows against up to q4x8Tokens() tokens per kernel call.
func (m *mmTask) rowsQ4x8(o *Out, r0, r1 int) {
	w, cols, nOut := o.W, m.cols, o.W.Rows
	nb := cols / QK
	gb := nb * q4x8GroupBytes
	perTok := cols + 8*nb
	groupBlock := max(1, blockWeights/gb)
	tokTile := max(4, tileActs/perTok&^3)
	step := q4x8Tokens()
	var res [8 * q4x8MaxTok]float32
	for b0 := r0 / 8; b0 < r1/8; b0 += groupBlock {
		b1 := min(r1/8, b0+groupBlock)
		for t0 := 0; t0 < m.T; t0 += tokTile {
			t1 := min(m.T, t0+tokTile)
			for g := b0; g < b1; g++ {
				grp := w.q4[g*gb : (g+1)*gb]
				for t := t0; t < t1; t += step {
					n := min(step, t1-t)
					q4x8(grp, nb, m.xq[t*cols:], m.xds[2*t*nb:], n, &res)
					for k := 0; k < n; k++ {
						copy(o.Y[(t+k)*nOut+8*g:(t+k)*nOut+8*g+8], res[8*k:8*k+8])
					}
				}
			}
		}
	}
}

// rowsQ8Tile computes rows [r0, r1) of a q8_0 matrix against the
// activation tiles, eight tokens per kernel call.
func (m *mmTask) rowsQ8Tile(o *Out, r0, r1 int) {
	w, nOut := o.W, o.W.Rows
	nb := m.cols / QK
	tb := nb * q8TileBlockBytes
	nt := len(m.xt) / tb
	rowBlock := max(1, blockWeights/w.rowBytes)
	tileGroup := max(1, tileActs/tb)
	var res [8]float32
	var res2 [16]float32
	for b0 := r0; b0 < r1; b0 += rowBlock {
		b1 := min(r1, b0+rowBlock)
		for g0 := 0; g0 < nt; g0 += tileGroup {
			g1 := min(nt, g0+tileGroup)
			r := b0
			// Two rows per call share the activation loads; with few
			// tokens the second weight stream costs more than that saves
			// (measured: -13% at 4 tokens, +25% at 16).
			for ; r+2 <= b1 && m.T >= 8; r += 2 {
				rows := w.Data[r*w.rowBytes : (r+2)*w.rowBytes]
				for i := g0; i < g1; i++ {
					t0 := i * q8TileTokens
					n := min(q8TileTokens, m.T-t0)
					q8Tile2(rows, w.rowBytes, nb, m.xt[i*tb:(i+1)*tb], n, &res2)
					for k := 0; k < n; k++ {
						o.Y[(t0+k)*nOut+r] = res2[k]
						o.Y[(t0+k)*nOut+r+1] = res2[8+k]
					}
				}
			}
			for ; r < b1; r++ {
				row := w.Data[r*w.rowBytes : (r+1)*w.rowBytes]
				for i := g0; i < g1; i++ {
					t0 := i * q8TileTokens
					n := min(q8TileTokens, m.T-t0)
					q8Tile(row, nb, m.xt[i*tb:(i+1)*tb], n, &res)
					for k := 0; k < n; k++ {
						o.Y[(t0+k)*nOut+r] = res[k]
					}
				}
			}
		}
	}
}

// rowQ computes one quantized weight row against tokens [t0, t1), four
// tokens per kernel call so the weight block is decoded once for all four.
func (m *mmTask) rowQ(o *Out, typ DType, row []byte, r, t0, t1 int) {
	cols, nOut, nb := m.cols, o.W.Rows, m.cols/QK
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
