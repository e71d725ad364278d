package apiserver_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lightllm-go/lightllm/pkg/apiserver"
	"github.com/lightllm-go/lightllm/pkg/apiserver/fakebackend"
	"github.com/lightllm-go/lightllm/pkg/grammar"
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
		qwen bool // the Qwen3 tokenizer and template, replies scripted by constraint
	}{
		"with chat template":    {apiserver.Options{ChatTemplate: chatML}, []string{"--require-chat"}, false},
		"without chat template": {apiserver.Options{}, nil, false},
		"tools and reasoning": {apiserver.Options{CheckConstraint: apiserver.GrammarCheck(grammar.NewCache(8), grammar.Options{})},
			[]string{"--require-chat", "--structured", "--reasoning"}, true},
	} {
		t.Run(name, func(t *testing.T) {
			var ts *testServer
			if tc.qwen {
				tok := qwen3Tokenizer(t)
				ts = startWith(t, tc.opts, fakebackend.New(tok, fakebackend.Options{StepDelay: time.Millisecond, Reply: scriptedReply}), tok)
			} else {
				ts = startServer(t, tc.opts, fakebackend.Options{StepDelay: time.Millisecond})
			}
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

// scriptedReply answers what the check's requests ask for, as a model that
// follows its constraint and thinks first would. The fake backend does not
// enforce constraints; that a real model's output is constrained is tested
// end to end (test/e2e).
func scriptedReply(g *apiserver.Group, seq int) string {
	switch c := g.Constraint; {
	case c == nil:
		return "<think>\nThe user wants a story.\n</think>\n\n" + fakebackend.DefaultReply(g, seq)
	case strings.Contains(c.Grammar.Text, "get_weather"):
		return `{"name": "get_weather", "arguments": {"city": "Paris", "unit": "celsius"}}` + "\n</tool_call>"
	default:
		return `{"name": "Ann", "age": 30, "tags": ["a", "c"]}`
	}
}
