package apiserver_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/lightllm-go/lightllm/pkg/apiserver"
	"github.com/lightllm-go/lightllm/pkg/apiserver/fakebackend"
)

// TestOpenAINodeClient runs scripts/openai-client-check.mjs (the official
// OpenAI Node client, unchanged) against the server over the fake backend.
// It needs node and the client installed outside the repository:
// OPENAI_NODE_DIR=/dir/with/node_modules/openai, or where
// scripts/install-test-deps.sh puts it (~/.cache/lightllm-test/openai).
func TestOpenAINodeClient(t *testing.T) {
	dir := os.Getenv("OPENAI_NODE_DIR")
	if home, err := os.UserHomeDir(); dir == "" && err == nil {
		dir = filepath.Join(home, ".cache", "lightllm-test", "openai")
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "openai", "package.json")); err != nil {
		t.Skipf("the OpenAI Node client is not installed (run scripts/install-test-deps.sh or set OPENAI_NODE_DIR): %v", err)
	}
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node not found")
	}
	script, err := filepath.Abs(filepath.Join("..", "..", "scripts", "openai-client-check.mjs"))
	if err != nil {
		t.Fatal(err)
	}
	for name, tc := range map[string]struct {
		opts apiserver.Options
		args []string
	}{
		"with chat template":    {apiserver.Options{ChatTemplate: chatML}, []string{"--require-chat"}},
		"without chat template": {apiserver.Options{}, nil},
	} {
		t.Run(name, func(t *testing.T) {
			ts := startServer(t, tc.opts, fakebackend.Options{StepDelay: time.Millisecond})
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, node, append([]string{script, "--base-url", ts.url + "/v1"}, tc.args...)...)
			cmd.Env = append(os.Environ(), "OPENAI_NODE_DIR="+dir)
			out, err := cmd.CombinedOutput()
			t.Logf("%s", out)
			if err != nil {
				t.Fatalf("openai-client-check: %v", err)
			}
		})
	}
}
