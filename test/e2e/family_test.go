package e2e

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"testing"

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
}

// TestFamilyChat serves each family's gen-model files (GGUF f16 and the HF
// directory) through the whole server: /v1/chat/completions renders the
// family's own template (carried by the files) and answers with llama.cpp's
// greedy continuation of the rendered prompt.
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
		// The text the detokenizer streams for those ids (after the prompt).
		ids := append(append([]int32(nil), fc.Prompt...), fc.Greedy...)
		st := tokenizer.NewDecodeState(len(fc.Prompt))
		var want string
		for i := len(fc.Prompt) + 1; i <= len(ids); i++ {
			want += tok.DecodeIncremental(ids[:i], &st, true)
		}
		want += tok.DecodeFlush(ids, &st, true)
		for _, form := range []struct{ name, path string }{{"gguf", gg}, {"hf", hf}} {
			t.Run(name+"/"+form.name, func(t *testing.T) {
				s := launch(t, bin, form.path)
				c := newAPIClient(t, s.base)
				var a apiChat
				c.postJSON(t, "/v1/chat/completions", map[string]any{"model": "m", "messages": fc.Messages,
					"max_tokens": len(fc.Greedy), "temperature": 0}, &a)
				if len(a.Choices) != 1 || a.Choices[0].Message == nil {
					t.Fatalf("chat answer %+v", a)
				}
				if got := a.Choices[0].Message.Content; got != want {
					t.Errorf("content %q\nwant %q (llama.cpp's greedy ids %v)", got, want, fc.Greedy)
				}
				if a.Usage == nil || a.Usage.Prompt != len(fc.Prompt) || a.Usage.Completion != len(fc.Greedy) {
					t.Errorf("usage %+v, want %d prompt tokens (the rendered template) and %d", a.Usage, len(fc.Prompt), len(fc.Greedy))
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
