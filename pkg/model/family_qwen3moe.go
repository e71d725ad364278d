package model

import (
	"encoding/json"
	"fmt"

	"github.com/lightllm-go/lightllm/pkg/gguf"
)

// Qwen3-MoE (Qwen3-30B-A3B, Qwen3-235B-A22B): qwen3's attention (q/k
// RMSNorm, NEOX RoPE, no biases) and a mixture of experts in every layer,
// as llama.cpp's qwen3moe graph computes it: softmax router, top-k
// renormalised (llama.cpp always renormalises, so a config.json with
// norm_topk_prob false, which transformers would not renormalise, is
// refused), no shared expert. Config.FFN is the experts' width: GGUF
// qwen3moe.expert_feed_forward_length (else feed_forward_length /
// expert_used_count, llama.cpp's fallback), config.json
// moe_intermediate_size; the dense intermediate_size is unused, as every
// layer is sparse (decoder_sparse_step 1, no mlp_only_layers — others are
// refused).
func init() {
	register(&family{name: "qwen3moe", hfClass: "Qwen3MoeForCausalLM", hfType: "qwen3_moe", ropeNeox: true, qkNorm: true, moe: true,
		hfTensors: map[string]string{
			"ffn_gate_inp":  "mlp.gate",
			"ffn_gate_exps": "mlp.experts.%d.gate_proj",
			"ffn_up_exps":   "mlp.experts.%d.up_proj",
			"ffn_down_exps": "mlp.experts.%d.down_proj",
		},
		fromHF: qwen3moeHF, fromGGUF: qwen3moeGGUF, genGGUF: qwen3moeGenGGUF, genHF: qwen3moeGenHF,
		chatTemplate: qwen3ChatTemplate})
}

// qwen3ChatTemplate is the chat template of the Qwen3 models, Qwen3-30B-A3B's
// included (its tokenizer_config.json): ChatML with tool calls and <think>
// reasoning blocks.
const qwen3ChatTemplate = `{%- if tools %}
    {{- '<|im_start|>system\n' }}
    {%- if messages[0].role == 'system' %}
        {{- messages[0].content + '\n\n' }}
    {%- endif %}
    {{- "# Tools\n\nYou may call one or more functions to assist with the user query.\n\nYou are provided with function signatures within <tools></tools> XML tags:\n<tools>" }}
    {%- for tool in tools %}
        {{- "\n" }}
        {{- tool | tojson }}
    {%- endfor %}
    {{- "\n</tools>\n\nFor each function call, return a json object with function name and arguments within <tool_call></tool_call> XML tags:\n<tool_call>\n{\"name\": <function-name>, \"arguments\": <args-json-object>}\n</tool_call><|im_end|>\n" }}
{%- else %}
    {%- if messages[0].role == 'system' %}
        {{- '<|im_start|>system\n' + messages[0].content + '<|im_end|>\n' }}
    {%- endif %}
{%- endif %}
{%- set ns = namespace(multi_step_tool=true, last_query_index=messages|length - 1) %}
{%- for message in messages[::-1] %}
    {%- set index = (messages|length - 1) - loop.index0 %}
    {%- if ns.multi_step_tool and message.role == "user" and not(message.content.startswith('<tool_response>') and message.content.endswith('</tool_response>')) %}
        {%- set ns.multi_step_tool = false %}
        {%- set ns.last_query_index = index %}
    {%- endif %}
{%- endfor %}
{%- for message in messages %}
    {%- if (message.role == "user") or (message.role == "system" and not loop.first) %}
        {{- '<|im_start|>' + message.role + '\n' + message.content + '<|im_end|>' + '\n' }}
    {%- elif message.role == "assistant" %}
        {%- set content = message.content %}
        {%- set reasoning_content = '' %}
        {%- if message.reasoning_content is defined and message.reasoning_content is not none %}
            {%- set reasoning_content = message.reasoning_content %}
        {%- else %}
            {%- if '</think>' in message.content %}
                {%- set content = message.content.split('</think>')[-1].lstrip('\n') %}
                {%- set reasoning_content = message.content.split('</think>')[0].rstrip('\n').split('<think>')[-1].lstrip('\n') %}
            {%- endif %}
        {%- endif %}
        {%- if loop.index0 > ns.last_query_index %}
            {%- if loop.last or (not loop.last and reasoning_content) %}
                {{- '<|im_start|>' + message.role + '\n<think>\n' + reasoning_content.strip('\n') + '\n</think>\n\n' + content.lstrip('\n') }}
            {%- else %}
                {{- '<|im_start|>' + message.role + '\n' + content }}
            {%- endif %}
        {%- else %}
            {{- '<|im_start|>' + message.role + '\n' + content }}
        {%- endif %}
        {%- if message.tool_calls %}
            {%- for tool_call in message.tool_calls %}
                {%- if (loop.first and content) or (not loop.first) %}
                    {{- '\n' }}
                {%- endif %}
                {%- if tool_call.function %}
                    {%- set tool_call = tool_call.function %}
                {%- endif %}
                {{- '<tool_call>\n{"name": "' }}
                {{- tool_call.name }}
                {{- '", "arguments": ' }}
                {%- if tool_call.arguments is string %}
                    {{- tool_call.arguments }}
                {%- else %}
                    {{- tool_call.arguments | tojson }}
                {%- endif %}
                {{- '}\n</tool_call>' }}
            {%- endfor %}
        {%- endif %}
        {{- '<|im_end|>\n' }}
    {%- elif message.role == "tool" %}
        {%- if loop.first or (messages[loop.index0 - 1].role != "tool") %}
            {{- '<|im_start|>user' }}
        {%- endif %}
        {{- '\n<tool_response>\n' }}
        {{- message.content }}
        {{- '\n</tool_response>' }}
        {%- if loop.last or (messages[loop.index0 + 1].role != "tool") %}
            {{- '<|im_end|>\n' }}
        {%- endif %}
    {%- endif %}
{%- endfor %}
{%- if add_generation_prompt %}
    {{- '<|im_start|>assistant\n' }}
    {%- if enable_thinking is defined and enable_thinking is false %}
        {{- '<think>\n\n</think>\n\n' }}
    {%- endif %}
{%- endif %}`

func qwen3moeHF(raw []byte, c *Config) error {
	var hc struct {
		Experts     int   `json:"num_experts"`
		ExpertsUsed int   `json:"num_experts_per_tok"`
		ExpertFFN   int   `json:"moe_intermediate_size"`
		NormTopK    bool  `json:"norm_topk_prob"`
		SparseStep  *int  `json:"decoder_sparse_step"`
		MLPOnly     []int `json:"mlp_only_layers"`
		SharedFFN   int   `json:"shared_expert_intermediate_size"`
	}
	if err := json.Unmarshal(raw, &hc); err != nil {
		return fmt.Errorf("config.json: %w", err)
	}
	switch {
	case hc.Experts <= 0 || hc.ExpertsUsed <= 0 || hc.ExpertFFN <= 0:
		return fmt.Errorf("qwen3moe: num_experts %d, num_experts_per_tok %d, moe_intermediate_size %d must be positive", hc.Experts, hc.ExpertsUsed, hc.ExpertFFN)
	case !hc.NormTopK:
		return fmt.Errorf("qwen3moe: norm_topk_prob false is not supported (llama.cpp's qwen3moe always renormalises the chosen experts' weights)")
	case hc.SparseStep != nil && *hc.SparseStep != 1, len(hc.MLPOnly) > 0:
		return fmt.Errorf("qwen3moe: dense layers (decoder_sparse_step %v, mlp_only_layers %v) are not supported (llama.cpp's qwen3moe has none)", hc.SparseStep, hc.MLPOnly)
	case hc.SharedFFN > 0:
		return fmt.Errorf("qwen3moe: shared_expert_intermediate_size %d (a shared expert) is not supported", hc.SharedFFN)
	}
	c.Experts, c.ExpertsUsed, c.ExpertsNorm, c.FFN = hc.Experts, hc.ExpertsUsed, true, hc.ExpertFFN
	return nil
}

func qwen3moeGGUF(f *gguf.File, c *Config) error {
	if c.Experts <= 0 || c.ExpertsUsed <= 0 {
		return fmt.Errorf("qwen3moe: expert_count %d / expert_used_count %d must be positive", c.Experts, c.ExpertsUsed)
	}
	if v, ok := f.Uint("qwen3moe.expert_feed_forward_length"); ok && v > 0 {
		c.FFN = int(v)
	} else {
		c.FFN /= c.ExpertsUsed
	}
	return nil
}

func qwen3moeGenGGUF(w *gguf.Writer, o *GenOptions) {
	w.Set("qwen3moe.expert_feed_forward_length", uint32(o.FFN))
}

func qwen3moeGenHF(cfg map[string]any, o *GenOptions) {
	cfg["num_experts"], cfg["num_experts_per_tok"], cfg["moe_intermediate_size"] = o.Experts, o.ExpertsUsed, o.FFN
	cfg["norm_topk_prob"], cfg["decoder_sparse_step"], cfg["mlp_only_layers"] = true, 1, []int{}
}
