package model

import (
	"math"

	"github.com/lightllm-go/lightllm/pkg/tensor"
)

// attnTask computes causal attention for a list of token rows. One work
// item is (row, KV head): the K/V of that head are read once for the whole
// group of query heads sharing it (GQA). K and V are gathered through the
// sequence's slot list (LightLLM's TokenAttention), so a sequence's tokens
// may sit anywhere in the store.
type attnTask struct {
	m     *Model
	b     *Batch
	kv    *KV // the store holding the layer (KV.at), layer its index there
	layer int
	local bool // the layer reads Seq.Local (a windowed store's local layer)
	// window is the layer's sliding window (0: none): a query at position
	// p sees the keys at p-window+1 .. p, as llama.cpp masks the others
	// (its one-query kernels skip masked keys, so a sub-range of the slots
	// is exact).
	window int
	rows   []int32   // token index of each output row
	q      []float32 // [nTok x Heads*HeadDim], indexed by token
	out    []float32 // [len(rows) x Heads*HeadDim]
	// Per-worker scratch.
	scores [][]float32 // [group x ctx] scores
	offs   [][]int     // f16 cache: offset of each key in the store [ctx]
	ms, vs [][]float32 // f16 cache: per head and key rescale and weight [group x ctx]
	// Tiled path, per worker: a block's query vectors, their scores for
	// one tile, f32 output accumulators, softmax state and positions.
	bq, bp, bacc [][]float32
	bS, bM       [][]float32
	bpos         [][]int32
	units        []attnUnit  // rows grouped into blocks; one work item per (unit, KV head)
	q8           []q8Scratch // q8_0 store, per worker
	qr           [][]uint16  // f16 cache: queries converted to f16 [group x HeadDim]
	qf           [][]float32 // f16 cache: those queries widened back to f32 [group x HeadDim]
	acc          [][]uint16  // f16 cache: f16 accumulators [group x HeadDim]
	st           [][]float32 // f16 cache: softmax sum per head [group]
	mx           [][]float32 // f16 cache: running maximum per head [group]
	sinks        []float32   // the layer's attention sinks [Heads] (nil: none)
}

func (m *Model) attention(b *Batch, kv *KV, layer int, rows []int32, q, out []float32) {
	c := &m.cfg
	group := c.Heads / c.KVHeads
	maxCtx := 0
	for _, sq := range b.Seqs {
		maxCtx = max(maxCtx, len(sq.Slots))
	}
	t := &m.attn
	workers := m.ctx.Pool.Threads()
	if len(t.scores) < workers {
		t.scores = make([][]float32, workers)
		t.offs = make([][]int, workers)
		t.ms, t.vs = make([][]float32, workers), make([][]float32, workers)
		t.bq, t.bp, t.bacc = make([][]float32, workers), make([][]float32, workers), make([][]float32, workers)
		t.bS, t.bM, t.bpos = make([][]float32, workers), make([][]float32, workers), make([][]int32, workers)
		t.q8 = make([]q8Scratch, workers)
		t.qr = make([][]uint16, workers)
		t.qf = make([][]float32, workers)
		t.acc = make([][]uint16, workers)
		t.st = make([][]float32, workers)
		t.mx = make([][]float32, workers)
	}
	for w := 0; w < workers; w++ {
		if len(t.scores[w]) < group*maxCtx {
			t.scores[w] = make([]float32, group*maxCtx*5/4+64)
		}
		if n := max(maxCtx, tensor.FATile); len(t.offs[w]) < n {
			t.offs[w] = make([]int, n*5/4+16)
			t.ms[w], t.vs[w] = make([]float32, group*(n*5/4+16)), make([]float32, group*(n*5/4+16))
		}
		if len(t.qr[w]) < group*c.HeadDim {
			t.qr[w] = make([]uint16, group*c.HeadDim)
			t.qf[w] = make([]float32, group*c.HeadDim)
			t.acc[w] = make([]uint16, group*c.HeadDim)
			t.st[w] = make([]float32, group)
			t.mx[w] = make([]float32, group)
		}
		if nv := m.blockVectors(); len(t.bS[w]) < nv {
			t.bq[w], t.bacc[w] = make([]float32, nv*c.HeadDim), make([]float32, nv*c.HeadDim)
			t.bp[w] = make([]float32, nv*tensor.FATile)
			t.bS[w], t.bM[w], t.bpos[w] = make([]float32, nv), make([]float32, nv), make([]int32, nv)
		}
	}
	if kv.f16 {
		m.packTiles(b, kv, layer)
	}
	t.window, t.sinks = m.layers[layer].window, m.layers[layer].sinks
	t.local = kv.Windowed() && kv.isLocal[layer]
	st, sl := kv.at(layer)
	t.m, t.b, t.kv, t.layer, t.rows, t.q, t.out = m, b, st, sl, rows, q, out
	t.units = m.attnUnits(b, kv, rows, t.units[:0])
	items := len(t.units) * c.KVHeads
	// An item costs about ctx*group*HeadDim*2 multiply-adds (a block of
	// tiled rows several times that: one item each).
	grain := max(1, (1<<15)/max(1, maxCtx*group*c.HeadDim*2))
	if len(t.units) < len(rows) {
		grain = 1
	}
	m.ctx.Pool.Run(t, items, grain)
	t.b, t.kv, t.rows, t.q, t.out, t.sinks = nil, nil, nil, nil, nil, nil
}

func (t *attnTask) Run(worker, lo, hi int) {
	c := &t.m.cfg
	hd, kvh := c.HeadDim, c.KVHeads
	group := c.Heads / kvh
	qDim := c.Heads * hd
	for it := lo; it < hi; it++ {
		u, g := t.units[it/kvh], it%kvh
		if u.tiled {
			t.blockTiled(worker, g, u)
			continue
		}
		r := int(u.r0)
		tok := int(t.rows[r])
		sq := &t.b.Seqs[t.m.s.tokSeq[tok]]
		pos := int(t.b.Positions[tok])
		slots := sq.Slots[:pos+1]
		if t.local {
			slots = sq.Local[:pos+1]
		}
		if t.window > 0 && pos+1 > t.window {
			slots = slots[pos+1-t.window:]
		}
		// The group's query heads are contiguous: g*group .. g*group+group-1.
		qg := t.q[tok*qDim+g*group*hd : tok*qDim+(g+1)*group*hd]
		og := t.out[r*qDim+g*group*hd : r*qDim+(g+1)*group*hd]
		switch {
		case t.kv.q8:
			t.headQ8(worker, g, slots, qg, og)
		case t.kv.f16:
			t.headF16(worker, g, slots, qg, og)
		default:
			t.headF32(worker, g, slots, qg, og)
		}
	}
}

// headF16 follows llama.cpp's CPU flash attention over an f16 cache
// (ggml_compute_forward_flash_attn_ext_f16_one_chunk) operation for
// operation: queries converted to f16, ggml_vec_dot_f16 scores, one pass
// with a running maximum, glibc's expf, and an f16 output accumulator
// updated with fused multiply-adds. Matching its rounding keeps greedy
// decoding identical to llama.cpp's.
func (t *attnTask) headF16(worker, g int, slots []int32, qg, og []float32) {
	c := &t.m.cfg
	hd := c.HeadDim
	group := len(qg) / hd
	scale, cp := t.m.kqScale, c.AttnSoftcap
	if cp != 0 {
		scale /= cp // ggml: scale /= logit_softcap, then cap*tanhf(s*scale)
	}
	kv := t.kv
	qb := t.qr[worker][:len(qg)]
	tensor.F32ToF16Row(qb, qg)
	// The scores do not depend on the running softmax, so all of them are
	// computed first (several keys at a time), then accumulated in order.
	n := len(slots)
	offs := t.offs[worker][:n]
	for j, slot := range slots {
		offs[j] = kv.off(t.layer, slot) + g*hd
	}
	// ggml runs each query head on its own; the group's heads share the
	// keys, so one pass over the keys (and one over the values) serves
	// them all, each head its own chains (tensor.DotF16GGMLHeads).
	sc := t.scores[worker][:group*n]
	tensor.DotF16GGMLHeads(sc, kv.k16, offs, qb, group, t.qf[worker])
	// The running maximum and every exp depend on the scores only, so the
	// rescale (ms) and weight (vs) of each key are found first; the f16
	// value accumulation then runs in one pass.
	acc := t.acc[worker][:len(qg)]
	clear(acc)
	S, Mx := t.st[worker][:group], t.mx[worker][:group]
	for h := 0; h < group; h++ {
		ms, vs := t.ms[worker][h*n:(h+1)*n], t.vs[worker][h*n:(h+1)*n]
		// Each key's exp argument depends on the running maximum only,
		// so the arguments are found first and their exps computed as
		// one row (vectorised, same bits as one expf each): at a new
		// maximum the key rescales (ms = exp(m_old - s), vs = 1), else
		// it weighs in (ms = 1, vs = exp(s - m)); ms 0 marks the former
		// until the exps are in.
		m := float32(math.Inf(-1))
		for j, s := range sc[h*n : (h+1)*n] {
			s *= scale
			if cp != 0 {
				s = cp * tanhf(s)
			}
			if s > m {
				ms[j], vs[j] = 0, m-s
				m = s
			} else {
				ms[j], vs[j] = 1, s-m
			}
		}
		tensor.ExpfRow(vs, vs)
		sum := float32(0)
		for j := range vs {
			if ms[j] == 0 {
				ms[j], vs[j] = vs[j], 1
			}
			sum = float32(sum*ms[j]) + vs[j]
		}
		S[h], Mx[h] = sum, m
	}
	tensor.FlashAccF16Heads(acc, kv.v16, offs, t.ms[worker][:group*n], t.vs[worker][:group*n], group)
	for h := 0; h < group; h++ {
		// The f16 accumulator is widened to f32 first, then rescaled for
		// the sink (ggml's order), then divided.
		ms := t.sink(g*group+h, Mx[h], &S[h], false)
		inv := float32(0)
		if S[h] != 0 {
			inv = 1 / S[h]
		}
		o, a := og[h*hd:(h+1)*hd], acc[h*hd:(h+1)*hd]
		for d := range o {
			v := tensor.F16ToF32(a[d])
			if ms != 1 {
				v *= ms
			}
			o[d] = v * inv
		}
	}
}

// sink folds query head h's attention sink (Layer.sinks) into its
// softmax after the keys, as ggml's flash attention does: a sink above the
// running maximum mx rescales the sum S and the accumulator (by the
// returned factor; 1 otherwise), else exp(sink - mx) is added to S.
// S = S*ms + vs is one fused multiply-add in llama.cpp's build of the
// tiled kernel (fused) and two roundings in its one-query kernel, like
// that kernel's key loop (checked on the gpt-oss fixture: either choice
// alone misses llama.cpp's log-probabilities by ~1e-4 on some prompts).
func (t *attnTask) sink(h int, mx float32, S *float32, fused bool) (ms float32) {
	if t.sinks == nil {
		return 1
	}
	sv := t.sinks[h]
	ms, vs := float32(1), float32(1)
	if sv > mx {
		ms = tensor.Expf(mx - sv)
	} else {
		vs = tensor.Expf(sv - mx)
	}
	if fused {
		*S = tensor.FMA32(*S, ms, vs)
	} else {
		*S = float32(*S*ms) + vs
	}
	return ms
}

// headF32 is exact attention over an f32 cache: scores, a two-pass
// softmax with a float64 sum, then the weighted sum of values.
func (t *attnTask) headF32(worker, g int, slots []int32, qg, og []float32) {
	c := &t.m.cfg
	hd := c.HeadDim
	group := len(qg) / hd
	n := len(slots)
	scale, cp := t.m.kqScale, c.AttnSoftcap
	if cp != 0 {
		scale /= cp
	}
	kv := t.kv
	sc := t.scores[worker][:group*n]
	for j, slot := range slots {
		off := kv.off(t.layer, slot) + g*hd
		k := kv.k32[off : off+hd]
		for h := 0; h < group; h++ {
			s := tensor.DotF32(k, qg[h*hd:(h+1)*hd]) * scale
			if cp != 0 {
				s = cp * tanhf(s)
			}
			sc[h*n+j] = s
		}
	}
	for h := 0; h < group; h++ {
		p := sc[h*n : (h+1)*n]
		mx := float32(math.Inf(-1))
		for _, v := range p {
			mx = max(mx, v)
		}
		var sum float64
		if t.sinks != nil {
			// The sink joins the softmax without a value.
			sv := t.sinks[g*group+h]
			mx = max(mx, sv)
			sum = float64(tensor.Expf(sv - mx))
		}
		for i, v := range p {
			e := tensor.Expf(v - mx)
			p[i] = e
			sum += float64(e)
		}
		inv := float32(1 / sum)
		o := og[h*hd : (h+1)*hd]
		clear(o)
		for j, slot := range slots {
			off := kv.off(t.layer, slot) + g*hd
			tensor.AxpyF32(o, p[j]*inv, kv.v32[off:off+hd])
		}
	}
}
