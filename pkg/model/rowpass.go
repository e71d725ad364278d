package model

import "github.com/lightllm-go/lightllm/pkg/tensor"

// passGrain is the fewest values a thread of a row pass is given: below
// it the pool's wake-up (~10 µs) costs more than the pass, so decode
// steps run their passes on the calling thread.
const passGrain = 16 << 10

// passOp names one of Forward's per-token passes.
type passOp uint8

const (
	passNorm     passOp = iota // dst = rmsNorm(x) * w, rows of len(w)
	passResidual               // x += y (scaled by the residual multiplier)
	passQKV                    // layer li's Q/K/V rows after their matmul: biases, norms, RoPE, scale, rotation
	passStoreKV                // layer li's K/V rows of the batch into the store
	passAct                    // x = act(x) * y over rows of width values
	passFWHT                   // the rotation of a q8_0 KV store's value space, undone on x
)

// rowPass is one of Forward's per-token passes (norms, residuals, RoPE,
// activations, the KV store) run over the thread pool. Each token row's
// result depends on that row alone, so how the rows are split changes no
// bits. Run serially, these passes were ~13% of a 2k-token prefill at one
// thread, which capped two threads at ~1.77x of one.
type rowPass struct {
	m     *Model
	op    passOp
	width int // values per row in x, y and dst
	dst   []float32
	x, y  []float32
	w     []float32
	eps   float32
	li    int // layer (passQKV, passStoreKV)
	t0    int // passQKV: the batch row of the pass's row 0
	b     *Batch
	kv    *KV
	n     int // passFWHT: transform length
}

// run runs the pass prepared in m.pass over rows [0, rows) and clears its
// references so the scratch is not kept alive through it.
func (m *Model) run(rows int) {
	p := &m.pass
	p.m = m
	m.ctx.Pool.Run(p, rows, max(1, passGrain/max(1, p.width)))
	*p = rowPass{}
}

// normRows is rmsNormRows over the pool.
func (m *Model) normRows(dst, x, w []float32, eps float32) {
	p := &m.pass
	p.op, p.width, p.dst, p.x, p.w, p.eps = passNorm, len(w), dst, x, w, eps
	m.run(len(x) / len(w))
}

// residualRows is addResidual over the pool; x and y hold rows of width
// values.
func (m *Model) residualRows(x, y []float32, width int) {
	p := &m.pass
	p.op, p.width, p.x, p.y = passResidual, width, x, y
	m.run(len(x) / width)
}

// actRows applies the FFN's gated activation to rows of width values:
// x = act(x) * y.
func (m *Model) actRows(x, y []float32, width int) {
	p := &m.pass
	p.op, p.width, p.x, p.y = passAct, width, x, y
	m.run(len(x) / width)
}

// qkvRows finishes batch rows [t0, t1) of layer li's Q, K and V.
func (m *Model) qkvRows(li, t0, t1 int) {
	p := &m.pass
	p.op, p.width, p.li, p.t0 = passQKV, m.cfg.Heads*m.cfg.HeadDim, li, t0
	m.run(t1 - t0)
}

// storeKVRows writes layer li's K/V of every batch token into kv.
func (m *Model) storeKVRows(b *Batch, kv *KV, li int, k, v []float32) {
	p := &m.pass
	p.op, p.width, p.b, p.kv, p.li, p.x, p.y = passStoreKV, 2*m.cfg.KVHeads*m.cfg.HeadDim, b, kv, li, k, v
	m.run(len(b.Tokens))
}

// fwhtPass is fwhtRows(x, n) over the pool, for rows of width values.
func (m *Model) fwhtPass(x []float32, n, width int) {
	p := &m.pass
	p.op, p.width, p.x, p.n = passFWHT, width, x, n
	m.run(len(x) / width)
}

func (p *rowPass) Run(worker, lo, hi int) {
	m, w := p.m, p.width
	switch p.op {
	case passNorm:
		rmsNormRows(p.dst[lo*w:hi*w], p.x[lo*w:hi*w], p.w, p.eps)
	case passResidual:
		m.addResidual(p.x[lo*w:hi*w], p.y[lo*w:hi*w])
	case passAct:
		for r := lo; r < hi; r++ {
			g, u := p.x[r*w:(r+1)*w], p.y[r*w:(r+1)*w]
			if m.gelu != nil {
				gegluRow(g, u, m.gelu)
			} else {
				siluRow(g, g, u, m.lanes)
			}
		}
	case passQKV:
		m.finishQKV(worker, p.li, p.t0+lo, p.t0+hi)
	case passStoreKV:
		m.storeKV(worker, p.b, p.kv, p.li, p.x, p.y, lo, hi)
	case passFWHT:
		fwhtRows(p.x[lo*w:hi*w], p.n)
	}
}

// finishQKV computes batch rows [t0, t1) of layer li from the Q/K/V
// matmul's output to the attention's input: biases, Q/K norms, head
// interleaving, RoPE, Q scale and the KV rotation.
func (m *Model) finishQKV(worker, li, t0, t1 int) {
	c, s, ly := &m.cfg, &m.s, &m.layers[li]
	qDim, kvDim := c.Heads*c.HeadDim, c.KVHeads*c.HeadDim
	q, k, v := s.q[t0*qDim:t1*qDim], s.k[t0*kvDim:t1*kvDim], s.v[t0*kvDim:t1*kvDim]
	if ly.bq != nil {
		addBias(q, ly.bq)
		addBias(k, ly.bk)
		addBias(v, ly.bv)
	}
	if ly.qNorm != nil {
		rmsNormRows(q, q, ly.qNorm, c.RMSEps)
		rmsNormRows(k, k, ly.kNorm, c.RMSEps)
	}
	if m.permQK {
		interleaveHeads(q, c.HeadDim, s.work[worker].krow)
		interleaveHeads(k, c.HeadDim, s.work[worker].krow)
	}
	cosT, sinT := s.cos, s.sin
	if m.localRope && ly.window > 0 {
		cosT, sinT = s.cosL, s.sinL
	}
	for ti := t0; ti < t1; ti++ {
		i := ti - t0
		cs, sn := cosT[ti*c.HeadDim/2:ti*c.HeadDim/2+c.RopeDim/2], sinT[ti*c.HeadDim/2:ti*c.HeadDim/2+c.RopeDim/2]
		m.rope(q[i*qDim:(i+1)*qDim], cs, sn)
		m.rope(k[i*kvDim:(i+1)*kvDim], cs, sn)
	}
	if c.QScale != 0 {
		// Before the KV rotation: llama.cpp scales Qcur in the model
		// graph, and build_attn rotates what it is given.
		scaleInPlace(q, c.QScale)
	}
	if nk, nv := m.kvRotation(); nk > 0 {
		fwhtRows(q, nk)
		fwhtRows(k, nk)
		fwhtRows(v, nv)
	}
}

// storeKV writes the K/V rows of batch tokens [t0, t1) of layer li into
// the store (each token has its own slot, so tokens can be stored
// concurrently).
func (m *Model) storeKV(worker int, b *Batch, top *KV, li int, k, v []float32, t0, t1 int) {
	kv, layer := top.at(li)
	dim := kv.dim
	s := &m.s
	for t := t0; t < t1; t++ {
		slots := top.seqSlots(&b.Seqs[s.tokSeq[t]], li)
		slot := slots[b.Positions[t]]
		kt, vt := k[t*dim:(t+1)*dim], v[t*dim:(t+1)*dim]
		switch {
		case kv.q8:
			o8 := kv.off8(layer, slot)
			m.quantizeKV(worker, kv.k8[o8:o8+kv.row8], kt)
			m.quantizeKV(worker, kv.v8[o8:o8+kv.row8], vt)
		case kv.f16:
			off := kv.off(layer, slot)
			dk, dv := kv.k16[off:off+dim], kv.v16[off:off+dim]
			tensor.F32ToF16Row(dk, kt)
			tensor.F32ToF16Row(dv, vt)
		default:
			off := kv.off(layer, slot)
			copy(kv.k32[off:off+dim], kt)
			copy(kv.v32[off:off+dim], vt)
		}
	}
}
