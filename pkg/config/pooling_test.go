package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lightllm-go/lightllm/pkg/gguf"
)

// writePoolingHF writes a minimal HF directory: config.json, and modules.json
// plus 1_Pooling/config.json when modules is not "".
func writePoolingHF(t *testing.T, modules, pooling string) string {
	t.Helper()
	dir := t.TempDir()
	files := map[string]string{"config.json": `{"model_type":"qwen3","hidden_size":1024,"num_hidden_layers":2,"num_attention_heads":8}`}
	if modules != "" {
		files["modules.json"] = modules
	}
	if pooling != "" {
		files[filepath.Join("1_Pooling", "config.json")] = pooling
	}
	for name, body := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// writeGGUF writes a GGUF header with the given pooling_type (< 0: none).
func writeGGUF(t *testing.T, pooling int) string {
	t.Helper()
	w := gguf.NewWriter()
	w.Set("general.architecture", "qwen3")
	w.Set("qwen3.embedding_length", uint32(1024))
	if pooling >= 0 {
		w.Set("qwen3.pooling_type", uint32(pooling))
	}
	p := filepath.Join(t.TempDir(), "m.gguf")
	if err := w.WriteFile(p); err != nil {
		t.Fatal(err)
	}
	return p
}

// Qwen3-Embedding's sentence-transformers files, as published.
const (
	stModules = `[{"idx":0,"name":"0","path":"","type":"sentence_transformers.models.Transformer"},
	{"idx":1,"name":"1","path":"1_Pooling","type":"sentence_transformers.models.Pooling"},
	{"idx":2,"name":"2","path":"2_Normalize","type":"sentence_transformers.models.Normalize"}]`
	stLastToken = `{"word_embedding_dimension":1024,"pooling_mode_cls_token":false,"pooling_mode_mean_tokens":false,
	"pooling_mode_max_tokens":false,"pooling_mode_mean_sqrt_len_tokens":false,"pooling_mode_weightedmean_tokens":false,
	"pooling_mode_lasttoken":true,"include_prompt":true}`
)

func TestEmbeddingSpec(t *testing.T) {
	for _, tc := range []struct {
		name      string
		path      func(t *testing.T) string
		flag      string
		pooling   string
		normalize bool
		source    string // substring
		err       string // substring; "" = no error
	}{
		{"Qwen3-Embedding: last token, normalised", func(t *testing.T) string { return writePoolingHF(t, stModules, stLastToken) },
			PoolingAuto, PoolingLast, true, "modules.json", ""},
		{"mean without Normalize", func(t *testing.T) string {
			return writePoolingHF(t, `[{"path":"1_Pooling","type":"sentence_transformers.models.Pooling"}]`, `{"pooling_mode_mean_tokens":true}`)
		}, PoolingAuto, PoolingMean, false, "modules.json", ""},
		{"cls", func(t *testing.T) string {
			return writePoolingHF(t, `[{"path":"1_Pooling","type":"sentence_transformers.models.Pooling"}]`, `{"pooling_mode_cls_token":true}`)
		}, PoolingAuto, PoolingCLS, false, "modules.json", ""},
		{"max pooling refused by name", func(t *testing.T) string {
			return writePoolingHF(t, `[{"path":"1_Pooling","type":"sentence_transformers.models.Pooling"}]`, `{"pooling_mode_max_tokens":true}`)
		}, PoolingAuto, "", false, "", "pooling_mode_max_tokens is not supported"},
		{"two modes", func(t *testing.T) string {
			return writePoolingHF(t, `[{"path":"1_Pooling","type":"sentence_transformers.models.Pooling"}]`, `{"pooling_mode_cls_token":true,"pooling_mode_mean_tokens":true}`)
		}, PoolingAuto, "", false, "", "want exactly one"},
		{"pooling path escapes", func(t *testing.T) string {
			return writePoolingHF(t, `[{"path":"../x","type":"sentence_transformers.models.Pooling"}]`, "")
		}, PoolingAuto, "", false, "", "outside the model directory"},
		{"a generation model says nothing", func(t *testing.T) string { return writePoolingHF(t, "", "") },
			PoolingAuto, PoolingNone, false, "no sentence-transformers modules.json", ""},
		{"--pooling serves it, normalised", func(t *testing.T) string { return writePoolingHF(t, "", "") },
			PoolingMean, PoolingMean, true, "--pooling", ""},
		{"--pooling overrides the model's, keeps its normalisation", func(t *testing.T) string {
			return writePoolingHF(t, `[{"path":"1_Pooling","type":"sentence_transformers.models.Pooling"}]`, `{"pooling_mode_mean_tokens":true}`)
		}, PoolingLast, PoolingLast, false, "--pooling", ""},
		{"bad --pooling", func(t *testing.T) string { return writePoolingHF(t, "", "") }, "max", "", false, "", "want auto, last, mean or cls"},
		{"gguf last", func(t *testing.T) string { return writeGGUF(t, 3) }, PoolingAuto, PoolingLast, true, "qwen3.pooling_type", ""},
		{"gguf mean", func(t *testing.T) string { return writeGGUF(t, 1) }, PoolingAuto, PoolingMean, true, "gguf", ""},
		{"gguf cls", func(t *testing.T) string { return writeGGUF(t, 2) }, PoolingAuto, PoolingCLS, true, "gguf", ""},
		{"gguf none", func(t *testing.T) string { return writeGGUF(t, 0) }, PoolingAuto, PoolingNone, false, "is 0", ""},
		{"gguf without the key", func(t *testing.T) string { return writeGGUF(t, -1) }, PoolingAuto, PoolingNone, false, "has no qwen3.pooling_type", ""},
		{"gguf rank refused", func(t *testing.T) string { return writeGGUF(t, 4) }, PoolingAuto, "", false, "", "rank"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := DefaultConfig()
			c.ModelDir, c.Pooling = tc.path(t), tc.flag
			e, err := c.EmbeddingSpec()
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if e.Pooling != tc.pooling || e.Normalize != tc.normalize || !strings.Contains(e.Source, tc.source) || e.Dim != 1024 {
				t.Fatalf("%+v, want pooling %q normalize %v source ~%q dim 1024", e, tc.pooling, tc.normalize, tc.source)
			}
		})
	}
}
