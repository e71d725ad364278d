package model

import (
	"encoding/json"
	"fmt"
	"math"

	"github.com/lightllm-go/lightllm/pkg/gguf"
	"github.com/lightllm-go/lightllm/pkg/tensor"
)

// Phi-3 (microsoft/Phi-3-mini-4k-instruct and its kin): the llama block
// with q|k|v fused into one projection (attn_qkv / self_attn.qkv_proj) and
// gate|up into another (ffn_up / mlp.gate_up_proj, gate rows first), NEOX
// RoPE, and q multiplied by 1/sqrt(head_dim) before attention as llama.cpp
// does (kq scale 1). Like llama.cpp, the sliding_window of config.json
// and phi3.attention.sliding_window are ignored: every layer attends to the
// whole context (llama.cpp logs "Phi SWA is currently disabled"), so text
// past the window differs from transformers' but matches llama.cpp's.
// LongRoPE (Phi-3-*-128k, Phi-3.5): config.json rope_scaling longrope
// short_factor/long_factor with original_max_position_embeddings, or GGUF
// rope_factors_short/long tensors with phi3.rope.scaling.* — the short
// factors when the context the model runs at (LoadOptions.Context, as
// llama.cpp's n_ctx) is within the original context, else the long ones;
// cos/sin multiplied by the attention factor, which from config.json is
// computed as llama.cpp's converter computes it. Partial rotary
// embeddings (Phi-4-mini): partial_rotary_factor gives rope.dimension_count
// as the converter computes it; the first dimensions of each head rotate.
func init() {
	register(&family{name: "phi3", hfClass: "Phi3ForCausalLM", ropeNeox: true, fusedProj: true,
		hfTensors: map[string]string{"attn_qkv": "self_attn.qkv_proj", "ffn_up": "mlp.gate_up_proj"},
		fromHF:    phi3HF, fromGGUF: phi3GGUF, genGGUF: phi3GenGGUF, genHF: phi3GenHF, chatTemplate: phi3ChatTemplate})
}

// phi3QScale is llama.cpp's 1.0f/sqrtf(float(n_embd_head)).
func phi3QScale(c *Config) float32 { return 1 / float32(math.Sqrt(float64(float32(c.HeadDim)))) }

func phi3HF(raw []byte, c *Config) error {
	var hc struct {
		PartialRotary  *float64 `json:"partial_rotary_factor"`
		OriginalMaxPos int      `json:"original_max_position_embeddings"`
		RopeScaling    *struct {
			Short          []float32 `json:"short_factor"`
			Long           []float32 `json:"long_factor"`
			OriginalMaxPos int       `json:"original_max_position_embeddings"`
		} `json:"rope_scaling"`
	}
	if err := json.Unmarshal(raw, &hc); err != nil {
		return fmt.Errorf("config.json: %w", err)
	}
	if hc.PartialRotary != nil && c.Heads > 0 {
		// The converter's rope.dimension_count: int(pct * n_embd) // n_head.
		c.RopeDim = int(*hc.PartialRotary*float64(c.Hidden)) / c.Heads
	}
	c.QScale = phi3QScale(c)
	if rs := c.RopeScaling; rs != nil && rs.Type == "longrope" && hc.RopeScaling != nil {
		orig := hc.OriginalMaxPos
		if hc.RopeScaling.OriginalMaxPos > 0 {
			orig = hc.RopeScaling.OriginalMaxPos
		}
		if orig <= 0 {
			return fmt.Errorf("phi3: longrope without original_max_position_embeddings")
		}
		// The converter's attention factor, from the Python floats.
		attn, scale := 1.0, float64(c.MaxPos)/float64(orig)
		if scale > 1 {
			attn = math.Sqrt(1 + math.Log(scale)/math.Log(float64(orig)))
		}
		rs.ShortFactor, rs.LongFactor, rs.OriginalMaxPos, rs.AttnFactor = hc.RopeScaling.Short, hc.RopeScaling.Long, orig, float32(attn)
		return checkLongRoPE(rs, c.RopeDim)
	}
	return nil
}

func phi3GGUF(f *gguf.File, c *Config) error {
	c.QScale = phi3QScale(c)
	short, err := ggufF32Tensor(f, "rope_factors_short.weight")
	if err != nil || short == nil {
		return err
	}
	long, err := ggufF32Tensor(f, "rope_factors_long.weight")
	if err != nil {
		return err
	}
	rs := &RopeScaling{Type: "longrope", ShortFactor: short, LongFactor: long, OriginalMaxPos: c.MaxPos, AttnFactor: 1}
	if v, ok := f.Uint("phi3.rope.scaling.original_context_length"); ok {
		rs.OriginalMaxPos = int(v)
	}
	if v, ok := f.Float("phi3.rope.scaling.attn_factor"); ok {
		rs.AttnFactor = float32(v)
	}
	c.RopeScaling = rs
	return checkLongRoPE(rs, c.RopeDim)
}

func checkLongRoPE(rs *RopeScaling, ropeDim int) error {
	if len(rs.ShortFactor) != ropeDim/2 || len(rs.LongFactor) != ropeDim/2 {
		return fmt.Errorf("phi3: longrope has %d short and %d long factors, want %d each", len(rs.ShortFactor), len(rs.LongFactor), ropeDim/2)
	}
	for _, f := range append(append([]float32(nil), rs.ShortFactor...), rs.LongFactor...) {
		if !(f > 0) {
			return fmt.Errorf("phi3: longrope factor %v is not positive", f)
		}
	}
	return nil
}

// ggufF32Tensor reads a small f32 tensor from the metadata hook (nil when absent).
func ggufF32Tensor(f *gguf.File, name string) ([]float32, error) {
	ti, ok := f.Tensor(name)
	if !ok {
		return nil, nil
	}
	if ti.Type != gguf.F32 || len(ti.Shape) != 1 {
		return nil, fmt.Errorf("phi3: tensor %q is %s %v, want a 1-D f32 vector", name, ti.Type, ti.Shape)
	}
	out := make([]float32, ti.Shape[0])
	data := f.TensorData(ti)
	if len(data) != 4*len(out) {
		return nil, fmt.Errorf("phi3: tensor %q: %d bytes for %d values", name, len(data), len(out))
	}
	tensor.Dequantize(tensor.F32, data, out)
	return out, nil
}

// phi3GenGGUF names the file so that llama.cpp's vocabulary loader does not
// take it for a real Phi-3 (a name containing "phi3" makes it look for
// <|endoftext|>, which the generated vocabulary lacks).
func phi3GenGGUF(w *gguf.Writer, o *GenOptions) {
	w.Set("general.name", "lightllm-random-p3")
	if o.RopeOrigMaxPos <= 0 {
		return
	}
	short, long, attn := genLongRoPE(o)
	w.Set("phi3.rope.scaling.original_context_length", uint32(o.RopeOrigMaxPos))
	w.Set("phi3.rope.scaling.attn_factor", float32(attn))
	n := uint64(len(short))
	w.AddTensor("rope_factors_long.weight", gguf.F32, []uint64{n}, tensor.F32Bytes(long))
	w.AddTensor("rope_factors_short.weight", gguf.F32, []uint64{n}, tensor.F32Bytes(short))
}

func phi3GenHF(cfg map[string]any, o *GenOptions) {
	if o.RopeDim != o.HeadDim {
		cfg["partial_rotary_factor"] = float64(o.RopeDim) / float64(o.HeadDim)
	}
	if o.RopeOrigMaxPos <= 0 {
		return
	}
	short, long, _ := genLongRoPE(o)
	cfg["original_max_position_embeddings"] = o.RopeOrigMaxPos
	cfg["rope_scaling"] = map[string]any{"type": "longrope", "short_factor": short, "long_factor": long}
}

// genLongRoPE is gen-model's LongRoPE: short factors near 1, long ones
// growing to about 8 over the pairs (the shape of Phi-3-mini-128k's), and
// the converter's attention factor.
func genLongRoPE(o *GenOptions) (short, long []float32, attn float64) {
	n := o.RopeDim / 2
	short, long = make([]float32, n), make([]float32, n)
	for i := range short {
		f := float64(i) / float64(max(n-1, 1))
		short[i] = float32(1 + 0.05*f)
		long[i] = float32(1 + 7*f*f)
	}
	attn = 1
	if scale := float64(o.MaxPos) / float64(o.RopeOrigMaxPos); scale > 1 {
		attn = math.Sqrt(1 + math.Log(scale)/math.Log(float64(o.RopeOrigMaxPos)))
	}
	return short, long, attn
}

// phi3ChatTemplate is microsoft/Phi-3-mini-4k-instruct's chat template
// (tokenizer_config.json).
const phi3ChatTemplate = "{% for message in messages %}{% if message['role'] == 'system' %}{{'<|system|>\n' + message['content'] + '<|end|>\n'}}" +
	"{% elif message['role'] == 'user' %}{{'<|user|>\n' + message['content'] + '<|end|>\n'}}" +
	"{% elif message['role'] == 'assistant' %}{{'<|assistant|>\n' + message['content'] + '<|end|>\n'}}" +
	"{% endif %}{% endfor %}{% if add_generation_prompt %}{{ '<|assistant|>\n' }}{% else %}{{ eos_token }}{% endif %}"
