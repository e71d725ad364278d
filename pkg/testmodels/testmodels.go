// Package testmodels is how tests find the shared test models and fixtures
// (the repository's ../shared, or $LIGHTLLM_TEST_MODELS for the models) and
// what they do when those are missing: skip, unless $LIGHTLLM_REQUIRE_MODELS
// is set (scripts/test.sh sets it, so CI always runs the golden tests), in
// which case the test fails naming the missing path. Only tests import it.
package testmodels

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// RequireEnv, when set to anything but "" or "0", turns a missing model or
// fixture into a test failure.
const RequireEnv = "LIGHTLLM_REQUIRE_MODELS"

// ModelsEnv overrides the models directory (default <repo>/../shared/models).
const ModelsEnv = "LIGHTLLM_TEST_MODELS"

// Missing ends the test because what (a path, or a description naming one)
// is not there: t.Skip normally, t.Fatal when RequireEnv is set.
func Missing(t testing.TB, what string, err error) {
	t.Helper()
	msg := fmt.Sprintf("shared test data missing: %s", what)
	if err != nil {
		msg += fmt.Sprintf(" (%v)", err)
	}
	if v := os.Getenv(RequireEnv); v != "" && v != "0" {
		t.Fatalf("%s; %s is set, so this fails instead of skipping (provide ../shared or set %s)", msg, RequireEnv, ModelsEnv)
	}
	t.Skipf("%s; set %s or provide ../shared (CI sets %s=1 and fails here)", msg, ModelsEnv, RequireEnv)
}

// Root is the repository root: the nearest directory above the working
// directory (a package directory, under go test) holding go.mod.
func Root(t testing.TB) string {
	t.Helper()
	wd, err := os.Getwd()
	if err != nil {
		t.Fatalf("testmodels: %v", err)
	}
	for d := wd; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return d
		}
		if filepath.Dir(d) == d {
			t.Fatalf("testmodels: no go.mod above %s", wd)
		}
	}
}

// Dir is the models directory: $LIGHTLLM_TEST_MODELS, or <repo>/../shared/models.
// It does not check that anything is there; Path does.
func Dir(t testing.TB) string {
	t.Helper()
	if d := os.Getenv(ModelsEnv); d != "" {
		return d
	}
	return filepath.Join(Root(t), "..", "shared", "models")
}

// Path is Dir joined with rel, which must exist (else Missing).
func Path(t testing.TB, rel ...string) string {
	t.Helper()
	p := filepath.Join(append([]string{Dir(t)}, rel...)...)
	if _, err := os.Stat(p); err != nil {
		Missing(t, p, err)
	}
	return p
}

// Shared is <repo>/../shared joined with rel, which must exist (else Missing):
// fixtures other than models (tokenizers, chat templates).
func Shared(t testing.TB, rel ...string) string {
	t.Helper()
	p := filepath.Join(append([]string{Root(t), "..", "shared"}, rel...)...)
	if _, err := os.Stat(p); err != nil {
		Missing(t, p, err)
	}
	return p
}
