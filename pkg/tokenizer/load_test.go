package tokenizer

import (
	"bytes"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
)

func TestLoadAndEncodeJSON(t *testing.T) {
	dir := stories260K(t)
	for _, path := range []string{
		filepath.Join(dir, "hf"),
		filepath.Join(dir, "hf", "tokenizer.json"),
		filepath.Join(dir, "stories260K-f32.gguf"),
		filepath.Join(dir, "tinyllamas-stories-260k-f32.ggufv1.gguf"),
	} {
		tk, err := Load(path)
		if err != nil {
			t.Fatalf("Load(%s): %v", path, err)
		}
		var out bytes.Buffer
		if err := EncodeJSON(tk, strings.NewReader(`["Once upon a time", ""]`), &out, false); err != nil {
			t.Fatal(err)
		}
		if got := strings.TrimSpace(out.String()); got != `[[403,407,261,378],[]]` {
			t.Errorf("%s: %s", path, got)
		}
	}
	tk, err := Load(filepath.Join(dir, "hf"))
	if err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{`{"a": 1}`, `[1, 2]`, ``, `["unterminated`} {
		if err := EncodeJSON(tk, strings.NewReader(bad), &bytes.Buffer{}, false); err == nil {
			t.Errorf("EncodeJSON(%q): no error", bad)
		}
	}
	for _, bad := range []string{filepath.Join(dir, "missing"), filepath.Join(dir, "golden_greedy_llamacpp.json"),
		filepath.Join(dir, "stories260K.bin")} {
		if _, err := Load(bad); err == nil {
			t.Errorf("Load(%s): no error", bad)
		}
	}
}

// TestConcurrentEncode checks a shared tokenizer gives every goroutine the
// ids a lone caller gets (run under -race to check the caches and pools).
func TestConcurrentEncode(t *testing.T) {
	texts := []string{"Hello, world!", "你好，世界！", "emoji 😀😃😄", "I'm here  \n\n  ok", "<|im_start|>user\nhi<|im_end|>"}
	for _, name := range []string{"qwen3", "mistral"} {
		tk := loadFixture(t, name)
		want := make([][]int32, len(texts))
		for i, s := range texts {
			want[i] = tk.Encode(s, false)
		}
		var wg sync.WaitGroup
		errs := make(chan string, 8)
		for g := range 8 {
			wg.Go(func() {
				for k := range 50 {
					i := (g + k) % len(texts)
					if got := tk.Encode(texts[i], false); !slices.Equal(got, want[i]) {
						errs <- name + ": " + texts[i]
						return
					}
				}
			})
		}
		wg.Wait()
		close(errs)
		for e := range errs {
			t.Errorf("concurrent encode differs: %s", e)
		}
	}
}
