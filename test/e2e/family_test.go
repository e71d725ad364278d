package e2e

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/lightllm-go/lightllm/pkg/model"
	"github.com/lightllm-go/lightllm/pkg/tokenizer"
)

// familyChat is one architecture family's chat case (testdata/family_chat.json):
// the gen-model arguments of a random model, a conversation, its rendering by
// Python jinja2 with the family's template, the prompt ids, and llama.cpp's
// greedy continuation of those ids on the model's f16 GGUF.
type familyChat struct {
	GenModel []string         `json:"gen_model"`
	Messages []map[string]any `json:"messages"`
	Rendered string           `json:"rendered"`
	Prompt   []int32          `json:"prompt_ids"`
	Greedy   []int32          `json:"llamacpp_greedy_ids"`
	// Date, when set, is the date the template's strftime_now rendered
	// into its "Current date: " line (gpt-oss): the server renders
	// today's, so the case's tokens are checked in two steps (dated).
	Date string `json:"rendered_date"`
	// ServerArgs are extra launch flags (gpt-oss: its harmony reasoning
	// parser, named rather than detected from the template).
	ServerArgs []string `json:"server_args"`
}

// TestFamilyChat serves each family's gen-model files (GGUF f16 and the HF
// directory) through the whole server: /v1/chat/completions renders the
// family's own template (carried by the files) and answers with llama.cpp's
// greedy continuation of the rendered prompt (for a template that writes
// today's date, gpt-oss's, see dated).
func TestFamilyChat(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end test: builds and launches the server")
	}
	b, err := os.ReadFile(filepath.Join("testdata", "family_chat.json"))
	if err != nil {
		t.Fatal(err)
	}
	var cases map[string]familyChat
	if err := json.Unmarshal(b, &cases); err != nil {
		t.Fatal(err)
	}
	names := make([]string, 0, len(cases))
	for n := range cases {
		names = append(names, n)
	}
	sort.Strings(names)
	bin := buildBinaries(t)
	for _, name := range names {
		fc := cases[name]
		dir := t.TempDir()
		gg, hf := filepath.Join(dir, name+".gguf"), filepath.Join(dir, "hf")
		args := append([]string{"gen-model", "--out", gg, "--hf_out", hf}, fc.GenModel...)
		if out, err := exec.Command(filepath.Join(bin, "lightllm"), args...).CombinedOutput(); err != nil {
			t.Fatalf("lightllm %v: %v\n%s", args, err, out)
		}
		tok, err := tokenizer.Load(hf)
		if err != nil {
			t.Fatal(err)
		}
		if got := tok.Encode(fc.Rendered, false); !equalIDs(got, fc.Prompt) {
			t.Fatalf("%s: the rendered prompt encodes to %v, fixture %v", name, got, fc.Prompt)
		}
		prompt, greedy := fc.Prompt, fc.Greedy
		if fc.Date != "" {
			prompt, greedy = dated(t, fc, gg, tok)
		}
		// The text the detokenizer streams for those ids (after the prompt).
		ids := append(append([]int32(nil), prompt...), greedy...)
		st := tokenizer.NewDecodeState(len(prompt))
		var want string
		for i := len(prompt) + 1; i <= len(ids); i++ {
			want += tok.DecodeIncremental(ids[:i], &st, true)
		}
		want += tok.DecodeFlush(ids, &st, true)
		for _, form := range []struct{ name, path string }{{"gguf", gg}, {"hf", hf}} {
			t.Run(name+"/"+form.name, func(t *testing.T) {
				s := launch(t, bin, form.path, fc.ServerArgs...)
				c := newAPIClient(t, s.base)
				var a apiChat
				c.postJSON(t, "/v1/chat/completions", map[string]any{"model": "m", "messages": fc.Messages,
					"max_tokens": len(greedy), "temperature": 0}, &a)
				if len(a.Choices) != 1 || a.Choices[0].Message == nil {
					t.Fatalf("chat answer %+v", a)
				}
				if got := a.Choices[0].Message.Content; got != want {
					t.Errorf("content %q\nwant %q (greedy ids %v)", got, want, greedy)
				}
				// An unframed answer is content for the harmony parser
				// (gpt-oss's, picked from its template): no reasoning.
				if r := a.Choices[0].Message.ReasoningContent; r != nil && *r != "" {
					t.Errorf("reasoning_content %q, want none", *r)
				}
				if a.Usage == nil || a.Usage.Prompt != len(prompt) || a.Usage.Completion != len(greedy) {
					t.Errorf("usage %+v, want %d prompt tokens (the rendered template) and %d", a.Usage, len(prompt), len(greedy))
				}
			})
		}
	}
}

func equalIDs(a, b []int32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// dated checks a case whose rendering carries the date it was made
// (familyChat.Date) and returns what the server must answer today: pkg/model
// (the engine the server runs) must give llama.cpp's greedy ids for the
// case's prompt, and then its greedy continuation of today's rendering — the
// same text with today's date, which is all strftime_now changes — is the
// answer, with today's prompt ids.
func dated(t *testing.T, fc familyChat, gguf string, tok *tokenizer.Tokenizer) (prompt, greedy []int32) {
	t.Helper()
	m, err := model.Load(gguf, model.LoadOptions{NoTokenizer: true, Threads: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if got := greedyIDs(t, m, fc.Prompt, len(fc.Greedy)); !equalIDs(got, fc.Greedy) {
		t.Fatalf("pkg/model's greedy ids %v for the fixture's prompt, llama.cpp's %v", got, fc.Greedy)
	}
	line := "Current date: " + fc.Date
	if !strings.Contains(fc.Rendered, line) {
		t.Fatalf("the rendered prompt has no %q", line)
	}
	today := strings.Replace(fc.Rendered, line, "Current date: "+time.Now().Format("2006-01-02"), 1)
	prompt = tok.Encode(today, false)
	return prompt, greedyIDs(t, m, prompt, len(fc.Greedy))
}

// greedyIDs decodes n tokens after prompt greedily with pkg/model: the
// prompt in one step (as llama.cpp prefills up to 512 tokens), then one
// token per step.
func greedyIDs(t *testing.T, m *model.Model, prompt []int32, n int) []int32 {
	t.Helper()
	if len(prompt) > 512 {
		t.Fatalf("a %d-token prompt: llama.cpp would prefill it in 512-token chunks", len(prompt))
	}
	kv := m.NewKV(len(prompt) + n)
	slots := make([]int32, len(prompt)+n)
	for i := range slots {
		slots[i] = int32(i)
	}
	pos := make([]int32, len(prompt))
	for i := range pos {
		pos[i] = int32(i)
	}
	logits := [][]float32{make([]float32, m.Config().Vocab)}
	b := &model.Batch{Tokens: prompt, Positions: pos, Seqs: []model.Seq{{Start: 0, Len: len(prompt), Slots: slots[:len(prompt)], WantLogits: true}}}
	var out []int32
	for {
		if err := m.Forward(b, kv, logits); err != nil {
			t.Fatal(err)
		}
		best := 0
		for i, v := range logits[0] {
			if v > logits[0][best] {
				best = i
			}
		}
		out = append(out, int32(best))
		if len(out) == n {
			return out
		}
		p := int32(len(prompt) + len(out) - 1)
		b = &model.Batch{Tokens: []int32{int32(best)}, Positions: []int32{p}, Seqs: []model.Seq{{Start: 0, Len: 1, Slots: slots[:p+1], WantLogits: true}}}
	}
}
