package tokenizer

import (
	"encoding/json"
	"fmt"
	"github.com/lightllm-go/lightllm/pkg/testmodels"
	"os"
	"path/filepath"
	"sync"
	"testing"
)

// fixtureCache loads each fixture tokenizer once per test binary: the
// large vocabularies take a noticeable fraction of a second to parse.
var fixtureCache sync.Map // name → func() (*Tokenizer, error)

// loadFixture returns fixtures/tokenizers/<name> or skips when absent.
func loadFixture(t testing.TB, name string) *Tokenizer {
	t.Helper()
	dir := filepath.Join(sharedDir(t), "fixtures", "tokenizers", name)
	if _, err := os.Stat(dir); err != nil {
		testmodels.Missing(t, fmt.Sprintf("tokenizer fixture %s: %v", dir, err), nil)
	}
	load, _ := fixtureCache.LoadOrStore(name, sync.OnceValues(func() (*Tokenizer, error) { return LoadDir(dir) }))
	tk, err := load.(func() (*Tokenizer, error))()
	if err != nil {
		t.Fatal(err)
	}
	return tk
}

// sharedDir finds ../shared next to the repository root (the directory
// holding go.mod), or skips the test.
func sharedDir(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			break
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			testmodels.Missing(t, "repository root not found", nil)
		}
		dir = parent
	}
	shared := filepath.Join(dir, "..", "shared")
	if _, err := os.Stat(shared); err != nil {
		testmodels.Missing(t, fmt.Sprintf("shared fixtures not found at %s: %v", shared, err), nil)
	}
	return shared
}

// modelsDir is LIGHTLLM_TEST_MODELS or ../shared/models.
func modelsDir(t testing.TB) string {
	t.Helper()
	if d := os.Getenv("LIGHTLLM_TEST_MODELS"); d != "" {
		return d
	}
	return filepath.Join(sharedDir(t), "models")
}

// stories260K returns the stories260K directory or skips.
func stories260K(t testing.TB) string {
	t.Helper()
	d := filepath.Join(modelsDir(t), "stories260K")
	if _, err := os.Stat(d); err != nil {
		testmodels.Missing(t, fmt.Sprintf("stories260K not found at %s: %v", d, err), nil)
	}
	return d
}

func readJSON(t testing.TB, path string, v any) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		testmodels.Missing(t, fmt.Sprintf("fixture %s: %v", path, err), nil)
	}
	if err := json.Unmarshal(data, v); err != nil {
		t.Fatalf("parse %s: %v", path, err)
	}
}
