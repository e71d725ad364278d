package model

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/lightllm-go/lightllm/pkg/gguf"
	"github.com/lightllm-go/lightllm/pkg/safetensors"
	"github.com/lightllm-go/lightllm/pkg/tensor"
)

// gpt-oss (openai/gpt-oss-20b, -120b: GptOssForCausalLM, config.json
// model_type gpt_oss; GGUF arch gpt-oss, llama.cpp's LLM_ARCH_OPENAI_MOE),
// as llama.cpp's openai-moe graph computes it:
//
//   - attention with q/k/v and output biases, NEOX RoPE (YaRN on every
//     layer, local ones included: rope.freq_base_swa defaults to the
//     global base), logits scaled by 1/sqrt(head_dim), and a learned sink
//     logit per query head (attn_sinks) in every softmax;
//   - sliding-window layers alternating, layer il local iff il % 2 == 0
//     (GGUF gpt-oss.attention.sliding_window_pattern otherwise; window
//     gpt-oss.attention.sliding_window, which llama.cpp requires);
//   - the FFN input norm is named post_attention_norm in GGUF
//     (post_attention_layernorm in HF);
//   - a mixture of experts with biases everywhere: router logits plus
//     bias, the top ExpertsUsed by raw logit, weighted by the softmax of
//     those logits alone (LLAMA_EXPERT_GATING_FUNC_TYPE_SOFTMAX_WEIGHT, no
//     renormalisation), each expert's gate and up products plus their
//     biases, ggml_swiglu_oai (alpha 1.702, limit 7, fixed in llama.cpp:
//     config.json swiglu_limit other than 7 is refused), the down product
//     plus its bias;
//   - the whole last layer runs on every token of a batch, the output rows
//     picked after it (family.lateRows).
//
// config.json's experts are transformers' fused tensors
// (mlp.experts.gate_up_proj [experts x hidden x 2*ffn], gate and up
// interleaved by column; down_proj [experts x ffn x hidden]), split and
// transposed at load as llama.cpp's converter does, or the released
// checkpoints' MXFP4 experts (quantization_config mxfp4:
// gate_up_proj_blocks [experts x 2*ffn x hidden/32 x 16] and _scales,
// gate and up the even and odd rows; down_proj_blocks/_scales), whose
// blocks become ggml's MXFP4 blocks as the converter repacks them.
func init() {
	register(&family{name: "gpt-oss", hfType: "gpt_oss", hfClass: "GptOssForCausalLM", ropeNeox: true, qkvBias: true, moe: true,
		expertBias: true, outBias: true, sinks: true, ffnNorm: "post_attention_norm", lateRows: true,
		hfTensors: map[string]string{"post_attention_norm": "post_attention_layernorm", "ffn_gate_inp": "mlp.router"},
		hfGet:     gptossHFGet, genHFTensors: gptossGenHFTensors,
		fromHF: gptossHF, fromGGUF: gptossGGUF, genGGUF: gptossGenGGUF, genHF: gptossGenHF,
		chatTemplate: gptossChatTemplate})
}

// gptossChatTemplate is gpt-oss's chat template (harmony), as llama.cpp
// ships it (models/templates/openai-gpt-oss-120b.jinja).
//
//go:embed family_gptoss.jinja
var gptossChatTemplate string

// gptossWindow is gen-model's sliding window when none is given (gpt-oss's).
const gptossWindow = 128

// gptossBlock sets what both forms share.
func gptossBlock(c *Config) {
	c.Act, c.ExpertsSoftmaxTopK, c.ExpertsNorm = "swiglu_oai", true, false
}

func gptossGGUF(f *gguf.File, c *Config) error {
	if c.Experts <= 0 || c.ExpertsUsed <= 0 {
		return fmt.Errorf("gpt-oss: expert_count %d / expert_used_count %d must be positive", c.Experts, c.ExpertsUsed)
	}
	v, ok := f.Uint("gpt-oss.expert_feed_forward_length")
	if !ok || v == 0 {
		return fmt.Errorf("gpt-oss: gpt-oss.expert_feed_forward_length is missing (llama.cpp requires it)")
	}
	c.FFN = int(v)
	w, ok := f.Uint("gpt-oss.attention.sliding_window")
	if !ok || w == 0 {
		return fmt.Errorf("gpt-oss: gpt-oss.attention.sliding_window is missing or 0 (llama.cpp requires it)")
	}
	c.Window = int(w)
	if b, ok := f.Float("gpt-oss.rope.freq_base_swa"); ok && b != c.RopeTheta {
		// The local layers' RoPE tables have no YaRN of their own.
		return fmt.Errorf("gpt-oss: rope.freq_base_swa %v differing from rope.freq_base %v is not supported", b, c.RopeTheta)
	}
	gptossBlock(c)
	return ggufSWAPattern(f, "gpt-oss.attention.sliding_window_pattern", 2, c)
}

func gptossHF(raw []byte, c *Config) error {
	var hc struct {
		Experts         int      `json:"num_local_experts"`
		ExpertsUsed     int      `json:"num_experts_per_tok"`
		ExpertsPerToken int      `json:"experts_per_token"`
		Window          int      `json:"sliding_window"`
		LayerTypes      []string `json:"layer_types"`
		SwigluLimit     *float64 `json:"swiglu_limit"`
		Quant           *struct {
			Method string `json:"quant_method"`
		} `json:"quantization_config"`
	}
	if err := json.Unmarshal(raw, &hc); err != nil {
		return fmt.Errorf("config.json: %w", err)
	}
	if hc.ExpertsUsed == 0 {
		hc.ExpertsUsed = hc.ExpertsPerToken
	}
	switch {
	case hc.Experts <= 0 || hc.ExpertsUsed <= 0:
		return fmt.Errorf("gpt-oss: num_local_experts %d / num_experts_per_tok %d must be positive", hc.Experts, hc.ExpertsUsed)
	case hc.Window <= 0:
		return fmt.Errorf("gpt-oss: sliding_window %d must be positive (llama.cpp's converter requires it)", hc.Window)
	case hc.SwigluLimit != nil && *hc.SwigluLimit != 7:
		return fmt.Errorf("gpt-oss: swiglu_limit %v is not supported (llama.cpp fixes it at 7)", *hc.SwigluLimit)
	case hc.Quant != nil && hc.Quant.Method != "mxfp4":
		return fmt.Errorf("gpt-oss: quantization_config quant_method %q is not supported (mxfp4: the released checkpoints' *_blocks/_scales experts)", hc.Quant.Method)
	}
	c.Experts, c.ExpertsUsed, c.Window = hc.Experts, hc.ExpertsUsed, hc.Window
	c.LocalLayers, _ = swaPattern(c.Layers, 2)
	if len(hc.LayerTypes) > 0 {
		want := c.LocalLayers
		if err := gemmaLayerTypes(hc.LayerTypes, c); err != nil {
			return err
		}
		if !slices.Equal(c.LocalLayers, want) {
			// llama.cpp's converter writes no pattern: the GGUF file would
			// alternate whatever layer_types says.
			return fmt.Errorf("gpt-oss: layer_types %v are not the alternating sliding/full pattern llama.cpp uses", hc.LayerTypes)
		}
	}
	gptossBlock(c)
	return nil
}

func gptossGenGGUF(w *gguf.Writer, o *GenOptions) {
	w.Set("gpt-oss.expert_feed_forward_length", uint32(o.FFN))
	window, pat := gptossGen(o)
	w.Set("gpt-oss.attention.sliding_window", uint32(window))
	if pat != 2 {
		w.Set("gpt-oss.attention.sliding_window_pattern", uint32(pat))
	}
}

// gptossGen is gen-model's sliding window and pattern (gpt-oss's unless
// given).
func gptossGen(o *GenOptions) (window, pattern int) {
	window, pattern = o.SlidingWindow, o.SWAPattern
	if window == 0 {
		window = gptossWindow
	}
	if pattern == 0 {
		pattern = 2
	}
	return window, pattern
}

func gptossGenHF(cfg map[string]any, o *GenOptions) {
	window, pat := gptossGen(o)
	cfg["num_local_experts"], cfg["num_experts_per_tok"], cfg["experts_per_token"] = o.Experts, o.ExpertsUsed, o.ExpertsUsed
	cfg["sliding_window"], cfg["swiglu_limit"] = window, 7.0
	lt, _ := swaPattern(o.Layers, pat)
	types := make([]string, o.Layers)
	for i, local := range lt {
		types[i] = map[bool]string{true: "sliding_attention", false: "full_attention"}[local]
	}
	cfg["layer_types"] = types
	if mix, ok := ggmlMixes[o.DType]; ok && mix.pick != nil && mix.pick("ffn_gate_exps", 0, o.Layers, 1) == tensor.MXFP4 {
		cfg["quantization_config"] = map[string]any{"quant_method": "mxfp4",
			"modules_to_not_convert": []string{"model.layers.*.self_attn", "model.layers.*.mlp.router", "model.embed_tokens", "lm_head"}}
	}
	if o.YarnFactor > 0 {
		cfg["rope_scaling"] = map[string]any{"rope_type": "yarn", "factor": o.YarnFactor, "beta_fast": 32.0, "beta_slow": 1.0,
			"original_max_position_embeddings": o.YarnOrigCtx, "truncate": false}
		cfg["initial_context_length"] = o.YarnOrigCtx
	}
}

// gptossHFGet reads the GGUF-named tensors whose Hugging Face form is
// transformers' fused layout: the sinks (self_attn.sinks, no .weight), and
// every expert's gate, up and down matrices and biases, cut from
// mlp.experts.gate_up_proj[_bias] (gate the even columns, up the odd ones)
// and down_proj[_bias], the matrices transposed into GGUF's [out x in].
func gptossHFGet(s hfSource, name string) (*rawTensor, bool, error) {
	var layer int
	var part string
	if _, err := fmt.Sscanf(name, "blk.%d.%s", &layer, &part); err != nil {
		return nil, false, nil
	}
	p := fmt.Sprintf("model.layers.%d.", layer)
	if part == "attn_sinks.weight" {
		t, err := s.raw(p + "self_attn.sinks")
		return t, true, err
	}
	kind, rest, ok := strings.Cut(part, ".")
	if !ok || (kind != "ffn_gate_exps" && kind != "ffn_up_exps" && kind != "ffn_down_exps") {
		return nil, false, nil
	}
	src := p + "mlp.experts.gate_up_proj"
	if kind == "ffn_down_exps" {
		src = p + "mlp.experts.down_proj"
	}
	if rest == "bias" {
		src += "_bias"
	}
	t, err := s.raw(src)
	if err != nil {
		return nil, true, err
	}
	if t == nil && rest != "bias" {
		return gptossMXFP4Expert(s, src, kind, rest)
	}
	if t == nil {
		return nil, true, nil
	}
	es, _ := t.typ.RowBytes(1) // bytes per value
	if t.typ.Quantized() || es <= 0 {
		return nil, true, fmt.Errorf("%s: tensor %q has type %s (want f32, f16 or bf16)", s.dir, src, t.typ)
	}
	par := 0 // the column of a gate_up pair
	if kind == "ffn_up_exps" {
		par = 1
	}
	if rest == "bias" {
		if kind == "ffn_down_exps" {
			return t, true, nil // [experts x hidden] as GGUF stores it
		}
		// [experts x 2F] -> [experts x F], one parity of the columns.
		if len(t.shape) != 2 || t.shape[1]%2 != 0 {
			return nil, true, fmt.Errorf("%s: tensor %q has shape %v, want [experts 2*ffn]", s.dir, src, t.shape)
		}
		E, F := t.shape[0], t.shape[1]/2
		out := make([]byte, E*F*es)
		for i := 0; i < E*F; i++ {
			copy(out[i*es:(i+1)*es], t.data[(2*i+par)*es:])
		}
		return &rawTensor{name: src, typ: t.typ, shape: []int{E, F}, data: out}, true, nil
	}
	var e int
	if _, err := fmt.Sscanf(rest, "%d.weight", &e); err != nil {
		return nil, false, nil
	}
	if len(t.shape) != 3 || e < 0 || e >= t.shape[0] || (kind != "ffn_down_exps" && t.shape[2]%2 != 0) {
		return nil, true, fmt.Errorf("%s: tensor %q has shape %v (expert %d)", s.dir, src, t.shape, e)
	}
	in, outer := t.shape[1], t.shape[2] // transformers: [experts x in x out]
	step, rows := 1, outer
	if kind != "ffn_down_exps" {
		step, rows = 2, outer/2
	}
	// out[r][c] = src[e][c][step*r + par]
	base := e * in * outer
	out := make([]byte, rows*in*es)
	for r := 0; r < rows; r++ {
		for c := 0; c < in; c++ {
			copy(out[(r*in+c)*es:(r*in+c+1)*es], t.data[(base+c*outer+step*r+par)*es:])
		}
	}
	return &rawTensor{name: src, typ: t.typ, shape: []int{rows, in}, data: out}, true, nil
}

// gptossGenHFTensors writes gen-model's experts and sinks in
// transformers' layout (gptossHFGet reads them back) and leaves the other
// tensors to GenerateHF.
func gptossGenHFTensors(o *GenOptions, ts []genTensor, dt tensor.DType) ([]hfTensor, []genTensor) {
	byName := map[string]*genTensor{}
	var rest []genTensor
	for i := range ts {
		t := &ts[i]
		var layer int
		var part string
		if _, err := fmt.Sscanf(t.name, "blk.%d.%s", &layer, &part); err == nil &&
			(strings.Contains(part, "_exps.") || part == "attn_sinks.weight") {
			byName[t.name] = t
			continue
		}
		rest = append(rest, *t)
	}
	// rowsOf returns rows [r0, r0+n) of t, as the GGUF form stores them.
	rowsOf := func(t *genTensor, r0, n int) []float32 {
		out := make([]float32, n*t.cols)
		for r := 0; r < n; r++ {
			o.values(t, r0+r, out[r*t.cols:(r+1)*t.cols], o.typeOf(t, dt))
		}
		return out
	}
	H, F, E := o.Hidden, o.FFN, o.Experts
	var custom []hfTensor
	for il := 0; il < o.Layers; il++ {
		p, hp := fmt.Sprintf("blk.%d.", il), fmt.Sprintf("model.layers.%d.", il)
		gate, up, down := byName[p+"ffn_gate_exps.weight"], byName[p+"ffn_up_exps.weight"], byName[p+"ffn_down_exps.weight"]
		gb, ub, db := byName[p+"ffn_gate_exps.bias"], byName[p+"ffn_up_exps.bias"], byName[p+"ffn_down_exps.bias"]
		sinks := byName[p+"attn_sinks.weight"]
		custom = append(custom,
			hfTensor{name: hp + "self_attn.sinks", shape: []int64{int64(o.Heads)}, values: func() []float32 { return rowsOf(sinks, 0, 1) }},
			hfTensor{name: hp + "mlp.experts.gate_up_proj_bias", shape: []int64{int64(E), int64(2 * F)}, values: func() []float32 {
				g, u := rowsOf(gb, 0, E), rowsOf(ub, 0, E) // [E x F]
				out := make([]float32, E*2*F)
				for i := range g {
					out[2*i], out[2*i+1] = g[i], u[i]
				}
				return out
			}},
			hfTensor{name: hp + "mlp.experts.down_proj_bias", shape: []int64{int64(E), int64(H)}, values: func() []float32 { return rowsOf(db, 0, E) }})
		if o.typeOf(gate, dt) == tensor.MXFP4 {
			// The released checkpoints' layout: [experts x out x blocks x 16].
			custom = append(custom, gptossMXFP4HF(o, hp+"mlp.experts.gate_up_proj", rowsOf, []*genTensor{gate, up}, F, H)...)
			custom = append(custom, gptossMXFP4HF(o, hp+"mlp.experts.down_proj", rowsOf, []*genTensor{down}, H, F)...)
			continue
		}
		custom = append(custom,
			hfTensor{name: hp + "mlp.experts.gate_up_proj", shape: []int64{int64(E), int64(H), int64(2 * F)}, values: func() []float32 {
				out := make([]float32, E*H*2*F)
				for e := 0; e < E; e++ {
					g, u := rowsOf(gate, e*F, F), rowsOf(up, e*F, F) // [F x H]
					for f := 0; f < F; f++ {
						for h := 0; h < H; h++ {
							out[(e*H+h)*2*F+2*f] = g[f*H+h]
							out[(e*H+h)*2*F+2*f+1] = u[f*H+h]
						}
					}
				}
				return out
			}},
			hfTensor{name: hp + "mlp.experts.down_proj", shape: []int64{int64(E), int64(F), int64(H)}, values: func() []float32 {
				out := make([]float32, E*F*H)
				for e := 0; e < E; e++ {
					d := rowsOf(down, e*H, H) // [H x F]
					for h := 0; h < H; h++ {
						for f := 0; f < F; f++ {
							out[(e*F+f)*H+h] = d[h*F+f]
						}
					}
				}
				return out
			}})
	}
	return custom, rest
}

// gptossMXFP4HF writes the experts of parts (one: down; two: gate and up,
// interleaved by row) as MXFP4 _blocks and _scales tensors, rows of width
// cols, each part rows rows per expert.
func gptossMXFP4HF(o *GenOptions, name string, rowsOf func(*genTensor, int, int) []float32, parts []*genTensor, rows, cols int) []hfTensor {
	E, n, nb := o.Experts, len(parts), cols/32
	enc := func() ([]byte, []byte) {
		all := make([]byte, 0, E*n*rows*nb*17)
		for e := 0; e < E; e++ {
			vals := make([][]float32, n)
			for i, pt := range parts {
				vals[i] = rowsOf(pt, e*rows, rows)
			}
			for r := 0; r < rows; r++ {
				for i := range parts {
					b, err := tensor.Quantize(tensor.MXFP4, vals[i][r*cols:(r+1)*cols])
					if err != nil {
						panic(fmt.Sprintf("gen-model: %s: %v", name, err)) // row lengths were validated
					}
					all = append(all, b...)
				}
			}
		}
		return gptossMXFP4Blocks(all, E*n*rows, nb)
	}
	return []hfTensor{
		{name: name + "_blocks", shape: []int64{int64(E), int64(n * rows), int64(nb), 16}, dtype: safetensors.U8,
			raw: func() []byte { b, _ := enc(); return b }},
		{name: name + "_scales", shape: []int64{int64(E), int64(n * rows), int64(nb)}, dtype: safetensors.U8,
			raw: func() []byte { _, s := enc(); return s }},
	}
}

// gptossMXFP4Expert reads expert rest ("E.weight") of kind from the MXFP4
// form of src (src_blocks [experts x rows x blocks x 16] and src_scales
// [experts x rows x blocks], U8; rows are outputs, gate_up's interleaved),
// as ggml MXFP4 rows: per block the E8M0 scale, then 16 bytes whose byte j
// holds values j (low nibble) and j+16 (high) — the checkpoint's byte k
// holds values 2k and 2k+1 (llama.cpp's transform_nibble_layout).
func gptossMXFP4Expert(s hfSource, src, kind, rest string) (*rawTensor, bool, error) {
	var e int
	if _, err := fmt.Sscanf(rest, "%d.weight", &e); err != nil {
		return nil, false, nil
	}
	blocks, bshape, err := gptossU8(s, src+"_blocks")
	if err != nil || blocks == nil {
		return nil, true, err
	}
	scales, sshape, err := gptossU8(s, src+"_scales")
	if err != nil || scales == nil {
		return nil, true, err
	}
	if len(bshape) != 4 || bshape[3] != 16 || len(sshape) != 3 || sshape[0] != bshape[0] || sshape[1] != bshape[1] ||
		sshape[2] != bshape[2] || e < 0 || e >= bshape[0] || (kind != "ffn_down_exps" && bshape[1]%2 != 0) {
		return nil, true, fmt.Errorf("%s: tensors %s_blocks %v / _scales %v are not MXFP4 experts (expert %d)", s.dir, src, bshape, sshape, e)
	}
	outer, nb := bshape[1], bshape[2]
	step, par, rows := 1, 0, outer
	if kind != "ffn_down_exps" {
		step, rows = 2, outer/2
		if kind == "ffn_up_exps" {
			par = 1
		}
	}
	out := make([]byte, rows*nb*17)
	for r := 0; r < rows; r++ {
		sr := e*outer + step*r + par // the checkpoint's row
		for b := 0; b < nb; b++ {
			blk := out[(r*nb+b)*17:][:17]
			blk[0] = scales[sr*nb+b]
			hf := blocks[(sr*nb+b)*16:][:16]
			nib := func(i int) byte { return hf[i/2] >> (4 * (i % 2)) & 0xF }
			for j := 0; j < 16; j++ {
				blk[1+j] = nib(j) | nib(j+16)<<4
			}
		}
	}
	return &rawTensor{name: src + "_blocks", typ: tensor.MXFP4, shape: []int{rows, nb * 32}, data: out}, true, nil
}

// gptossU8 returns a U8 tensor's bytes and shape (nil if absent).
func gptossU8(s hfSource, name string) ([]byte, []int, error) {
	info, data, f, ok := s.set.Tensor(name)
	if !ok {
		return nil, nil, nil
	}
	if info.DType != safetensors.U8 {
		return nil, nil, fmt.Errorf("%s: tensor %q has dtype %s, want U8", f.Path, name, info.DType)
	}
	shape := make([]int, len(info.Shape))
	for i, d := range info.Shape {
		shape[i] = int(d)
	}
	return data, shape, nil
}

// gptossMXFP4Blocks is the inverse for gen-model: rows of ggml MXFP4
// blocks (17 bytes each, nb per row) as the checkpoint's blocks and scales.
func gptossMXFP4Blocks(enc []byte, rows, nb int) (blocks, scales []byte) {
	blocks, scales = make([]byte, rows*nb*16), make([]byte, rows*nb)
	for i := 0; i < rows*nb; i++ {
		blk := enc[i*17:][:17]
		scales[i] = blk[0]
		val := func(j int) byte { // ggml: value j < 16 low nibble of qs[j], j+16 its high one
			if j < 16 {
				return blk[1+j] & 0xF
			}
			return blk[1+j-16] >> 4
		}
		for k := 0; k < 16; k++ {
			blocks[i*16+k] = val(2*k) | val(2*k+1)<<4
		}
	}
	return blocks, scales
}
