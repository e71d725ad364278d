package fakebackend

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lightllm-go/lightllm/pkg/apiserver"
	"github.com/lightllm-go/lightllm/pkg/sampler"
	"github.com/lightllm-go/lightllm/pkg/testmodels"
	"github.com/lightllm-go/lightllm/pkg/tokenizer"
)

func loadTok(t *testing.T) *tokenizer.Tokenizer {
	t.Helper()
	dir := os.Getenv("LIGHTLLM_TEST_MODELS")
	if dir == "" {
		dir = filepath.Join("..", "..", "..", "..", "shared", "models")
	}
	dir = filepath.Join(dir, "stories260K", "hf")
	if _, err := os.Stat(filepath.Join(dir, "tokenizer.json")); err != nil {
		testmodels.Missing(t, fmt.Sprintf("stories260K tokenizer not found at %s (set LIGHTLLM_TEST_MODELS)", dir), nil)
	}
	tok, err := tokenizer.LoadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// TestGenerationSemantics checks the double's LightLLM-like stop rules.
func TestGenerationSemantics(t *testing.T) {
	tok := loadTok(t)
	script := tok.Encode("ab cd", false)
	greedy := apiserver.SamplingParams{Params: sampler.Params{TopK: 1, Temperature: 1, TopP: 1, RepetitionPenalty: 1, Seed: -1,
		MaxNewTokens: 50, MinNewTokens: 1}}
	with := func(f func(p *apiserver.SamplingParams)) apiserver.SamplingParams {
		p := greedy
		f(&p)
		return p
	}
	cases := map[string]struct {
		params     apiserver.SamplingParams
		wantTokens int
		reason     apiserver.FinishReason
		textHas    string
	}{
		"eos after the script":    {greedy, len(script) + 1, apiserver.FinishStop, "ab cd"},
		"max_new_tokens":          {with(func(p *apiserver.SamplingParams) { p.MaxNewTokens = 2 }), 2, apiserver.FinishLength, ""},
		"ignore_eos runs to max":  {with(func(p *apiserver.SamplingParams) { p.IgnoreEOS, p.MaxNewTokens = true, 12 }), 12, apiserver.FinishLength, "ab cd"},
		"min_new_tokens":          {with(func(p *apiserver.SamplingParams) { p.MinNewTokens = len(script) + 4 }), len(script) + 4, apiserver.FinishStop, ""},
		"stop id sequence":        {with(func(p *apiserver.SamplingParams) { p.StopSequences = []apiserver.StopSequence{{IDs: script[1:2]}} }), 2, apiserver.FinishStop, ""},
		"stop string on the text": {with(func(p *apiserver.SamplingParams) { p.StopSequences = []apiserver.StopSequence{{Text: "b c"}} }), 0, apiserver.FinishStop, "b c"},
		"print_eos_token":         {with(func(p *apiserver.SamplingParams) { p.PrintEOSToken = true }), len(script) + 1, apiserver.FinishStop, "</s>"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			b := New(tok, Options{Reply: func(*apiserver.Group, int) string { return "ab cd" }})
			st, err := b.Submit(context.Background(), &apiserver.Group{Prompt: []int32{1}, N: 1, Params: tc.params})
			if err != nil {
				t.Fatal(err)
			}
			var text strings.Builder
			var last apiserver.Event
			n := 0
			for ev := range st.Events {
				text.WriteString(ev.Text)
				last = ev
				n++
			}
			if !last.Finished || last.Reason != tc.reason || (tc.wantTokens > 0 && n != tc.wantTokens) {
				t.Errorf("%d tokens, last %+v; want %d tokens, %s", n, last, tc.wantTokens, tc.reason)
			}
			if !strings.Contains(text.String(), tc.textHas) {
				t.Errorf("text %q lacks %q", text.String(), tc.textHas)
			}
			if b.Running() != 0 {
				t.Error("group still running after its stream closed")
			}
		})
	}
}
