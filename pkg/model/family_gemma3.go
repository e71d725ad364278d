package model

import (
	"encoding/json"
	"fmt"
	"math"

	"github.com/lightllm-go/lightllm/pkg/gguf"
)

// Gemma 3 (google/gemma-3-*: Gemma3ForCausalLM, config.json model_type
// gemma3_text; GGUF arch gemma3), as llama.cpp's gemma3 graph computes it:
// token embeddings times sqrtf(hidden); RMSNorm with (1 + w), which GGUF
// files store as w + 1 (the converter adds it; the HF loader does the same,
// rounding as it does); per-head q/k RMSNorm, NEOX RoPE, then q times
// 1/sqrtf(head_dim) (1/sqrtf(hidden/heads) for the 62-layer 27B, as
// llama.cpp decides it; config.json's query_pre_attn_scalar gives it for
// the HF form) with attention logits unscaled; RMSNorms of the attention
// and FFN outputs before each residual add; GeGLU with ggml's f16 GELU
// table. Sliding-window layers (five local to one global: layer il is
// local iff il % pattern < pattern-1, pattern 6 unless GGUF
// gemma3.attention.sliding_window_pattern or config.json
// sliding_window_pattern / layer_types say otherwise) see the last
// `sliding_window` positions and rotate with their own base
// (rope.freq_base_swa / rope_local_base_freq, default 10000) unscaled;
// global layers use rope.freq_base and the linear rope scaling. A GGUF
// without attention.sliding_window has no local layers (llama.cpp's
// LLAMA_SWA_TYPE_NONE). Final-logit soft-capping (null in every Gemma 3
// release) is refused by name.
func init() {
	register(&family{name: "gemma3", hfType: "gemma3_text", hfClass: "Gemma3ForCausalLM", hiddenAct: "gelu_pytorch_tanh",
		ropeNeox: true, qkNorm: true, normShift: true, postNorms: true,
		hfTensors: map[string]string{"ffn_norm": "pre_feedforward_layernorm", "post_attention_norm": "post_attention_layernorm",
			"post_ffw_norm": "post_feedforward_layernorm"},
		fromHF: gemma3HF, fromGGUF: gemma3GGUF, genGGUF: gemma3GenGGUF, genHF: gemma3GenHF, chatTemplate: gemma3ChatTemplate})
}

// gemmaBlock sets what every Gemma shares: the embedding scale (ggml_scale
// by sqrtf(n_embd)), GeGLU, and q scaled by qpas^-1/2 before attention.
func gemmaBlock(c *Config, qpas int) {
	c.EmbedScale = float32(math.Sqrt(float64(float32(c.Hidden))))
	c.Act = "gelu_tanh"
	c.QScale = 1 / float32(math.Sqrt(float64(float32(qpas))))
}

// swaPattern marks layer il local iff il % n < n-1 (llama.cpp's
// set_swa_pattern; n 1: every layer global). llama.cpp takes n 0 for
// every layer local, which no Gemma uses, so it is refused.
func swaPattern(layers, n int) ([]bool, error) {
	if n <= 0 {
		return nil, fmt.Errorf("sliding window pattern %d must be positive", n)
	}
	out := make([]bool, layers)
	for il := range out {
		out[il] = il%n < n-1
	}
	return out, nil
}

func gemma3HF(raw []byte, c *Config) error {
	var hc struct {
		Act        string          `json:"hidden_activation"`
		QPAS       *float64        `json:"query_pre_attn_scalar"`
		Window     int             `json:"sliding_window"`
		Pattern    *int            `json:"sliding_window_pattern"`
		LayerTypes []string        `json:"layer_types"`
		LocalBase  *float64        `json:"rope_local_base_freq"`
		FinalCap   *float64        `json:"final_logit_softcapping"`
		AttnCap    *float64        `json:"attn_logit_softcapping"`
		RopeParams json.RawMessage `json:"rope_parameters"`
	}
	if err := json.Unmarshal(raw, &hc); err != nil {
		return fmt.Errorf("config.json: %w", err)
	}
	if hc.Act != "" && hc.Act != "gelu_pytorch_tanh" {
		return fmt.Errorf("gemma3: hidden_activation %q is not supported (gelu_pytorch_tanh only)", hc.Act)
	}
	switch {
	case hc.FinalCap != nil && *hc.FinalCap != 0:
		return fmt.Errorf("gemma3: final_logit_softcapping is not supported")
	case hc.AttnCap != nil && *hc.AttnCap != 0:
		return fmt.Errorf("gemma3: attn_logit_softcapping is not supported (llama.cpp's converter refuses it too)")
	}
	qpas := c.HeadDim
	if hc.QPAS != nil {
		qpas = int(*hc.QPAS)
		if float64(qpas) != *hc.QPAS || qpas <= 0 {
			return fmt.Errorf("gemma3: query_pre_attn_scalar %v is not a positive integer", *hc.QPAS)
		}
	}
	gemmaBlock(c, qpas)
	c.RopeThetaLocal, c.LocalRopeUnscaled = 10000, true
	if hc.LocalBase != nil {
		c.RopeThetaLocal = *hc.LocalBase
	}
	if len(hc.RopeParams) > 0 && string(hc.RopeParams) != "null" {
		if err := gemma3RopeParams(hc.RopeParams, c); err != nil {
			return err
		}
	}
	if hc.Window <= 0 {
		return nil
	}
	c.Window = hc.Window
	if len(hc.LayerTypes) > 0 {
		return gemmaLayerTypes(hc.LayerTypes, c)
	}
	n := 6
	if hc.Pattern != nil {
		n = *hc.Pattern
	}
	var err error
	if c.LocalLayers, err = swaPattern(c.Layers, n); err != nil {
		return fmt.Errorf("gemma3: %w", err)
	}
	return nil
}

// gemmaLayerTypes reads transformers' layer_types (one per layer).
func gemmaLayerTypes(types []string, c *Config) error {
	if len(types) != c.Layers {
		return fmt.Errorf("%s: %d layer_types for %d layers", c.Arch, len(types), c.Layers)
	}
	c.LocalLayers = make([]bool, c.Layers)
	for i, t := range types {
		switch t {
		case "sliding_attention":
			c.LocalLayers[i] = true
		case "full_attention":
		default:
			return fmt.Errorf("%s: layer type %q is not supported", c.Arch, t)
		}
	}
	return nil
}

// gemma3RopeParams reads transformers' newer rope_parameters: per layer
// kind a rope_theta and rope_type (linear scaling on the global layers;
// llama.cpp scales no local layer).
func gemma3RopeParams(raw json.RawMessage, c *Config) error {
	type params struct {
		Theta  *float64 `json:"rope_theta"`
		Type   string   `json:"rope_type"`
		Factor float64  `json:"factor"`
	}
	var rp struct {
		Full    *params `json:"full_attention"`
		Sliding *params `json:"sliding_attention"`
	}
	if err := json.Unmarshal(raw, &rp); err != nil {
		return fmt.Errorf("gemma3: rope_parameters: %w", err)
	}
	if p := rp.Full; p != nil {
		if p.Theta != nil {
			c.RopeTheta = *p.Theta
		}
		switch p.Type {
		case "", "default":
			c.RopeScaling = nil
		case "linear":
			if p.Factor <= 0 {
				return fmt.Errorf("gemma3: rope_parameters linear factor %v", p.Factor)
			}
			c.RopeScaling = &RopeScaling{Type: "linear", Factor: p.Factor}
		default:
			return fmt.Errorf("gemma3: rope_parameters full_attention rope_type %q is not supported (linear)", p.Type)
		}
	}
	if p := rp.Sliding; p != nil {
		if p.Type != "" && p.Type != "default" {
			return fmt.Errorf("gemma3: rope_parameters sliding_attention rope_type %q is not supported (llama.cpp does not scale local layers)", p.Type)
		}
		if p.Theta != nil {
			c.RopeThetaLocal = *p.Theta
		}
	}
	return nil
}

func gemma3GGUF(f *gguf.File, c *Config) error {
	if v, ok := f.Float("gemma3.final_logit_softcapping"); ok && v != 0 {
		return fmt.Errorf("gemma3: final_logit_softcapping %v is not supported", v)
	}
	// llama.cpp's f_attention_scale: by head size, except the 27B.
	qpas := c.HeadDim
	if c.Layers == 62 {
		qpas = c.Hidden / c.Heads
	}
	gemmaBlock(c, qpas)
	w, ok := f.Uint("gemma3.attention.sliding_window")
	if !ok || w == 0 {
		return nil
	}
	c.Window = int(w)
	c.RopeThetaLocal, c.LocalRopeUnscaled = 10000, true
	if v, ok := f.Float("gemma3.rope.freq_base_swa"); ok {
		c.RopeThetaLocal = v
	}
	return ggufSWAPattern(f, "gemma3.attention.sliding_window_pattern", 6, c)
}

// ggufSWAPattern reads the local layers from a period (uint) or a
// per-layer bool array, def when the key is absent.
func ggufSWAPattern(f *gguf.File, key string, def int, c *Config) error {
	n := def
	if v, present := f.Value(key); present {
		if u, ok := f.Uint(key); ok {
			n = int(u)
		} else if bs, ok := v.([]bool); ok && len(bs) == c.Layers {
			c.LocalLayers = bs
			return nil
		} else {
			return fmt.Errorf("%s: %T is neither a period nor one bool per layer", key, v)
		}
	}
	var err error
	if c.LocalLayers, err = swaPattern(c.Layers, n); err != nil {
		return fmt.Errorf("%s: %w", key, err)
	}
	return nil
}

// gemmaGen is gen-model's sliding-window setup: GenOptions' own or Gemma
// 3's (pattern 6, local base 10000).
func gemmaGen(o *GenOptions, pattern int) (window, pat int, localBase float64) {
	window, pat, localBase = o.SlidingWindow, o.SWAPattern, o.RopeThetaLocal
	if pat == 0 {
		pat = pattern
	}
	if localBase == 0 {
		localBase = 10000
	}
	return window, pat, localBase
}

func gemma3GenGGUF(w *gguf.Writer, o *GenOptions) {
	window, pat, local := gemmaGen(o, 6)
	if window > 0 {
		w.Set("gemma3.attention.sliding_window", uint32(window))
		w.Set("gemma3.rope.freq_base_swa", float32(local))
		if pat != 6 { // as llama.cpp's converter, which writes no pattern
			w.Set("gemma3.attention.sliding_window_pattern", uint32(pat))
		}
	}
	if o.RopeLinear > 0 {
		w.Set("gemma3.rope.scaling.type", "linear")
		w.Set("gemma3.rope.scaling.factor", float32(o.RopeLinear))
	}
}

func gemma3GenHF(cfg map[string]any, o *GenOptions) {
	window, pat, local := gemmaGen(o, 6)
	delete(cfg, "hidden_act")
	cfg["hidden_activation"] = "gelu_pytorch_tanh"
	cfg["query_pre_attn_scalar"] = o.HeadDim
	cfg["rope_local_base_freq"] = local
	cfg["final_logit_softcapping"], cfg["attn_logit_softcapping"] = nil, nil
	cfg["sliding_window"], cfg["sliding_window_pattern"] = window, pat
	if window > 0 {
		types := make([]string, o.Layers)
		lt, _ := swaPattern(o.Layers, pat)
		for i, local := range lt {
			types[i] = map[bool]string{true: "sliding_attention", false: "full_attention"}[local]
		}
		cfg["layer_types"] = types
	}
	if o.RopeLinear > 0 {
		cfg["rope_scaling"] = map[string]any{"rope_type": "linear", "factor": o.RopeLinear}
	}
}

// gemma3ChatTemplate is google/gemma-3-1b-it's chat template
// (tokenizer_config.json).
const gemma3ChatTemplate = "{{ bos_token }}\n{%- if messages[0]['role'] == 'system' -%}\n    {%- if messages[0]['content'] is string -%}\n        {%- set first_user_prefix = messages[0]['content'] + '\n\n' -%}\n    {%- else -%}\n        {%- set first_user_prefix = messages[0]['content'][0]['text'] + '\n\n' -%}\n    {%- endif -%}\n    {%- set loop_messages = messages[1:] -%}\n{%- else -%}\n    {%- set first_user_prefix = \"\" -%}\n    {%- set loop_messages = messages -%}\n{%- endif -%}\n{%- for message in loop_messages -%}\n    {%- if (message['role'] == 'user') != (loop.index0 % 2 == 0) -%}\n        {{ raise_exception(\"Conversation roles must alternate user/assistant/user/assistant/...\") }}\n    {%- endif -%}\n    {%- if (message['role'] == 'assistant') -%}\n        {%- set role = \"model\" -%}\n    {%- else -%}\n        {%- set role = message['role'] -%}\n    {%- endif -%}\n    {{ '<start_of_turn>' + role + '\n' + (first_user_prefix if loop.first else \"\") }}\n    {%- if message['content'] is string -%}\n        {{ message['content'] | trim }}\n    {%- elif message['content'] is iterable -%}\n        {%- for item in message['content'] -%}\n            {%- if item['type'] == 'image' -%}\n                {{ '<start_of_image>' }}\n            {%- elif item['type'] == 'text' -%}\n                {{ item['text'] | trim }}\n            {%- endif -%}\n        {%- endfor -%}\n    {%- else -%}\n        {{ raise_exception(\"Invalid content type\") }}\n    {%- endif -%}\n    {{ '<end_of_turn>\n' }}\n{%- endfor -%}\n{%- if add_generation_prompt -%}\n    {{'<start_of_turn>model\n'}}\n{%- endif -%}\n"
