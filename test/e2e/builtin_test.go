package e2e

import (
	"context"
	"encoding/json"
	"net/http"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// TestBuiltinModel is issue 12's smoke-test model: `--model_dir
// builtin:tiny-random` needs no file. `lightllm run` generates with it, and
// a launched server (all six roles build the model or its vocabulary in
// memory) serves it: greedy text is deterministic (and meaningless), and
// /v1/models names it.
func TestBuiltinModel(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end test: builds and launches the server")
	}
	bin := buildBinaries(t)
	const spec = "builtin:tiny-random"

	t.Run("run", func(t *testing.T) {
		args := []string{"run", "--model_dir", spec, "--prompt", "hello world", "--max_new_tokens", "16", "--ignore_eos"}
		var outs []string
		for range 2 {
			out, err := exec.Command(filepath.Join(bin, "lightllm"), args...).Output()
			if err != nil {
				t.Fatalf("lightllm %v: %v", args, err)
			}
			outs = append(outs, string(out))
		}
		if outs[0] == "" || outs[0] != outs[1] {
			t.Errorf("lightllm run twice: %q and %q; want the same non-empty text", outs[0], outs[1])
		}
	})

	t.Run("launch", func(t *testing.T) {
		s := launch(t, bin, spec)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		p := map[string]any{"max_new_tokens": 16, "ignore_eos": true}
		first := s.postGenerate(ctx, "hello world", p)
		if first.err != nil || first.status != http.StatusOK || first.count != 16 || first.reason != "length" {
			t.Fatalf("/generate: status %d, %s, %d tokens, %v: %s", first.status, first.reason, first.count, first.err, describe(first.text))
		}
		if again := s.postGenerate(ctx, "hello world", p); again.text != first.text {
			t.Errorf("greedy text differs between two runs: %s vs %s", describe(first.text), describe(again.text))
		}
		text, reason, err := s.stream(ctx, "hello world", p, nil)
		if err != nil || reason != "length" || text != first.text {
			t.Errorf("/generate_stream: %s, %v, %s; want %s", reason, err, describe(text), describe(first.text))
		}
		resp, err := http.Get(s.base + "/v1/models")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var models struct {
			Data []struct {
				ID string `json:"id"`
			} `json:"data"`
		}
		if err := json.NewDecoder(resp.Body).Decode(&models); err != nil || len(models.Data) != 1 || models.Data[0].ID != spec {
			t.Errorf("/v1/models: %+v, %v; want the one model %s", models, err, spec)
		}
	})
}
