package model

import (
	"fmt"
	"math"

	"github.com/lightllm-go/lightllm/pkg/tensor"
)

// Batch is one forward step over several sequences. Tokens of all
// sequences are concatenated.
type Batch struct {
	Tokens    []int32 // new tokens, all sequences concatenated
	Positions []int32 // absolute position of each new token
	Seqs      []Seq
}

// Seq is one sequence's part of a Batch.
type Seq struct {
	Start, Len int // this sequence's new tokens are Tokens[Start:Start+Len]
	// Slots is the KV slot of every position 0..lastPos of the sequence
	// (len == position of the last new token + 1). The new tokens' K/V are
	// written to Slots[pos]; attention reads Slots[0..pos].
	Slots []int32
	// Local is, for a windowed KV store (NewWindowKV), the local-layer slot
	// of every position (len == len(Slots)). Only the positions some new
	// token's window reaches (from the first new position - window + 1)
	// are read; the others may be -1 (freed).
	Local      []int32
	WantLogits bool // logits for the last new token
	// Hidden, when set (len >= Hidden size), receives final hidden states
	// (after the final norm, before the output head) for embeddings, as
	// HiddenMode says; a sequence may want them without logits.
	Hidden     []float32
	HiddenMode HiddenMode
}

// HiddenMode says which final hidden states of a sequence's new tokens
// Forward writes to Seq.Hidden: what one prefill chunk contributes to a
// pooled embedding (pkg/engine pools over the chunks of a prompt).
type HiddenMode uint8

const (
	HiddenLast  HiddenMode = iota // the last new token's (last-token pooling)
	HiddenSum                     // added over the new tokens (mean pooling: the caller divides)
	HiddenFirst                   // the first new token's (CLS pooling, on the chunk at position 0)
)

// scratch holds every activation buffer of a forward pass. Buffers grow to
// the largest batch seen and are then reused, so steady-state steps do not
// allocate.
type scratch struct {
	nTok, nOut int
	x, xn      []float32     // [nTok x Hidden]
	q, att     []float32     // [nTok x Heads*HeadDim]
	k, v       []float32     // [nTok x KVHeads*HeadDim]
	proj       []float32     // [nTok x Hidden]
	gate, up   []float32     // [nTok x FFN]
	cos, sin   []float32     // [nTok x HeadDim/2]
	cosL, sinL []float32     // the same for local layers with their own RoPE (Model.localRope)
	tokSeq     []int32       // sequence index of each token
	sgemm      rowModes      // per token: which of llama.cpp's batch kernels it would use
	rowGemm    rowModes      // sgemm's modes of the rows computed in the last layer
	ktOff      []int         // per sequence: start of its packed key tiles in kt (-1: none)
	kt, vt     []float32     // f32 key (transposed) and value tiles of the tiled attention path
	work       []workScratch // per pool worker
	rows       []int32       // token index of each row the attention computes
	logits     []float32     // [nOut x Vocab]
	moe        moeScratch
}

// workScratch is one pool worker's scratch in the row passes.
type workScratch struct {
	krow []float32 // one head of values
	kvq  []int8    // q8_0 KV store: one row's quantized values
	kvd  []float32 // and block scales
}

// rowModes holds, per token, the llama.cpp kernel choice a product
// reproduces (tensor.LlamaCppRowMode).
type rowModes = []tensor.RowMode

func (m *Model) ensureScratch(nTok, nOut int) {
	s, c := &m.s, &m.cfg
	if nTok > s.nTok {
		qDim, kvDim := c.Heads*c.HeadDim, c.KVHeads*c.HeadDim
		s.nTok = nTok
		s.x, s.xn, s.proj = make([]float32, nTok*c.Hidden), make([]float32, nTok*c.Hidden), make([]float32, nTok*c.Hidden)
		s.q, s.att = make([]float32, nTok*qDim), make([]float32, nTok*qDim)
		s.k, s.v = make([]float32, nTok*kvDim), make([]float32, nTok*kvDim)
		ffn := max(c.FFN, c.SharedFFN)
		s.gate, s.up = make([]float32, nTok*ffn), make([]float32, nTok*ffn)
		s.cos, s.sin = make([]float32, nTok*c.HeadDim/2), make([]float32, nTok*c.HeadDim/2)
		if m.localRope {
			s.cosL, s.sinL = make([]float32, nTok*c.HeadDim/2), make([]float32, nTok*c.HeadDim/2)
		}
		s.tokSeq, s.rows = make([]int32, nTok), make([]int32, nTok)
		s.sgemm, s.rowGemm = make(rowModes, nTok), make(rowModes, nTok)
	}
	if len(s.work) < m.ctx.Pool.Threads() {
		s.work = make([]workScratch, m.ctx.Pool.Threads())
		for i := range s.work {
			s.work[i] = workScratch{krow: make([]float32, c.HeadDim)}
		}
	}
	if c.Experts > 0 {
		s.moe.ensure(c, s.nTok)
	}
	if nOut > s.nOut {
		s.nOut = nOut
		s.logits = make([]float32, nOut*c.Vocab)
	}
}

// validate checks a batch against the model and the KV store so that bad
// input is an error, never an index panic inside a worker.
func (m *Model) validate(b *Batch, kv *KV, logits [][]float32) (nOut int, err error) {
	n := len(b.Tokens)
	if len(b.Positions) != n {
		return 0, fmt.Errorf("forward: %d tokens but %d positions", n, len(b.Positions))
	}
	if kv == nil || kv.layers != m.cfg.Layers || kv.dim != m.cfg.KVHeads*m.cfg.HeadDim || kv.f16 != m.kvF16 || kv.q8 != m.kvQ8 {
		return 0, fmt.Errorf("forward: KV store was not made by this model")
	}
	next := 0
	for i, sq := range b.Seqs {
		if sq.Start != next || sq.Len <= 0 || sq.Start+sq.Len > n {
			return 0, fmt.Errorf("forward: seq %d covers tokens [%d,%d) but must start at %d, be non-empty and end by %d",
				i, sq.Start, sq.Start+sq.Len, next, n)
		}
		next = sq.Start + sq.Len
		for t := sq.Start; t < next; t++ {
			p := b.Positions[t]
			if p < 0 || int(p) >= len(sq.Slots) {
				return 0, fmt.Errorf("forward: seq %d token %d at position %d outside its %d slots", i, t, p, len(sq.Slots))
			}
			if tok := b.Tokens[t]; tok < 0 || int(tok) >= m.cfg.Vocab {
				return 0, fmt.Errorf("forward: token id %d outside the vocabulary (%d)", tok, m.cfg.Vocab)
			}
		}
		if last := b.Positions[next-1]; int(last) != len(sq.Slots)-1 {
			return 0, fmt.Errorf("forward: seq %d: last new token at position %d but %d slots", i, last, len(sq.Slots))
		}
		for _, sl := range sq.Slots {
			if sl < 0 || int(sl) >= kv.slots {
				return 0, fmt.Errorf("forward: seq %d: slot %d outside the KV store (%d slots)", i, sl, kv.slots)
			}
		}
		if err := m.validateLocal(kv, &sq, b.Positions[sq.Start]); err != nil {
			return 0, fmt.Errorf("forward: seq %d: %w", i, err)
		}
		if sq.Hidden != nil && (len(sq.Hidden) < m.cfg.Hidden || sq.HiddenMode > HiddenFirst) {
			return 0, fmt.Errorf("forward: seq %d: hidden buffer of %d for hidden size %d (mode %d)", i, len(sq.Hidden), m.cfg.Hidden, sq.HiddenMode)
		}
		if sq.WantLogits {
			if i >= len(logits) || len(logits[i]) < m.cfg.Vocab {
				return 0, fmt.Errorf("forward: seq %d wants logits but logits[%d] is missing or shorter than %d", i, i, m.cfg.Vocab)
			}
			nOut++
		}
	}
	if next != n {
		return 0, fmt.Errorf("forward: sequences cover %d of %d tokens", next, n)
	}
	return nOut, nil
}

// validateLocal checks a sequence's local slots against a windowed store
// and grows the store's memory to the highest one. first is the position
// of the sequence's first new token.
func (m *Model) validateLocal(kv *KV, sq *Seq, first int32) error {
	if !kv.Windowed() {
		if sq.Local != nil {
			return fmt.Errorf("local slots given for a KV store without a local part")
		}
		return nil
	}
	if len(sq.Local) != len(sq.Slots) {
		return fmt.Errorf("%d local slots for %d positions", len(sq.Local), len(sq.Slots))
	}
	read := max(0, int(first)-m.LocalWindow()+1) // the first position a new token's window reaches
	hi := int32(-1)
	for p, sl := range sq.Local {
		if sl < -1 || int(sl) >= kv.local.maxSlots || (sl < 0 && p >= read) {
			return fmt.Errorf("local slot %d at position %d outside the KV store (%d slots; windows read from %d)",
				sl, p, kv.local.maxSlots, read)
		}
		hi = max(hi, sl)
	}
	return kv.growLocal(int(hi) + 1)
}

// Forward runs one step: it writes the new tokens' K/V into kv and fills
// logits[i] (len >= Vocab) for every Seqs[i] with WantLogits.
func (m *Model) Forward(b *Batch, kv *KV, logits [][]float32) error {
	nOut, err := m.validate(b, kv, logits)
	if err != nil {
		return err
	}
	N := len(b.Tokens)
	if N == 0 {
		return nil
	}
	c, s := &m.cfg, &m.s
	m.ensureScratch(N, nOut)
	H, qDim, kvDim := c.Hidden, c.Heads*c.HeadDim, c.KVHeads*c.HeadDim
	for si, sq := range b.Seqs {
		for t := sq.Start; t < sq.Start+sq.Len; t++ {
			s.tokSeq[t] = int32(si)
			// llama.cpp multiplies a batch of two or more tokens with
			// llamafile's sgemm and a single token with ggml_vec_dot, and
			// q4_K tokens in fours with its gemm, the rest with its gemv;
			// these round differently; deciding per sequence keeps each
			// sequence's numbers independent of the rest of the batch.
			s.sgemm[t] = tensor.LlamaCppRowMode(sq.Len, t-sq.Start)
		}
	}
	x := s.x[:N*H]
	for i, tok := range b.Tokens {
		m.embed.DequantizeRow(int(tok), x[i*H:(i+1)*H])
	}
	if c.EmbedScale != 0 {
		scaleInPlace(x, c.EmbedScale)
	}
	for i, p := range b.Positions {
		// Only the first RopeDim/2 pairs rotate (partial rotary).
		m.ropeTable(p, s.cos[i*c.HeadDim/2:i*c.HeadDim/2+c.RopeDim/2], s.sin[i*c.HeadDim/2:i*c.HeadDim/2+c.RopeDim/2])
		if m.localRope {
			ropeTableScaled(p, m.ropeScaleL, m.freqScaleL, s.cosL[i*c.HeadDim/2:i*c.HeadDim/2+c.RopeDim/2], s.sinL[i*c.HeadDim/2:i*c.HeadDim/2+c.RopeDim/2])
		}
	}
	for i := range s.rows[:N] {
		s.rows[i] = int32(i)
	}
	rows := s.rows[:N] // token rows still being computed
	for li := range m.layers {
		ly := &m.layers[li]
		// K/V are needed for every new token, even in the last layer.
		blk := m.rowPiece(ly, N)
		for t0 := 0; t0 < N; t0 += blk {
			if err := m.preAttention(li, t0, min(N, t0+blk)); err != nil {
				return err
			}
		}
		m.tr("Qcur", li, s.q[:N*qDim])
		m.tr("Kcur", li, s.k[:N*kvDim])
		m.tr("Vcur", li, s.v[:N*kvDim])
		m.storeKVRows(b, kv, li, s.k[:N*kvDim], s.v[:N*kvDim])
		gemm := s.sgemm[:N]
		ffnGemm := gemm
		if li == len(m.layers)-1 && !m.fam.lateRows {
			// Only the rows whose logits are wanted matter from here on.
			// llama.cpp drops the other rows after the attention output
			// projection, so that projection keeps the batch rounding and
			// the feed-forward network of the kept row uses the single-row
			// one.
			rows = m.outputRows(b)
			if len(rows) == 0 {
				return nil
			}
			for j, i := range rows {
				copy(s.x[j*H:(j+1)*H], s.x[int(i)*H:(int(i)+1)*H])
				s.rowGemm[j] = s.sgemm[i]
			}
			gemm, ffnGemm = s.rowGemm[:len(rows)], nil
		}
		R := len(rows)
		att := s.att[:R*qDim]
		m.attention(b, kv, li, rows, s.q[:N*qDim], att)
		if _, nv := m.kvRotation(); nv > 0 {
			m.fwhtPass(att, nv, qDim) // back from the rotated value space
		}
		m.tr("kqv_out", li, att)
		blk = m.rowPiece(ly, R)
		for r0 := 0; r0 < R; r0 += blk {
			r1 := min(R, r0+blk)
			if err := m.postAttention(li, r0, r1, subModes(gemm, r0, r1), subModes(ffnGemm, r0, r1)); err != nil {
				return err
			}
		}
		m.tr("l_out", li, s.x[:R*H])
	}
	if m.fam.lateRows {
		// The rows wanted, picked after the whole last layer (family.lateRows).
		rows = m.outputRows(b)
		if len(rows) == 0 {
			return nil
		}
		for j, i := range rows {
			copy(s.x[j*H:(j+1)*H], s.x[int(i)*H:(int(i)+1)*H])
		}
	}
	R := len(rows)
	xn := s.xn[:R*H]
	rmsNormRows(xn, s.x[:R*H], m.outNorm, c.RMSEps)
	m.tr("result_norm", -1, xn)
	xn, R = m.hiddenRows(b, rows, xn)
	if R == 0 {
		return nil
	}
	out := s.logits[:R*c.Vocab]
	if err := m.ctx.MatMulGGML(xn, R, nil, tensor.Out{W: m.output, Y: out}); err != nil {
		return err
	}
	if c.LogitScale != 0 {
		// ggml_scale by 1/scale, the reciprocal rounded to float32 first.
		scaleInPlace(out, 1/c.LogitScale)
	}
	if cp := c.FinalSoftcap; cp != 0 {
		// ggml_scale(1/cap), ggml_tanh, ggml_scale(cap).
		inv := 1 / cp
		for i, v := range out {
			out[i] = tanhf(v*inv) * cp
		}
	}
	m.tr("result_output", -1, out)
	j := 0
	for si, sq := range b.Seqs {
		if sq.WantLogits {
			copy(logits[si][:c.Vocab], out[j*c.Vocab:(j+1)*c.Vocab])
			j++
		}
	}
	return nil
}

// defaultRowBlock is the most token rows Forward runs through the
// per-row parts of a layer (everything but the attention) at once:
// llama.cpp's default n_ubatch. A 4096-token chunk in one piece spent
// 10-25% more CPU time than eight pieces of 512: its FFN activations (4096
// x FFN floats) leave the caches between the matmuls, norms and
// activation passes. Every per-row result is independent of the rows
// computed beside it (the matmul kernels' rounding follows each row's own
// RowMode), so the pieces give the same bits (TestRowBlocksSameBits).
const defaultRowBlock = 512

// rowPiece is how many of n rows layer ly computes per piece: all of them
// while a trace watches whole tensors, or when the layer routes tokens to
// experts (which groups a batch's rows by expert).
func (m *Model) rowPiece(ly *layer, n int) int {
	if m.trace != nil || ly.experts != nil || m.rowBlock <= 0 {
		return max(n, 1)
	}
	return m.rowBlock
}

// subModes is modes[r0:r1], or nil (the single-row kernels) for nil.
func subModes(modes rowModes, r0, r1 int) rowModes {
	if modes == nil {
		return nil
	}
	return modes[r0:r1]
}

// preAttention computes token rows [t0, t1) of layer li up to the
// attention: the normed input's Q, K and V with their biases, norms, RoPE,
// scale and rotation, into the batch's q, k and v.
func (m *Model) preAttention(li, t0, t1 int) error {
	c, s, ly := &m.cfg, &m.s, &m.layers[li]
	H, qDim, kvDim := c.Hidden, c.Heads*c.HeadDim, c.KVHeads*c.HeadDim
	n := t1 - t0
	xn := s.xn[t0*H : t1*H]
	q, k, v := s.q[t0*qDim:t1*qDim], s.k[t0*kvDim:t1*kvDim], s.v[t0*kvDim:t1*kvDim]
	m.normRows(xn, s.x[t0*H:t1*H], ly.attnNorm, c.RMSEps)
	m.tr("attn_norm", li, xn)
	if err := m.ctx.MatMulGGML(xn, n, s.sgemm[t0:t1], tensor.Out{W: ly.wq, Y: q}, tensor.Out{W: ly.wk, Y: k}, tensor.Out{W: ly.wv, Y: v}); err != nil {
		return err
	}
	m.qkvRows(li, t0, t1)
	return nil
}

// postAttention computes rows [r0, r1) of layer li from the attention
// output on: the output projection (row modes gemm), the residual, the
// feed-forward network (ffnGemm) and its residual, into x.
func (m *Model) postAttention(li, r0, r1 int, gemm, ffnGemm rowModes) error {
	c, s, ly := &m.cfg, &m.s, &m.layers[li]
	H, qDim := c.Hidden, c.Heads*c.HeadDim
	n := r1 - r0
	att, proj := s.att[r0*qDim:r1*qDim], s.proj[r0*H:r1*H]
	if err := m.ctx.MatMulGGML(att, n, gemm, tensor.Out{W: ly.wo, Y: proj}); err != nil {
		return err
	}
	if ly.bo != nil {
		addBias(proj, ly.bo)
	}
	m.tr("attn_out", li, proj)
	if ly.postAttn != nil {
		m.normRows(proj, proj, ly.postAttn, c.RMSEps)
		m.tr("attn_post_norm", li, proj)
	}
	xr, xn := s.x[r0*H:r1*H], s.xn[r0*H:r1*H]
	m.residualRows(xr, proj, H)
	m.tr("ffn_inp", li, xr)
	m.normRows(xn, xr, ly.ffnNorm, c.RMSEps)
	m.tr("ffn_norm", li, xn)
	if ly.experts != nil {
		if err := m.moeFFN(li, xn, n, ffnGemm, proj); err != nil {
			return err
		}
	} else if err := m.denseFFN(li, xn, n, ffnGemm, proj); err != nil {
		return err
	}
	m.tr("ffn_out", li, proj)
	if ly.postFFN != nil {
		m.normRows(proj, proj, ly.postFFN, c.RMSEps)
		m.tr("ffn_post_norm", li, proj)
	}
	m.residualRows(xr, proj, H)
	return nil
}

// denseFFN computes the gated FFN of R rows xn into out ([R x Hidden]).
func (m *Model) denseFFN(li int, xn []float32, R int, ffnGemm rowModes, proj []float32) error {
	s, ly := &m.s, &m.layers[li]
	F := ly.wGate.Rows // Config.FFN, or a shared expert's SharedFFN
	gate, up := s.gate[:R*F], s.up[:R*F]
	if err := m.ctx.MatMulGGML(xn, R, ffnGemm, tensor.Out{W: ly.wGate, Y: gate}, tensor.Out{W: ly.wUp, Y: up}); err != nil {
		return err
	}
	m.tr("ffn_gate", li, gate)
	m.tr("ffn_up", li, up)
	m.actRows(gate, up, F)
	m.tr("ffn_swiglu", li, gate)
	return m.ctx.MatMulGGML(gate, R, ffnGemm, tensor.Out{W: ly.wDown, Y: proj})
}

// outputRows lists, in increasing order, the tokens whose final hidden
// state is needed: the last token of each sequence that wants logits or
// its last hidden state, every token of one that sums them, the first of
// one that wants the first. It reuses the rows buffer (its entries are
// only read in increasing order).
func (m *Model) outputRows(b *Batch) []int32 {
	rows := m.s.rows[:0]
	for _, sq := range b.Seqs {
		end, hid := sq.Start+sq.Len-1, sq.Hidden != nil
		switch {
		case hid && sq.HiddenMode == HiddenSum:
			for t := sq.Start; t <= end; t++ {
				rows = append(rows, int32(t))
			}
		case hid && sq.HiddenMode == HiddenFirst:
			rows = append(rows, int32(sq.Start))
			if sq.WantLogits && end != sq.Start {
				rows = append(rows, int32(end))
			}
		case hid || sq.WantLogits:
			rows = append(rows, int32(end))
		}
	}
	return rows
}

// ForwardsHidden reports that Forward honours Seq.Hidden (the engine
// refuses embedding requests on a model that does not).
func (m *Model) ForwardsHidden() bool { return true }

// hiddenRows hands the final-norm rows xn (one per entry of rows) to the
// sequences that want hidden states, and returns the rows that go on to
// the output head — those of sequences wanting logits, in order, moved to
// the front of xn when others are interleaved — and their count.
func (m *Model) hiddenRows(b *Batch, rows []int32, xn []float32) ([]float32, int) {
	H := m.cfg.Hidden
	keep, j := 0, 0
	for _, sq := range b.Seqs {
		for j < len(rows) && int(rows[j]) < sq.Start+sq.Len {
			t, row := int(rows[j]), xn[j*H:(j+1)*H]
			if sq.Hidden != nil {
				switch {
				case sq.HiddenMode == HiddenSum:
					addInPlace(sq.Hidden[:H], row)
				case sq.HiddenMode == HiddenFirst && t == sq.Start,
					sq.HiddenMode == HiddenLast && t == sq.Start+sq.Len-1:
					copy(sq.Hidden[:H], row)
				}
			}
			if sq.WantLogits && t == sq.Start+sq.Len-1 {
				if keep != j {
					copy(xn[keep*H:(keep+1)*H], row)
				}
				keep++
			}
			j++
		}
	}
	return xn[:keep*H], keep
}

// rmsNormRows normalizes each row of x (rows of len(w)) into dst and
// multiplies by w. The sum of squares is accumulated in float64 and the
// scale rounded as ggml's rms_norm does.
func rmsNormRows(dst, x, w []float32, eps float32) {
	n := len(w)
	for r := 0; r+n <= len(x); r += n {
		row, out := x[r:r+n], dst[r:r+n]
		var sum float64
		for _, v := range row {
			sum += float64(v * v)
		}
		mean := float32(sum / float64(n))
		scale := 1 / float32(math.Sqrt(float64(mean+eps)))
		for i, v := range row {
			out[i] = (v * scale) * w[i]
		}
	}
}

func addBias(x, bias []float32) {
	n := len(bias)
	for r := 0; r+n <= len(x); r += n {
		row := x[r : r+n]
		for i := range row {
			row[i] += bias[i]
		}
	}
}

// addResidual adds a block's output y to the residual stream x, scaled
// first when the model has a residual multiplier (granite).
func (m *Model) addResidual(x, y []float32) {
	if s := m.cfg.ResidualScale; s != 0 {
		scaleInPlace(y[:len(x)], s)
	}
	addInPlace(x, y)
}

func scaleInPlace(x []float32, s float32) {
	for i := range x {
		x[i] *= s
	}
}

func addInPlace(x, y []float32) {
	y = y[:len(x)]
	for i := range x {
		x[i] += y[i]
	}
}

// ropeTable fills the cos/sin of each rotation pair for position pos as
// ggml's rope cache does: the angle stepped by repeated float32
// multiplication and glibc's sincosf, so angles match llama.cpp bit for bit.
func (m *Model) ropeTable(pos int32, cos, sin []float32) {
	if m.yarn != nil {
		m.yarn.table(pos, m.ropeScale, m.freqScale, cos, sin)
		return
	}
	theta := float32(pos)
	for i := range cos {
		t := theta
		if m.freqFactor != nil {
			t /= m.freqFactor[i]
		}
		t *= m.freqScale
		sin[i], cos[i] = sincosf(t)
		if m.ropeMscale != 0 {
			sin[i], cos[i] = sin[i]*m.ropeMscale, cos[i]*m.ropeMscale
		}
		theta *= m.ropeScale
	}
}

// ropeTableScaled is ropeTable for a plain RoPE of theta multiplier
// ropeScale and linear scale freqScale (local layers with their own base).
func ropeTableScaled(pos int32, ropeScale, freqScale float32, cos, sin []float32) {
	theta := float32(pos)
	for i := range cos {
		sin[i], cos[i] = sincosf(theta * freqScale)
		theta *= ropeScale
	}
}

// rope rotates every head of x (heads of HeadDim values) in place with the
// fused multiply-adds GCC emitted for ggml's rotate_pairs:
// x0' = fma(x0, cos, -(x1*sin)) and x1' = fma(x0, sin, x1*cos). Only the
// first 2*len(cos) dimensions of a head rotate (partial rotary: NEOX pairs
// (i, i+len(cos)), as ggml's n_dims); the rest pass through.
func (m *Model) rope(x, cos, sin []float32) {
	hd := m.cfg.HeadDim
	half := len(cos)
	for h := 0; h+hd <= len(x); h += hd {
		v := x[h : h+hd]
		if m.ropeNeox {
			for i := 0; i < half; i++ {
				x0, x1 := v[i], v[i+half]
				v[i] = fma32(x0, cos[i], -float32(x1*sin[i]))
				v[i+half] = fma32(x0, sin[i], float32(x1*cos[i]))
			}
		} else {
			for i := 0; i < half; i++ {
				x0, x1 := v[2*i], v[2*i+1]
				v[2*i] = fma32(x0, cos[i], -float32(x1*sin[i]))
				v[2*i+1] = fma32(x0, sin[i], float32(x1*cos[i]))
			}
		}
	}
}

// interleaveHeads reorders every head of x from rotate-half order
// (x[i], x[i+d/2]) into adjacent pairs (x[2i], x[2i+1]): the layout
// llama.cpp's GGUF conversion gives llama q/k weights. tmp holds hd values.
func interleaveHeads(x []float32, hd int, tmp []float32) {
	half := hd / 2
	tmp = tmp[:hd]
	for h := 0; h+hd <= len(x); h += hd {
		v := x[h : h+hd]
		copy(tmp, v)
		for i := 0; i < half; i++ {
			v[2*i], v[2*i+1] = tmp[i], tmp[i+half]
		}
	}
}

func (m *Model) tr(name string, layer int, data []float32) {
	if m.trace != nil {
		m.trace(name, layer, data)
	}
}
