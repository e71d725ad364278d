package chattmpl

import (
	"encoding/json"
	"fmt"
	"github.com/lightllm-go/lightllm/pkg/testmodels"
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

// sharedDir finds ../shared relative to the repository root.
func readFile(path string) ([]byte, error) { return os.ReadFile(path) }

func sharedDir(t *testing.T) string {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	root := filepath.Join(filepath.Dir(file), "..", "..")
	return filepath.Join(root, "..", "shared")
}

type fixtureCase struct {
	Model string          `json:"model"`
	Name  string          `json:"name"`
	Ctx   json.RawMessage `json:"ctx"`
	Want  string          `json:"want"`
}

// TestFixtureCases renders every case of the shared fixture (Python jinja2
// 3.1 output with HF's settings) and demands byte equality.
func TestFixtureCases(t *testing.T) {
	path := filepath.Join(sharedDir(t), "fixtures", "chat_templates", "cases.json")
	data, err := os.ReadFile(path)
	if err != nil {
		testmodels.Missing(t, fmt.Sprintf("chat template fixtures not available (%v); they live in ../shared", err), nil)
	}
	var fx struct {
		Templates map[string]string `json:"templates"`
		Cases     []fixtureCase     `json:"cases"`
	}
	if err := json.Unmarshal(data, &fx); err != nil {
		t.Fatalf("parse %s: %v", path, err)
	}
	compiled := map[string]*Template{}
	for name, src := range fx.Templates {
		tmpl, err := New(src)
		if err != nil {
			t.Fatalf("compile %s: %v", name, err)
		}
		compiled[name] = tmpl
	}
	pass := 0
	for _, c := range fx.Cases {
		t.Run(c.Model+"/"+c.Name, func(t *testing.T) {
			tmpl := compiled[c.Model]
			if tmpl == nil {
				t.Fatalf("no template %q", c.Model)
			}
			got, err := tmpl.RenderJSON(c.Ctx)
			if err != nil {
				t.Fatalf("render: %v", err)
			}
			if got != c.Want {
				t.Fatalf("mismatch\n got: %q\nwant: %q", got, c.Want)
			}
			pass++
		})
	}
	t.Logf("%d/%d chat template cases byte-exact", pass, len(fx.Cases))
	if len(fx.Cases) == 0 {
		t.Fatal("fixture has no cases")
	}
}
