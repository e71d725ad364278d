package model

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/lightllm-go/lightllm/pkg/model/builtin"
)

// The in-memory builtin model is exactly the GGUF file the generator writes
// for the same options: same configuration, same logits, same greedy text,
// and the same on every load.
func TestBuiltinMatchesGeneratedFile(t *testing.T) {
	const spec = "builtin:tiny-random"
	s, err := builtin.Lookup(spec)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "tiny.gguf")
	if err := GenerateGGUF(path, builtinOptions(s)); err != nil {
		t.Fatal(err)
	}
	load := func(p string) *Model {
		m, err := Load(p, LoadOptions{Threads: 2, KVType: "f32"})
		if err != nil {
			t.Fatalf("Load(%s): %v", p, err)
		}
		t.Cleanup(func() { m.Close() })
		return m
	}
	mem, mem2, file := load(spec), load(spec), load(path)
	c := mem.Config()
	if c.Vocab != s.Vocab || c.MaxPos != s.MaxPos || c.Layers != s.Layers || c.Hidden != s.Hidden || c.BOS != int32(s.BOS) {
		t.Errorf("config %+v does not match the spec %+v", c, s)
	}
	if mem.Tokenizer() == nil {
		t.Fatal("builtin model loaded without its tokenizer")
	}
	prompt := mem.Tokenizer().Encode("hello world", true)
	if len(prompt) < 2 || prompt[0] != int32(s.BOS) {
		t.Fatalf("prompt %v: want BOS and some tokens", prompt)
	}
	if d := maxAbsDiff(prefillLogits(t, mem, prompt), prefillLogits(t, file, prompt)); d != 0 {
		t.Errorf("builtin and file logits differ by %g", d)
	}
	want := greedy(t, file, prompt, 24)
	for i, m := range []*Model{mem, mem2} {
		if got := greedy(t, m, prompt, 24); !slices.Equal(got, want) {
			t.Errorf("load %d: greedy tokens %v, want %v (the file's)", i, got, want)
		}
	}
}

func TestBuiltinTokenizer(t *testing.T) {
	tok, err := LoadTokenizer("builtin:tiny-random")
	if err != nil {
		t.Fatal(err)
	}
	for _, text := range []string{"hello world", "Once upon a time, 42!", "日本"} {
		ids := tok.Encode(text, false)
		if got := tok.Decode(ids, true); got != text {
			t.Errorf("round trip of %q: %v → %q", text, ids, got)
		}
	}
	if tok.BOS() != 1 || tok.EOS() != 2 || tok.VocabSize() != 512 {
		t.Errorf("BOS %d EOS %d vocab %d, want 1, 2, 512", tok.BOS(), tok.EOS(), tok.VocabSize())
	}
}

func TestBuiltinErrors(t *testing.T) {
	tests := []struct {
		name string
		load func() error
		want string
	}{
		{"unknown model", func() error { _, err := Load("builtin:nope", LoadOptions{}); return err }, "unknown builtin model"},
		{"unknown tokenizer", func() error { _, err := LoadTokenizer("builtin:nope"); return err }, "unknown builtin model"},
		{"bad KV type", func() error {
			_, err := Load("builtin:tiny-random", LoadOptions{KVType: "q4"})
			return err
		}, "KV type"},
		{"missing path", func() error { _, err := LoadTokenizer(filepath.Join(t.TempDir(), "none")); return err }, "no such file"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.load(); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err %v, want one mentioning %q", err, tc.want)
			}
		})
	}
}
