package e2e

import (
	"context"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// The official OpenAI Node client is not a dependency of the repository:
// scripts/install-test-deps.sh installs it into a cache directory, and the
// tests find it through OPENAI_NODE_DIR (a directory whose node_modules
// holds openai), or at the install script's default place.
const envOpenAINodeDir = "OPENAI_NODE_DIR"

// openAINodeDir returns the client's directory or skips.
func openAINodeDir(t *testing.T) string {
	t.Helper()
	dir := os.Getenv(envOpenAINodeDir)
	if dir == "" {
		if home, err := os.UserHomeDir(); err == nil {
			dir = filepath.Join(home, ".cache", "lightllm-test", "openai")
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "openai", "package.json")); err != nil {
		t.Skipf("the official OpenAI Node client is not installed (run scripts/install-test-deps.sh, or set %s to a directory where `npm install openai` ran): %v",
			envOpenAINodeDir, err)
	}
	return dir
}

// runOpenAIClientCheck runs scripts/openai-client-check.mjs against the
// server at base; extra are the script's flags.
func runOpenAIClientCheck(t *testing.T, base string, extra ...string) {
	t.Helper()
	runNodeCheck(t, "openai-client-check.mjs", base, extra...)
}

// runNodeCheck runs scripts/NAME against the server at base with the
// official OpenAI client; extra are the script's flags.
func runNodeCheck(t *testing.T, name, base string, extra ...string) {
	t.Helper()
	dir := openAINodeDir(t)
	runNodeScript(t, name, []string{envOpenAINodeDir + "=" + dir}, append([]string{"--base-url", base + "/v1"}, extra...)...)
}

// runNodeScript runs scripts/NAME with node, env added to the environment.
func runNodeScript(t *testing.T, name string, env []string, args ...string) {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node not found (scripts/install-test-deps.sh installs it)")
	}
	script := filepath.Join(repoRoot(t), "scripts", name)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, append([]string{script}, args...)...)
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s %v: %v\n%s", name, args, err, out)
	}
	t.Logf("%s %v:\n%s", name, args, out)
}

// apiDial opens a raw TCP connection to the server at base.
func apiDial(t *testing.T, base string) net.Conn {
	t.Helper()
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := net.DialTimeout("tcp", u.Host, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	_ = conn.SetDeadline(time.Now().Add(30 * time.Second))
	return conn
}
