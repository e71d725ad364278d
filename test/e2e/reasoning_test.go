package e2e

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// thinkingTemplate writes the model's own (Qwen3) chat template with one
// change: when thinking is on, the generation prompt writes the "<think>\n"
// a trained Qwen3 model writes as its first token (as the Qwen3
// *-Thinking-2507 templates do). A random-weight model would almost never
// open the block itself; everything else — enable_thinking false closing
// the block in the prompt, the parser, the budget — is the real path.
func thinkingTemplate(t *testing.T, model string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(model, "tokenizer_config.json"))
	if err != nil {
		t.Fatal(err)
	}
	var cfg struct {
		ChatTemplate string `json:"chat_template"`
	}
	if err := json.Unmarshal(b, &cfg); err != nil {
		t.Fatal(err)
	}
	const off = `{{- '<think>\n\n</think>\n\n' }}`
	i := strings.LastIndex(cfg.ChatTemplate, off)
	if i < 0 {
		t.Fatalf("the Qwen3 template has no %s", off)
	}
	tmpl := cfg.ChatTemplate[:i+len(off)] + "\n    {%- else %}\n        {{- '<think>\\n' }}" + cfg.ChatTemplate[i+len(off):]
	path := filepath.Join(t.TempDir(), "qwen3-thinking.jinja")
	if err := os.WriteFile(path, []byte(tmpl), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

type reasoningAnswer struct {
	reasoning, content, finish string
	tokens                     []string // logprobs' token strings, when asked
}

func postReasoning(base string, body map[string]any) (reasoningAnswer, error) {
	var a reasoningAnswer
	var r struct {
		Choices []struct {
			Message struct {
				Content          *string `json:"content"`
				ReasoningContent *string `json:"reasoning_content"`
			} `json:"message"`
			FinishReason string `json:"finish_reason"`
			Logprobs     *struct {
				Content []struct {
					Token string `json:"token"`
				} `json:"content"`
			} `json:"logprobs"`
		} `json:"choices"`
	}
	if err := postJSON(base+"/v1/chat/completions", body, &r); err != nil {
		return a, err
	}
	if len(r.Choices) != 1 {
		return a, fmt.Errorf("%d choices, want 1", len(r.Choices))
	}
	c := r.Choices[0]
	if c.Message.ReasoningContent != nil {
		a.reasoning = *c.Message.ReasoningContent
	}
	if c.Message.Content != nil {
		a.content = *c.Message.Content
	}
	a.finish = c.FinishReason
	if c.Logprobs != nil {
		for _, e := range c.Logprobs.Content {
			a.tokens = append(a.tokens, e.Token)
		}
	}
	return a, nil
}

// streamReasoning is postReasoning streamed: the deltas put together.
func streamReasoning(base string, body map[string]any) (reasoningAnswer, error) {
	var a reasoningAnswer
	body = mergeBody(body, map[string]any{"stream": true})
	b, _ := json.Marshal(body)
	resp, err := http.Post(base+"/v1/chat/completions", "application/json", bytes.NewReader(b))
	if err != nil {
		return a, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return a, fmt.Errorf("stream: %d", resp.StatusCode)
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok || data == "[DONE]" {
			continue
		}
		var ch struct {
			Choices []struct {
				Delta struct {
					Content          *string `json:"content"`
					ReasoningContent *string `json:"reasoning_content"`
				} `json:"delta"`
				FinishReason *string `json:"finish_reason"`
			} `json:"choices"`
		}
		if err := json.Unmarshal([]byte(data), &ch); err != nil {
			return a, fmt.Errorf("chunk %s: %v", data, err)
		}
		for _, c := range ch.Choices {
			if c.Delta.ReasoningContent != nil {
				a.reasoning += *c.Delta.ReasoningContent
			}
			if c.Delta.Content != nil {
				a.content += *c.Delta.Content
			}
			if c.FinishReason != nil {
				a.finish = *c.FinishReason
			}
		}
	}
	return a, sc.Err()
}

func mergeBody(a, b map[string]any) map[string]any {
	out := map[string]any{}
	for k, v := range a {
		out[k] = v
	}
	for k, v := range b {
		out[k] = v
	}
	return out
}

// TestReasoning (issue #18): a random-weight model with the Qwen3 tokenizer
// and chat template, --reasoning_parser qwen3. The thinking block goes to
// reasoning_content, non-stream and stream (the official OpenAI Node client
// too); thinking_token_budget closes it after exactly that many tokens, so
// the answer that follows is deterministic to test; chat_template_kwargs
// enable_thinking false reaches the template (the prompt closes the block,
// and nothing is reasoning).
func TestReasoning(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end test: builds and launches the server")
	}
	bin := buildBinaries(t)
	model := genTokenizerModel(t, bin, "qwen3")
	s := launch(t, bin, model, "--reasoning_parser", "qwen3", "--chat_template", thinkingTemplate(t, model))
	msgs := []map[string]any{{"role": "user", "content": "Think, then answer."}}

	t.Run("enable_thinking reaches the template", func(t *testing.T) {
		for _, tc := range []struct {
			kwargs any
			suffix string
		}{
			{nil, "<|im_start|>assistant\n<think>\n"},
			{map[string]any{"enable_thinking": true}, "<|im_start|>assistant\n<think>\n"},
			{map[string]any{"enable_thinking": false}, "<|im_start|>assistant\n<think>\n\n</think>\n\n"},
		} {
			body := map[string]any{"messages": msgs}
			if tc.kwargs != nil {
				body["chat_template_kwargs"] = tc.kwargs
			}
			var tok struct {
				Tokens []int32 `json:"tokens"`
			}
			if err := postJSON(s.base+"/tokenize", body, &tok); err != nil {
				t.Fatal(err)
			}
			var de struct {
				Prompt string `json:"prompt"`
			}
			if err := postJSON(s.base+"/detokenize", map[string]any{"tokens": tok.Tokens}, &de); err != nil {
				t.Fatal(err)
			}
			if !strings.HasSuffix(de.Prompt, tc.suffix) {
				t.Errorf("kwargs %v: the prompt ends %q, want %q", tc.kwargs, tail(de.Prompt, 40), tc.suffix)
			}
		}
		// Thinking off: the block is closed in the prompt, so nothing the
		// model writes is reasoning (and a budget has nothing to do).
		for seed := range 3 {
			a, err := postReasoning(s.base, map[string]any{"messages": msgs, "max_tokens": 12, "temperature": 1, "seed": seed,
				"chat_template_kwargs": map[string]any{"enable_thinking": false}, "thinking_token_budget": 2})
			if err != nil {
				t.Fatal(err)
			}
			if a.reasoning != "" {
				t.Errorf("seed %d: thinking off, yet reasoning_content %q", seed, a.reasoning)
			}
		}
	})

	t.Run("thinking_token_budget", func(t *testing.T) {
		answered := 0
		for _, budget := range []int{0, 1, 5, 20} {
			for seed := range 3 {
				body := map[string]any{"messages": msgs, "max_tokens": budget + 12, "temperature": 1, "seed": seed,
					"thinking_token_budget": budget, "logprobs": true}
				a, err := postReasoning(s.base, body)
				if err != nil {
					t.Fatal(err)
				}
				// The block ends at token `budget` (or sooner, if the model
				// closed it itself).
				at := slices.Index(a.tokens, "</think>")
				if at < 0 || at > budget {
					t.Errorf("budget %d seed %d: </think> at token %d of %q", budget, seed, at, a.tokens)
				}
				if (a.reasoning == "") != (at == 0) || strings.Contains(a.content, "<think>") || strings.Contains(a.content, "</think>") {
					t.Errorf("budget %d seed %d: reasoning %q, content %q", budget, seed, a.reasoning, a.content)
				}
				if a.content != "" {
					answered++
				}
				st, err := streamReasoning(s.base, body)
				if err != nil {
					t.Fatal(err)
				}
				if st.reasoning != a.reasoning || st.content != a.content || st.finish != a.finish {
					t.Errorf("budget %d seed %d: stream (%q, %q, %s) != collected (%q, %q, %s)", budget, seed,
						st.reasoning, st.content, st.finish, a.reasoning, a.content, a.finish)
				}
			}
		}
		if answered == 0 {
			t.Error("no answer after any forced </think>")
		}
		// Without a budget a random model thinks to max_tokens.
		a, err := postReasoning(s.base, map[string]any{"messages": msgs, "max_tokens": 8, "temperature": 1, "seed": 1})
		if err != nil || a.reasoning == "" || a.finish != "length" {
			t.Errorf("no budget: %+v, %v", a, err)
		}
	})

	// Constraints apply to the answer, not the thinking: the block is free
	// text up to the forced </think>, and the answer after it validates.
	t.Run("json_schema after thinking", func(t *testing.T) {
		schema := json.RawMessage(`{"type":"object","properties":{"answer":{"type":"string","maxLength":12},"sure":{"type":"boolean"}},"required":["answer","sure"],"additionalProperties":false}`)
		v := compileSchema(t, "answer", schema)
		stopped := 0
		for seed := range 4 {
			a, err := postReasoning(s.base, map[string]any{"messages": msgs, "max_tokens": 200, "temperature": 1, "seed": seed,
				"thinking_token_budget": 6, "response_format": map[string]any{"type": "json_schema",
					"json_schema": map[string]any{"name": "answer", "schema": schema, "strict": true}}})
			if err != nil {
				t.Fatal(err)
			}
			if a.reasoning == "" {
				t.Errorf("seed %d: no reasoning_content", seed)
			}
			if a.finish != "stop" {
				continue
			}
			stopped++
			if err := validates(v, a.content); err != nil {
				t.Errorf("seed %d: answer %q: %v", seed, a.content, err)
			}
		}
		if stopped == 0 {
			t.Error("no constrained answer stopped within 200 tokens")
		}
		t.Logf("%d of 4 constrained answers after thinking stopped and validated", stopped)
	})

	t.Run("refusals", func(t *testing.T) {
		for name, tc := range map[string]struct {
			path string
			body map[string]any
		}{
			"negative":               {"/v1/chat/completions", map[string]any{"messages": msgs, "thinking_token_budget": -1}},
			"not an integer":         {"/v1/chat/completions", map[string]any{"messages": msgs, "thinking_token_budget": "5"}},
			"no reasoning parser":    {"/v1/chat/completions", map[string]any{"messages": msgs, "thinking_token_budget": 5, "separate_reasoning": false}},
			"with allowed_token_ids": {"/v1/chat/completions", map[string]any{"messages": msgs, "thinking_token_budget": 5, "allowed_token_ids": []int{1, 2}}},
			"completions":            {"/v1/completions", map[string]any{"prompt": "x", "thinking_token_budget": 5}},
		} {
			var e struct {
				Error struct {
					Param string `json:"param"`
				} `json:"error"`
			}
			status, err := postStatus(s.base+tc.path, tc.body, &e)
			if err != nil || status != http.StatusBadRequest || e.Error.Param != "thinking_token_budget" {
				t.Errorf("%s: %d %+v %v, want 400 naming thinking_token_budget", name, status, e, err)
			}
		}
	})

	t.Run("openai node client", func(t *testing.T) {
		runOpenAIClientCheck(t, s.base, "--require-chat", "--reasoning")
		runOpenAIClientCheck(t, s.base, "--require-chat", "--reasoning", "--thinking-budget", "4")
	})
}

// postStatus posts body as JSON to url and decodes the answer into out,
// whatever its status.
func postStatus(url string, body any, out any) (int, error) {
	status, raw, err := postRaw(url, body)
	if err != nil {
		return status, err
	}
	return status, decodeAnswer(status, raw, out)
}

func decodeAnswer(status int, raw []byte, out any) error {
	if err := json.Unmarshal(raw, out); err != nil {
		return fmt.Errorf("%d %s: %v", status, raw, err)
	}
	return nil
}

// postRaw POSTs body as JSON and returns the status and the response body.
func postRaw(url string, body any) (int, []byte, error) {
	b, _ := json.Marshal(body)
	resp, err := http.Post(url, "application/json", bytes.NewReader(b))
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	var raw bytes.Buffer
	if _, err := raw.ReadFrom(resp.Body); err != nil {
		return resp.StatusCode, nil, err
	}
	return resp.StatusCode, raw.Bytes(), nil
}

// postJSON is postStatus that wants 200; another status's error names the
// answer's body (a 500's message names the slot whose cause the server log
// holds).
func postJSON(url string, body any, out any) error {
	status, raw, err := postRaw(url, body)
	if err != nil {
		return err
	}
	if status != http.StatusOK {
		return fmt.Errorf("%s: status %d: %s", url, status, tail(string(raw), 1024))
	}
	return decodeAnswer(status, raw, out)
}
