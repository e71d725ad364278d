package chatout

import "strings"

// DetectToolParser picks the tool call parser a chat template's model
// writes, from the call syntax its template renders ("" when none is
// recognised).
func DetectToolParser(template string) string {
	switch {
	case strings.Contains(template, "<tool_call>"):
		return "hermes"
	case strings.Contains(template, "[TOOL_CALLS]"):
		return "mistral"
	case strings.Contains(template, "<|python_tag|>"), strings.Contains(template, "<|start_header_id|>"):
		// Llama 3.x: 3.1+ templates render JSON calls; a 3.0 template
		// renders no tools, and the JSON call format is what 3.x is
		// trained on.
		return "llama3_json"
	}
	return ""
}

// DetectReasoningParser picks gpt-oss for templates that render harmony
// channels, qwen3 for templates that render thinking blocks; qwen3 reads
// output as reasoning only when it opens with <think> or the prompt opened
// one, so it is safe for models that do not think.
func DetectReasoningParser(template string) string {
	if strings.Contains(template, harmonyChannel) {
		return HarmonyParser
	}
	if strings.Contains(template, ThinkCloseTag) {
		return "qwen3"
	}
	return ""
}

// ThinkingOpen reports whether a rendered prompt leaves a thinking block
// open (it ends in <think> with no </think> after it), as Qwen3 thinking
// and DeepSeek-R1 templates do, so that output starts as reasoning.
func ThinkingOpen(prompt string) bool {
	i := strings.LastIndex(prompt, ThinkOpenTag)
	return i >= 0 && !strings.Contains(prompt[i:], ThinkCloseTag) && strings.TrimRight(prompt[i+len(ThinkOpenTag):], spaces) == ""
}
