package model

import (
	"os"
	"math"

	"github.com/lightllm-go/lightllm/pkg/tensor"
)

// attnTask computes causal attention for a list of token rows. One work
// item is (row, KV head): the K/V of that head are read once for the whole
// group of query heads that share it (GQA). K and V are gathered through
// the sequence's slot list, LightLLM's TokenAttention.
type attnTask struct {
	m     *Model
	b     *Batch
	kv    *KV
	layer int
	rows  []int32   // token index of each output row
	q     []float32 // [nTok x Heads*HeadDim], indexed by token
	out   []float32 // [len(rows) x Heads*HeadDim]
	// Per-worker scratch: scores [group x ctx] and the f16-rounded queries.
	scores [][]float32
	qr     [][]float32
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
		t.qr = make([][]float32, workers)
	}
	for w := 0; w < workers; w++ {
		if len(t.scores[w]) < group*maxCtx {
			t.scores[w] = make([]float32, group*maxCtx*5/4+64)
		}
		if len(t.qr[w]) < group*c.HeadDim {
			t.qr[w] = make([]float32, group*c.HeadDim)
		}
	}
	t.m, t.b, t.kv, t.layer, t.rows, t.q, t.out = m, b, kv, layer, rows, q, out
	items := len(rows) * c.KVHeads
	// An item costs about ctx*group*HeadDim*2 multiply-adds.
	grain := max(1, (1<<15)/max(1, maxCtx*group*c.HeadDim*2))
	m.ctx.Pool.Run(t, items, grain)
	t.b, t.kv, t.rows, t.q, t.out = nil, nil, nil, nil, nil
}

func (t *attnTask) Run(worker, lo, hi int) {
	c := &t.m.cfg
	hd, kvh := c.HeadDim, c.KVHeads
	group := c.Heads / kvh
	qDim := c.Heads * hd
	scale := 1 / float32(math.Sqrt(float64(hd)))
	kv := t.kv
	for it := lo; it < hi; it++ {
		r, g := it/kvh, it%kvh
		tok := int(t.rows[r])
		sq := &t.b.Seqs[t.m.s.tokSeq[tok]]
		n := int(t.b.Positions[tok]) + 1
		slots := sq.Slots[:n]
		sc := t.scores[worker][:group*n]
		// The group's query heads are contiguous: heads g*group .. g*group+group-1.
		qg := t.q[tok*qDim+g*group*hd : tok*qDim+(g+1)*group*hd]
		if kv.f16 && os.Getenv("QR") != "" {
			// llama.cpp multiplies an f16 cache by f16-rounded queries;
			// rounding here keeps scores identical up to summation order.
			qb := t.qr[worker][:group*hd]
			for i, v := range qg {
				qb[i] = tensor.F16ToF32(tensor.F32ToF16(v))
			}
			qg = qb
		}
		if kv.f16 && os.Getenv("FA") != "" {
			qb := t.qr[worker][:group*hd]
			for i, v := range t.q[tok*qDim+g*group*hd : tok*qDim+(g+1)*group*hd] {
				qb[i] = tensor.F16ToF32(tensor.F32ToF16(v))
			}
			for h := 0; h < group; h++ {
				o := t.out[r*qDim+(g*group+h)*hd : r*qDim+(g*group+h+1)*hd]
				clear(o)
				M := float32(math.Inf(-1))
				var S float32
				for _, slot := range slots {
					off := kv.off(t.layer, slot) + g*hd
					s := tensor.DotF16(kv.k16[off:off+hd], qb[h*hd:(h+1)*hd]) * scale
					ms, vs := float32(1), float32(1)
					if s > M {
						Mold := M
						M = s
						ms = float32(math.Exp(float64(Mold - M)))
						for d := range o {
							o[d] = tensor.F16ToF32(tensor.F32ToF16(o[d] * ms))
						}
					} else {
						vs = float32(math.Exp(float64(s - M)))
					}
					for d := range o {
						o[d] = tensor.F16ToF32(tensor.F32ToF16(o[d] + tensor.F16ToF32(kv.v16[off+d])*vs))
					}
					S = S*ms + vs
				}
				inv := 1 / S
				for d := range o {
					o[d] *= inv
				}
			}
			continue
		}
		for j, slot := range slots {
			off := kv.off(t.layer, slot) + g*hd
			for h := 0; h < group; h++ {
				var d float32
				if kv.f16 {
					d = tensor.DotF16(kv.k16[off:off+hd], qg[h*hd:(h+1)*hd])
				} else {
					d = tensor.DotF32(kv.k32[off:off+hd], qg[h*hd:(h+1)*hd])
				}
				sc[h*n+j] = d * scale
			}
		}
		for h := 0; h < group; h++ {
			p := sc[h*n : (h+1)*n]
			softmax(p, kv.f16 && os.Getenv("PR") != "")
			o := t.out[r*qDim+(g*group+h)*hd : r*qDim+(g*group+h+1)*hd]
			clear(o)
			for j, slot := range slots {
				off := kv.off(t.layer, slot) + g*hd
				if kv.f16 {
					tensor.AxpyF16(o, p[j], kv.v16[off:off+hd])
				} else {
					tensor.AxpyF32(o, p[j], kv.v32[off:off+hd])
				}
			}
		}
	}
}

// softmax normalizes p in place: the sum is accumulated in float64 and
// the reciprocal applied in float32 as ggml's soft_max does. With an f16
// cache the probabilities are rounded to f16, as llama.cpp converts them
// before multiplying by V.
func softmax(p []float32, roundF16 bool) {
	mx := float32(math.Inf(-1))
	for _, v := range p {
		mx = max(mx, v)
	}
	var sum float64
	for i, v := range p {
		e := float32(math.Exp(float64(v - mx)))
		p[i] = e
		sum += float64(e)
	}
	inv := float32(1 / sum)
	for i := range p {
		p[i] *= inv
		if roundF16 {
			p[i] = tensor.F16ToF32(tensor.F32ToF16(p[i]))
		}
	}
}
