package tokenizer

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/lightllm-go/lightllm/pkg/gguf"
)

// loadStories returns the stories260K tokenizer from the HF directory and
// both GGUF versions.
func loadStories(t *testing.T) map[string]*Tokenizer {
	t.Helper()
	dir := stories260K(t)
	out := map[string]*Tokenizer{}
	hf, err := LoadDir(filepath.Join(dir, "hf"))
	if err != nil {
		t.Fatal(err)
	}
	out["hf"] = hf
	for name, file := range map[string]string{
		"gguf-v3": "stories260K-f32.gguf",
		"gguf-v1": "tinyllamas-stories-260k-f32.ggufv1.gguf",
	} {
		f, err := gguf.Open(filepath.Join(dir, file))
		if err != nil {
			t.Fatalf("open %s: %v", file, err)
		}
		tk, err := FromGGUFFile(f)
		f.Close()
		if err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		out[name] = tk
	}
	return out
}

func TestStories260KOnceUponATime(t *testing.T) {
	want := []int32{403, 407, 261, 378}
	for name, tk := range loadStories(t) {
		if got := tk.Encode("Once upon a time", false); !slices.Equal(got, want) {
			t.Errorf("%s: Encode = %v, want %v", name, got, want)
		}
		if got := tk.Encode("Once upon a time", true); !slices.Equal(got, append([]int32{1}, want...)) {
			t.Errorf("%s: Encode(addSpecial) = %v, want BOS first", name, got)
		}
		if tk.BOS() != 1 || tk.EOS() != 2 || tk.VocabSize() != 512 {
			t.Errorf("%s: BOS %d EOS %d vocab %d, want 1 2 512", name, tk.BOS(), tk.EOS(), tk.VocabSize())
		}
		if got := tk.Decode(want, false); got != "Once upon a time" {
			t.Errorf("%s: Decode = %q", name, got)
		}
	}
}

// TestStories260KSourcesAgree checks that the HF tokenizer.json and the GGUF
// vocabularies (SentencePiece merging by score) give the same ids.
func TestStories260KSourcesAgree(t *testing.T) {
	var golden struct {
		Text string `json:"text_until_stop"`
	}
	readJSON(t, filepath.Join(stories260K(t), "golden_greedy_llamacpp.json"), &golden)
	texts := []string{
		golden.Text,
		"Hello, world! 你好，世界 日本語 Ελληνικά",
		"emoji 😀😃😄 👍🏽 👨‍👩‍👧‍👦 🏳️‍🌈 ❤️",
		"   leading spaces and trailing   ",
		"tabs\tand\nnewlines\n\n\nand\r\ncrlf",
		"multiple     spaces    between",
		"<s>special</s> tokens <unk> inside",
		"ÿþ\x7f\x01control\x00nul",
		"", " ", "\n", "a",
	}
	tks := loadStories(t)
	for _, text := range texts {
		ref := tks["hf"].Encode(text, false)
		for _, name := range []string{"gguf-v3", "gguf-v1"} {
			if got := tks[name].Encode(text, false); !slices.Equal(got, ref) {
				t.Errorf("%s vs hf on %q:\n got %v\nwant %v", name, clip(text), got, ref)
			}
		}
		if back := tks["hf"].Decode(ref, false); back != text && !strings.ContainsRune(text, '<') {
			t.Errorf("hf round trip of %q gave %q", clip(text), clip(back))
		}
	}
}

// TestStories260KDecodeGolden decodes llama.cpp's greedy output back to the
// text it printed, at once and token by token.
func TestStories260KDecodeGolden(t *testing.T) {
	var golden struct {
		Tokens []int32 `json:"generated_tokens"`
		Stop   int     `json:"first_bos_or_eos_index"`
		Text   string  `json:"text_until_stop"`
	}
	readJSON(t, filepath.Join(stories260K(t), "golden_greedy_llamacpp.json"), &golden)
	if golden.Stop <= 0 || golden.Stop > len(golden.Tokens) {
		t.Fatalf("golden stop index %d out of range", golden.Stop)
	}
	ids := golden.Tokens[:golden.Stop]
	for name, tk := range loadStories(t) {
		if got := tk.Decode(ids, true); got != golden.Text {
			t.Errorf("%s: Decode = %q, want %q", name, clip(got), clip(golden.Text))
		}
		// The model happens to emit the canonical split of its own text.
		if got := tk.Encode(golden.Text, false); !slices.Equal(got, ids) {
			t.Errorf("%s: Encode(golden text) = %v, want the generated ids %v", name, got, ids)
		}
		st := DecodeState{}
		var sb strings.Builder
		for i := range ids {
			sb.WriteString(tk.DecodeIncremental(ids[:i+1], &st, true))
		}
		sb.WriteString(tk.DecodeFlush(ids, &st, true))
		if sb.String() != golden.Text {
			t.Errorf("%s: incremental decode = %q", name, clip(sb.String()))
		}
	}
}
