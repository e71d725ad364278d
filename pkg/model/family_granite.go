package model

import (
	"encoding/json"
	"fmt"

	"github.com/lightllm-go/lightllm/pkg/gguf"
)

// Granite (IBM Granite 3.x dense): the llama block with four multipliers —
// token embeddings, each block's output before its residual add, the
// attention logits (in place of 1/sqrt(head_dim)) and the logits
// (divided). They are read as llama.cpp reads them: from GGUF
// granite.embedding_scale, granite.residual_scale, granite.attention.scale
// (all optional: absent means none, or 1/sqrt(head_dim) for the attention)
// and granite.logit_scale (required, as llama.cpp requires it); from
// config.json as llama.cpp's converter writes them: embedding_multiplier,
// residual_multiplier, attention_multiplier, logits_scaling, a missing one
// not written (so the attention falls back to 1/sqrt(head_dim); a missing
// logits_scaling, which llama.cpp could not load, is taken as 1 like
// transformers).
func init() {
	register(&family{name: "granite", hfClass: "GraniteForCausalLM", fromHF: graniteHF, fromGGUF: graniteGGUF,
		genGGUF: graniteGenGGUF, genHF: graniteGenHF, chatTemplate: graniteChatTemplate})
}

// graniteChatTemplate is the chat template of ibm-granite/granite-3.0-*-instruct
// (its tokenizer_config.json): roles between <|start_of_role|> and
// <|end_of_role|>, each turn closed by <|end_of_text|>.
const graniteChatTemplate = `{%- if tools %}
    {{- '<|start_of_role|>available_tools<|end_of_role|>
' }}
    {%- for tool in tools %}
    {{- tool | tojson(indent=4) }}
    {%- if not loop.last %}
        {{- '

' }}
    {%- endif %}
    {%- endfor %}
    {{- '<|end_of_text|>
' }}
{%- endif %}
{%- for message in messages %}
    {%- if message['role'] == 'system' %}
    {{- '<|start_of_role|>system<|end_of_role|>' + message['content'] + '<|end_of_text|>
' }}
    {%- elif message['role'] == 'user' %}
    {{- '<|start_of_role|>user<|end_of_role|>' + message['content'] + '<|end_of_text|>
' }}
    {%- elif message['role'] == 'assistant' %}
    {{- '<|start_of_role|>assistant<|end_of_role|>'  + message['content'] + '<|end_of_text|>
' }}
    {%- elif message['role'] == 'assistant_tool_call' %}
    {{- '<|start_of_role|>assistant<|end_of_role|><|tool_call|>' + message['content'] + '<|end_of_text|>
' }}
    {%- elif message['role'] == 'tool_response' %}
    {{- '<|start_of_role|>tool_response<|end_of_role|>' + message['content'] + '<|end_of_text|>
' }}
    {%- endif %}
    {%- if loop.last and add_generation_prompt %}
    {{- '<|start_of_role|>assistant<|end_of_role|>' }}
    {%- endif %}
{%- endfor %}`

func graniteHF(raw []byte, c *Config) error {
	var hc struct {
		Embedding *float64 `json:"embedding_multiplier"`
		Residual  *float64 `json:"residual_multiplier"`
		Attention *float64 `json:"attention_multiplier"`
		Logits    *float64 `json:"logits_scaling"`
		MLPBias   bool     `json:"mlp_bias"`
	}
	if err := json.Unmarshal(raw, &hc); err != nil {
		return fmt.Errorf("config.json: %w", err)
	}
	if hc.MLPBias {
		return fmt.Errorf("granite with mlp_bias is not supported")
	}
	for _, f := range []struct {
		dst *float32
		v   *float64
	}{{&c.EmbedScale, hc.Embedding}, {&c.ResidualScale, hc.Residual}, {&c.AttnScale, hc.Attention}, {&c.LogitScale, hc.Logits}} {
		if f.v != nil {
			*f.dst = float32(*f.v)
		}
	}
	if c.LogitScale == 0 {
		c.LogitScale = 1
	}
	return nil
}

func graniteGGUF(f *gguf.File, c *Config) error {
	get := func(key string) float32 {
		v, _ := f.Float("granite." + key)
		return float32(v)
	}
	c.EmbedScale, c.ResidualScale, c.AttnScale = get("embedding_scale"), get("residual_scale"), get("attention.scale")
	if c.LogitScale = get("logit_scale"); c.LogitScale == 0 {
		return fmt.Errorf("granite: missing granite.logit_scale")
	}
	return nil
}

// genScales are the multipliers gen-model writes: GenOptions' own, else
// Granite 3.0's (ibm-granite/granite-3.0-2b-instruct).
func genScales(o *GenOptions) [4]float64 {
	s := [4]float64{12, 0.22, 0.015625, 8}
	for i, v := range []float64{o.EmbedScale, o.ResidualScale, o.AttnScale, o.LogitScale} {
		if v != 0 {
			s[i] = v
		}
	}
	return s
}

func graniteGenGGUF(w *gguf.Writer, o *GenOptions) {
	s := genScales(o)
	w.Set("granite.embedding_scale", float32(s[0]))
	w.Set("granite.residual_scale", float32(s[1]))
	w.Set("granite.attention.scale", float32(s[2]))
	w.Set("granite.logit_scale", float32(s[3]))
}

func graniteGenHF(cfg map[string]any, o *GenOptions) {
	s := genScales(o)
	cfg["embedding_multiplier"], cfg["residual_multiplier"], cfg["attention_multiplier"], cfg["logits_scaling"] = s[0], s[1], s[2], s[3]
	cfg["mlp_bias"] = false
}
