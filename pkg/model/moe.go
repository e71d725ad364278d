package model

import (
	"fmt"
	"math"

	"github.com/lightllm-go/lightllm/pkg/tensor"
)

// maxExperts is llama.cpp's LLAMA_MAX_EXPERTS.
const maxExperts = 1024

// expert is one expert FFN of a mixture-of-experts layer (SwiGLU).
type expert struct {
	gate, up, down *tensor.Matrix
	// Biases added after each product (family.expertBias; nil otherwise):
	// gate and up [FFN], down [Hidden].
	gateB, upB, downB []float32
}

// moeScratch holds the buffers of the expert FFNs (Model.moeFFN), grown
// with the rest of the scratch.
type moeScratch struct {
	logits []float32 // [nTok x Experts] router logits, then probabilities
	sel    []int32   // [nTok x ExpertsUsed] chosen experts, most probable first
	w      []float32 // [nTok x ExpertsUsed] their weights
	order  []int32   // (token, slot) pairs r*ExpertsUsed+k grouped by expert
	start  []int32   // [Experts+1] each expert's range in order
	x, y   []float32 // [nTok x Hidden] an expert's gathered inputs and outputs
	out    []float32 // [nTok x ExpertsUsed x Hidden] every chosen expert's output
	fill   []int32   // [Experts] counting-sort cursors
}

func (s *moeScratch) ensure(c *Config, nTok int) {
	E, K, H := c.Experts, c.ExpertsUsed, c.Hidden
	if len(s.sel) >= nTok*K {
		return
	}
	s.logits, s.sel, s.w = make([]float32, nTok*E), make([]int32, nTok*K), make([]float32, nTok*K)
	s.order, s.start, s.fill = make([]int32, nTok*K), make([]int32, E+1), make([]int32, E)
	s.x, s.y, s.out = make([]float32, nTok*H), make([]float32, nTok*H), make([]float32, nTok*K*H)
}

// loadExperts reads layer p's router and experts: from GGUF as ggml's
// 3-D tensors ffn_{gate,up,down}_exps ([experts x rows x cols], one
// matrix per expert cut from it), from Hugging Face as one tensor per
// expert. The router is f32 as llama.cpp's converter stores it
// (FFN_GATE_INP is always f32), so an f16/bf16 checkpoint's is widened.
func (m *Model) loadExperts(l *loader, ly *layer, p string) error {
	c := &m.cfg
	H, F, E := c.Hidden, c.FFN, c.Experts
	var err error
	if ly.gateInp, err = l.routerMatrix(p+"ffn_gate_inp.weight", E, H); err != nil {
		return err
	}
	ly.experts = make([]expert, E)
	parts := []struct {
		name       string
		rows, cols int
		dst        func(e *expert) **tensor.Matrix
	}{
		{"ffn_gate_exps", F, H, func(e *expert) **tensor.Matrix { return &e.gate }},
		{"ffn_up_exps", F, H, func(e *expert) **tensor.Matrix { return &e.up }},
		{"ffn_down_exps", H, F, func(e *expert) **tensor.Matrix { return &e.down }},
	}
	_, perExpert := l.src.(hfSource)
	for _, pt := range parts {
		if perExpert {
			for e := range ly.experts {
				if *pt.dst(&ly.experts[e]), err = l.matrix(fmt.Sprintf("%s%s.%d.weight", p, pt.name, e), pt.rows, pt.cols); err != nil {
					return err
				}
			}
			continue
		}
		dsts := make([]**tensor.Matrix, E)
		for e := range ly.experts {
			dsts[e] = pt.dst(&ly.experts[e])
		}
		if err := l.stackedMatrices(p+pt.name+".weight", pt.rows, pt.cols, dsts); err != nil {
			return err
		}
	}
	if !m.fam.expertBias {
		return nil
	}
	if ly.gateInpB, err = l.vector(p+"ffn_gate_inp.bias", E); err != nil {
		return err
	}
	biases := []struct {
		name string
		n    int
		dst  func(e *expert) *[]float32
	}{
		{"ffn_gate_exps", F, func(e *expert) *[]float32 { return &e.gateB }},
		{"ffn_up_exps", F, func(e *expert) *[]float32 { return &e.upB }},
		{"ffn_down_exps", H, func(e *expert) *[]float32 { return &e.downB }},
	}
	for _, b := range biases {
		v, err := l.stackedVectors(p+b.name+".bias", E, b.n)
		if err != nil {
			return err
		}
		for e := range ly.experts {
			*b.dst(&ly.experts[e]) = v[e*b.n : (e+1)*b.n : (e+1)*b.n]
		}
	}
	return nil
}

// stackedVectors loads a 2-D [n x cols] tensor of per-expert biases
// (ggml's {cols, n}) as float32, expert e's at [e*cols, (e+1)*cols).
func (l *loader) stackedVectors(name string, n, cols int) ([]float32, error) {
	t, err := l.need(name)
	if err != nil {
		return nil, err
	}
	if len(t.shape) != 2 || t.shape[0] != n || t.shape[1] != cols {
		return nil, fmt.Errorf("%s: tensor %q has shape %v, want [%d %d]", l.src.path(), t.name, t.shape, n, cols)
	}
	rb, err := t.typ.RowBytes(cols)
	if err != nil || rb*n != len(t.data) {
		return nil, fmt.Errorf("%s: tensor %q: %d bytes for %d x %d %s", l.src.path(), t.name, len(t.data), n, cols, t.typ)
	}
	out := make([]float32, n*cols)
	tensor.Dequantize(t.typ, t.data, out)
	l.tick(t)
	return out, nil
}

// routerMatrix loads a router weight as f32, widening f16/bf16 (exactly)
// as llama.cpp's converter does for Hugging Face checkpoints. A GGUF
// file's router is used in its own type, as llama.cpp would.
func (l *loader) routerMatrix(name string, rows, cols int) (*tensor.Matrix, error) {
	t, err := l.need(name)
	if err != nil {
		return nil, err
	}
	if _, hf := l.src.(hfSource); hf && t.typ != tensor.F32 {
		rb, err := t.typ.RowBytes(cols)
		if err != nil || len(t.shape) != 2 || t.shape[0] != rows || t.shape[1] != cols || len(t.data) != rows*rb {
			return nil, fmt.Errorf("%s: tensor %q has shape %v, want [%d %d]", l.src.path(), t.name, t.shape, rows, cols)
		}
		v := make([]float32, rows*cols)
		tensor.Dequantize(t.typ, t.data, v)
		enc, err := tensor.Quantize(tensor.F32, v)
		if err != nil {
			return nil, fmt.Errorf("%s: tensor %q: %w", l.src.path(), t.name, err)
		}
		t = &rawTensor{name: t.name, typ: tensor.F32, shape: t.shape, data: enc}
	}
	return l.asMatrix(t, rows, cols, true)
}

// stackedMatrices loads a 3-D [len(dst) x rows x cols] tensor as one
// matrix per leading index.
func (l *loader) stackedMatrices(name string, rows, cols int, dst []**tensor.Matrix) error {
	t, err := l.need(name)
	if err != nil {
		return err
	}
	n := len(dst)
	if len(t.shape) != 3 || t.shape[0] != n || t.shape[1] != rows || t.shape[2] != cols {
		return fmt.Errorf("%s: tensor %q has shape %v, want [%d %d %d]", l.src.path(), t.name, t.shape, n, rows, cols)
	}
	rb, err := t.typ.RowBytes(cols)
	if err != nil || rb*rows*n != len(t.data) {
		return fmt.Errorf("%s: tensor %q: %d bytes for %d x %d x %d %s", l.src.path(), t.name, len(t.data), n, rows, cols, t.typ)
	}
	l.splitting = true
	defer func() { l.splitting = false }()
	for i, d := range dst {
		sub := *t
		sub.shape = []int{rows, cols}
		sub.data = t.data[i*rows*rb : (i+1)*rows*rb]
		if *d, err = l.asMatrix(&sub, rows, cols, true); err != nil {
			return err
		}
	}
	l.splitting = false
	l.done.Tensors++
	return nil
}

// moeFFN computes the mixture-of-experts FFN of layer li of R rows xn into out
// ([R x Hidden]) as llama.cpp's build_moe_ffn does on the CPU:
//
//   - router logits: a dense product (modes: the batch's kernels);
//   - probabilities: ggml_soft_max (routerSoftmax);
//   - the ExpertsUsed most probable experts, most probable first
//     (ggml_argsort_top_k), weighted by their probabilities, divided by
//     their sum clamped to f16's smallest normal when ExpertsNorm;
//   - each chosen expert's SwiGLU FFN: ggml_mul_mat_id runs every row
//     through ggml_vec_dot whatever the batch, so the rows are grouped by
//     expert (each expert's weights are read once per step, and only the
//     chosen experts' weights are read) and multiplied with the
//     single-row kernels: a row's result does not depend on the rows that
//     share its expert;
//   - each output times its weight, then summed in slot order.
func (m *Model) moeFFN(li int, xn []float32, R int, modes rowModes, out []float32) error {
	ly := &m.layers[li]
	if err := m.routedExperts(ly, xn, R, modes, out); err != nil {
		return err
	}
	if ly.shexpGate == nil {
		return nil
	}
	// The shared expert (qwen2moe): a dense FFN with the batch's kernels,
	// times silu(g)/g — llama.cpp's sigmoid of the gate logit g — added
	// to the experts' sum.
	s := &m.s.moe
	H := m.cfg.Hidden
	g := s.logits[:R]
	if err := m.ctx.MatMulGGML(xn, R, modes, tensor.Out{W: ly.shexpGate, Y: g}); err != nil {
		return err
	}
	sh := s.x[:R*H]
	if err := m.denseFFN(li, xn, R, modes, sh); err != nil {
		return err
	}
	for r := 0; r < R; r++ {
		v := g[r]
		sg := v / (1 + tensor.Expf(-v)) / v
		o, y := out[r*H:(r+1)*H], sh[r*H:(r+1)*H]
		for i := range o {
			o[i] += float32(y[i] * sg)
		}
	}
	return nil
}

// routedExperts computes the routed experts' weighted sum (moeFFN).
func (m *Model) routedExperts(ly *layer, xn []float32, R int, modes rowModes, out []float32) error {
	c, s := &m.cfg, &m.s.moe
	E, K, H, F := c.Experts, c.ExpertsUsed, c.Hidden, c.FFN
	logits := s.logits[:R*E]
	if err := m.ctx.MatMulGGML(xn, R, modes, tensor.Out{W: ly.gateInp, Y: logits}); err != nil {
		return err
	}
	if ly.gateInpB != nil {
		addBias(logits, ly.gateInpB) // ggml_add
	}
	clear(s.start)
	for r := 0; r < R; r++ {
		p := logits[r*E : (r+1)*E]
		if !c.ExpertsSoftmaxTopK {
			routerSoftmax(p, m.lanes)
		}
		sel, w := s.sel[r*K:(r+1)*K], s.w[r*K:(r+1)*K]
		topK(sel, p)
		for k, e := range sel {
			w[k] = p[e]
			s.start[e+1]++
		}
		if c.ExpertsSoftmaxTopK {
			// ggml_soft_max over the chosen logits (a row of K).
			routerSoftmax(w, m.lanes)
		}
		if c.ExpertsNorm {
			var sum float64 // ggml_sum_rows: a double sum, rounded once
			for _, v := range w {
				sum += float64(v)
			}
			d := max(float32(sum), 6.103515625e-5)
			for k := range w {
				w[k] /= d
			}
		}
	}
	// Counting sort of the (row, slot) pairs by expert.
	for e := 0; e < E; e++ {
		s.start[e+1] += s.start[e]
	}
	fill := s.fill
	copy(fill, s.start[:E])
	for j, e := range s.sel[:R*K] {
		s.order[fill[e]] = int32(j)
		fill[e]++
	}
	for e := 0; e < E; e++ {
		js := s.order[s.start[e]:s.start[e+1]]
		n := len(js)
		if n == 0 {
			continue // never read: a decode step streams only the chosen experts
		}
		x := s.x[:n*H]
		for i, j := range js {
			r := int(j) / K
			copy(x[i*H:(i+1)*H], xn[r*H:(r+1)*H])
		}
		ex := &ly.experts[e]
		gate, up := m.s.gate[:n*F], m.s.up[:n*F]
		if err := m.ctx.MatMulGGML(x, n, nil, tensor.Out{W: ex.gate, Y: gate}, tensor.Out{W: ex.up, Y: up}); err != nil {
			return err
		}
		if ex.gateB != nil {
			addBias(gate, ex.gateB) // ggml_add_id
			addBias(up, ex.upB)
		}
		for i := 0; i < n; i++ {
			g := gate[i*F : (i+1)*F]
			if c.Act == "swiglu_oai" {
				swigluOAIRow(g, up[i*F:(i+1)*F])
			} else {
				siluRow(g, g, up[i*F:(i+1)*F], m.lanes)
			}
		}
		y := s.y[:n*H]
		if err := m.ctx.MatMulGGML(gate, n, nil, tensor.Out{W: ex.down, Y: y}); err != nil {
			return err
		}
		if ex.downB != nil {
			addBias(y, ex.downB)
		}
		for i, j := range js {
			copy(s.out[int(j)*H:(int(j)+1)*H], y[i*H:(i+1)*H])
		}
	}
	for r := 0; r < R; r++ {
		o := out[r*H : (r+1)*H]
		w := s.w[r*K : (r+1)*K]
		e0 := s.out[r*K*H : (r*K+1)*H]
		for i := range o {
			o[i] = e0[i] * w[0]
		}
		for k := 1; k < K; k++ {
			ek := s.out[(r*K+k)*H : (r*K+k+1)*H]
			for i := range o {
				// ggml_mul, then ggml_add: two roundings, never fused.
				o[i] += float32(ek[i] * w[k])
			}
		}
	}
	return nil
}

// routerSoftmax replaces p by its softmax as ggml_soft_max_f32 computes
// it (scale 1, no mask): exp(x - max) with ggml_v_expf over whole vectors
// of the build's width, each vector's sum reduced as _mm512_reduce_add_ps
// / the AVX2 shuffle reduction do and added in double, the C library's
// expf for the rest; then every value times the float32 of 1/sum.
func routerSoftmax(p []float32, lanes int) {
	mx := float32(math.Inf(-1))
	for _, v := range p {
		mx = max(mx, v)
	}
	var sum float64
	nv := len(p) / lanes * lanes
	for i := 0; i < nv; i += lanes {
		v := p[i : i+lanes]
		for j := range v {
			v[j] -= mx
		}
		tensor.VExpGGML(v, v)
		sum += float64(reduceLanes(v))
	}
	for i := nv; i < len(p); i++ {
		p[i] = tensor.Expf(p[i] - mx)
		sum += float64(p[i])
	}
	inv := float32(1 / sum)
	for i := range p {
		p[i] *= inv
	}
}

// reduceLanes sums one vector (8 or 16 lanes) in the tree order of the
// x86 reductions: halves added lane-wise down to one value.
func reduceLanes(v []float32) float32 {
	var t [16]float32
	n := copy(t[:], v)
	for n > 1 {
		n /= 2
		for i := 0; i < n; i++ {
			t[i] += t[i+n]
		}
	}
	return t[0]
}

// topK writes into sel the indexes of the len(sel) largest values of p,
// largest first (ggml_argsort_top_k: a descending sort; equal values,
// which llama.cpp's unstable std::sort may order either way, keep index
// order here), by insertion: no allocation in the forward pass.
func topK(sel []int32, p []float32) {
	n := 0
	for i, v := range p {
		if n == len(sel) && v <= p[sel[n-1]] {
			continue
		}
		j := min(n, len(sel)-1)
		for j > 0 && v > p[sel[j-1]] {
			sel[j] = sel[j-1]
			j--
		}
		sel[j] = int32(i)
		n = min(n+1, len(sel))
	}
}

// swigluOAIRow is ggml_swiglu_oai (gpt-oss's clamped SwiGLU, alpha 1.702,
// limit 7, as llama.cpp's LLM_FFN_SWIGLU_OAI_MOE fixes them) of a gate
// row g and an up row u into g, as ggml's CPU loop computes it per value:
// x = min(g, limit), y = clamp(u, -limit, limit),
// (x / (1 + expf(alpha * -x))) * (y + 1), each operation rounded to float32
// (no operation there can fuse) with glibc's expf.
func swigluOAIRow(g, u []float32) {
	const alpha, limit float32 = 1.702, 7
	u = u[:len(g)]
	for k, v := range g {
		x := min(v, limit)
		y := u[k]
		if y < -limit { // std::clamp(y, -limit, limit)
			y = -limit
		} else if limit < y {
			y = limit
		}
		glu := x / (1 + tensor.Expf(alpha*(-x)))
		g[k] = glu * (y + 1)
	}
}
