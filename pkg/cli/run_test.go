package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"github.com/lightllm-go/lightllm/pkg/testmodels"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// storiesDir finds ../shared/models/stories260K from the repository root.
func storiesDir(t *testing.T) string {
	t.Helper()
	d := os.Getenv("LIGHTLLM_TEST_MODELS")
	if d == "" {
		d = filepath.Join("..", "..", "..", "shared", "models")
	}
	d = filepath.Join(d, "stories260K")
	if _, err := os.Stat(filepath.Join(d, "golden_greedy_llamacpp.json")); err != nil {
		testmodels.Missing(t, fmt.Sprintf("stories260K test model not found (set LIGHTLLM_TEST_MODELS): %v", err), nil)
	}
	return d
}

func execute(args ...string) (string, error) {
	root := NewRoot()
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&out)
	root.SetArgs(args)
	err := root.Execute()
	return out.String(), err
}

// TestRunGolden: `lightllm run` from BOS, stopping at id 1 as the model ends
// its story, prints exactly llama.cpp's text (golden text_until_stop), from
// every format.
func TestRunGolden(t *testing.T) {
	dir := storiesDir(t)
	b, err := os.ReadFile(filepath.Join(dir, "golden_greedy_llamacpp.json"))
	if err != nil {
		t.Fatal(err)
	}
	var g struct {
		Text string `json:"text_until_stop"`
	}
	if err := json.Unmarshal(b, &g); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"stories260K-f32.gguf", "tinyllamas-stories-260k-f32.ggufv1.gguf", "hf"} {
		out, err := execute("run", "--model_dir", filepath.Join(dir, name), "--stop_token_ids", "1", "--threads", "1")
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if out != g.Text {
			t.Fatalf("%s: printed\n%q\nwant\n%q", name, out, g.Text)
		}
	}
	// A prompt, and seeded sampling being reproducible.
	gguf := filepath.Join(dir, "stories260K-f32.gguf")
	out, err := execute("run", "--model_dir", gguf, "--prompt", "Once upon a time", "--max_new_tokens", "11")
	if err != nil || out != ", there was a little girl named Lily." {
		t.Fatalf("prompt: %q %v", out, err)
	}
	args := []string{"run", "--model_dir", gguf, "--prompt", "Once upon a time", "--max_new_tokens", "30",
		"--temperature", "0.9", "--top_k", "20", "--top_p", "0.95", "--seed", "7"}
	a, err1 := execute(args...)
	b2, err2 := execute(args...)
	if err1 != nil || err2 != nil || a != b2 || a == "" {
		t.Fatalf("seeded runs: %q (%v) vs %q (%v)", a, err1, b2, err2)
	}
}

func TestRunErrors(t *testing.T) {
	dir := storiesDir(t)
	hf := filepath.Join(dir, "hf")
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"run"}, "--model_dir is required"},
		{[]string{"run", "--model_dir", filepath.Join(dir, "missing.gguf")}, "missing.gguf"},
		{[]string{"run", "--model_dir", hf, "--stop_token_ids", "1,x"}, `"x" is not a token id`},
		{[]string{"run", "--model_dir", hf, "--top_p", "2"}, "top_p"},
		{[]string{"run", "--model_dir", hf, "--temperature", "-1"}, "temperature"},
		{[]string{"run", "--model_dir", hf, "--stop_token_ids", "9999"}, "stop_token_ids"},
		{[]string{"run", "--model_dir", hf, "--chat", "--prompt", "hi"}, "no chat template"},
		{[]string{"bench-engine", "--model_dir", hf, "--gen_tokens", "0"}, "gen_tokens"},
	}
	for _, c := range cases {
		_, err := execute(c.args...)
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%v: error %v, want one line containing %q", c.args, err, c.want)
		}
	}
}

func TestBenchEngineJSON(t *testing.T) {
	dir := storiesDir(t)
	out, err := execute("bench-engine", "--model_dir", filepath.Join(dir, "stories260K-f32.gguf"), "--threads", "1",
		"--prompt_tokens", "64", "--gen_tokens", "8", "--sequences", "1,4", "--json")
	if err != nil {
		t.Fatal(err)
	}
	var res map[string]any
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("not one JSON object: %q: %v", out, err)
	}
	for _, k := range []string{"prefill_tok_s", "decode_tok_s_x1", "decode_tok_s_x4"} {
		if v, ok := res[k].(float64); !ok || v <= 0 {
			t.Errorf("%s = %v", k, res[k])
		}
	}
}

// TestHubIDFromCache: run and tokenize resolve a Hub id from the HF cache
// as launch does, offline (HF_HUB_OFFLINE=1), instead of failing with
// "stat org/name".
func TestHubIDFromCache(t *testing.T) {
	src, err := filepath.Abs(filepath.Join(storiesDir(t), "hf"))
	if err != nil {
		t.Fatal(err)
	}
	cache := t.TempDir()
	snap := filepath.Join(cache, "models--test-org--stories", "snapshots", "0123456789abcdef0123456789abcdef01234567")
	if err := os.MkdirAll(snap, 0o755); err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if err := os.Symlink(filepath.Join(src, e.Name()), filepath.Join(snap, e.Name())); err != nil {
			t.Fatal(err)
		}
	}
	refs := filepath.Join(cache, "models--test-org--stories", "refs")
	if err := os.MkdirAll(refs, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(refs, "main"), []byte(filepath.Base(snap)), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("HF_HUB_CACHE", cache)
	t.Setenv("HF_HUB_OFFLINE", "1")
	want, err := execute("run", "--model_dir", src, "--prompt", "Once upon a time", "--max_new_tokens", "8")
	if err != nil {
		t.Fatalf("run from the directory: %v\n%s", err, want)
	}
	got, err := execute("run", "--model_dir", "test-org/stories", "--prompt", "Once upon a time", "--max_new_tokens", "8")
	if err != nil || !strings.HasSuffix(got, want) {
		t.Fatalf("run from the Hub id: %v\n%q, want %q", err, got, want)
	}
	root := NewRoot()
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&out)
	root.SetIn(strings.NewReader(`["Once upon a time"]`))
	root.SetArgs([]string{"tokenize", "--model_dir", "test-org/stories"})
	if err := root.Execute(); err != nil || !strings.HasPrefix(strings.TrimSpace(out.String()), "[[") {
		t.Fatalf("tokenize from the Hub id: %v\n%s", err, out.String())
	}
	if out, err := execute("run", "--model_dir", "test-org/missing", "--prompt", "x"); err == nil {
		t.Fatalf("a model in no cache ran offline: %s", out)
	}
}

// TestBenchFailsWhenRequestsFail: `lightllm bench` exits non-zero when most
// requests failed, so that CI sees it.
func TestBenchFailsWhenRequestsFail(t *testing.T) {
	tok := filepath.Join(storiesDir(t), "hf")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/models" {
			_, _ = w.Write([]byte(`{"object":"list","data":[{"id":"m","object":"model","max_model_len":4096}]}`))
			return
		}
		http.Error(w, `{"error":{"message":"boom"}}`, http.StatusInternalServerError)
	}))
	defer srv.Close()
	out, err := execute("bench", "--url", srv.URL, "--tokenizer", tok, "--num-prompts", "4", "--input-len", "8", "--output-len", "4")
	if err == nil || !strings.Contains(err.Error(), "4 of 4 requests failed") {
		t.Fatalf("bench with every request failing: %v\n%s", err, out)
	}
}
