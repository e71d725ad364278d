package engine

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/lightllm-go/lightllm/pkg/chattmpl"
	"github.com/lightllm-go/lightllm/pkg/model"
	"github.com/lightllm-go/lightllm/pkg/sampler"
	"github.com/lightllm-go/lightllm/pkg/tokenizer"
)

// GenerateOptions is one `lightllm run`.
type GenerateOptions struct {
	ModelPath string // HF directory or .gguf file
	Prompt    string // "" = BOS only (or an empty user turn with Chat)
	// Chat renders Prompt as one user message through the model's chat template.
	Chat    bool
	Params  sampler.Params
	Threads int
}

// Generate loads the model, generates for one prompt and streams the
// generated text (special tokens and the finishing stop token omitted) to w.
func Generate(ctx context.Context, o GenerateOptions, w io.Writer) error {
	m, err := model.Load(o.ModelPath, model.LoadOptions{Threads: o.Threads})
	if err != nil {
		return fmt.Errorf("load model %s: %w", o.ModelPath, err)
	}
	defer m.Close()
	tk := m.Tokenizer()
	if tk == nil {
		return fmt.Errorf("model %s has no tokenizer", o.ModelPath)
	}
	cfg := m.Config()
	prompt, err := buildPrompt(m, tk, o)
	if err != nil {
		return err
	}
	if len(prompt) >= cfg.MaxPos {
		return fmt.Errorf("prompt has %d tokens, the model's context is %d", len(prompt), cfg.MaxPos)
	}
	total := min(cfg.MaxPos, len(prompt)+o.Params.MaxNewTokens)
	e, err := New(m, Options{MaxTotalTokens: total, MaxReqTotalLen: total, DisablePromptCache: true, SkipLogProbs: true})
	if err != nil {
		return err
	}
	if err := e.Add(Request{ID: 1, Prompt: prompt, Params: o.Params}); err != nil {
		return err
	}
	ids := append([]int32(nil), prompt...)
	st := tokenizer.NewDecodeState(len(prompt))
	for e.HasWork() {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("generation interrupted: %w", err)
		}
		outs, err := e.Step()
		if err != nil {
			return err
		}
		for _, out := range outs {
			if out.Token < 0 || out.Reason == FinishStop {
				continue // the stop token itself is not part of the text
			}
			ids = append(ids, out.Token)
			if _, err := io.WriteString(w, tk.DecodeIncremental(ids, &st, true)); err != nil {
				return fmt.Errorf("write output: %w", err)
			}
		}
	}
	if _, err := io.WriteString(w, tk.DecodeFlush(ids, &st, true)); err != nil {
		return fmt.Errorf("write output: %w", err)
	}
	return nil
}

// buildPrompt tokenizes the prompt: BOS alone when empty, the chat template
// when asked (its output already holds any BOS, so no special tokens are
// added, as HF's apply_chat_template), else with the tokenizer's BOS/EOS rules.
func buildPrompt(m *model.Model, tk *tokenizer.Tokenizer, o GenerateOptions) ([]int32, error) {
	cfg := m.Config()
	if o.Chat {
		src := m.ChatTemplate()
		if src == "" {
			return nil, fmt.Errorf("model %s has no chat template", o.ModelPath)
		}
		tmpl, err := chattmpl.New(src)
		if err != nil {
			return nil, fmt.Errorf("chat template: %w", err)
		}
		extra := chattmpl.NewMap()
		if cfg.BOS >= 0 {
			extra.Set("bos_token", tk.Decode([]int32{cfg.BOS}, false))
		}
		if len(cfg.EOS) > 0 {
			extra.Set("eos_token", tk.Decode(cfg.EOS[:1], false))
		}
		text, err := tmpl.RenderMessages([]chattmpl.Message{{Role: "user", Content: chattmpl.TextContent(o.Prompt)}}, true, extra)
		if err != nil {
			return nil, fmt.Errorf("chat template: %w", err)
		}
		ids := tk.Encode(text, false)
		if len(ids) == 0 {
			return nil, errors.New("the chat template rendered an empty prompt")
		}
		return ids, nil
	}
	if o.Prompt == "" {
		if cfg.BOS < 0 {
			return nil, fmt.Errorf("empty prompt and model %s has no BOS token", o.ModelPath)
		}
		return []int32{cfg.BOS}, nil
	}
	ids := tk.Encode(o.Prompt, true)
	if len(ids) == 0 {
		return nil, fmt.Errorf("prompt %q encodes to no tokens", o.Prompt)
	}
	return ids, nil
}
