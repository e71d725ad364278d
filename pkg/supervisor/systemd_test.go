package supervisor

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestSystemdUnitsFollowLaunchOrder keeps scripts/systemd in step with
// LaunchStages: each role's unit is ordered After= (and Wants=) every role of
// the previous stage, and runs the role binary on the instance's config.
func TestSystemdUnitsFollowLaunchOrder(t *testing.T) {
	dir := filepath.Join("..", "..", "scripts", "systemd")
	stages := LaunchStages()
	for i, stage := range stages {
		for _, role := range stage {
			b, err := os.ReadFile(filepath.Join(dir, "lightllm-"+role+"@.service"))
			if err != nil {
				t.Fatalf("unit for %s: %v", role, err)
			}
			keys := map[string][]string{}
			for _, line := range strings.Split(string(b), "\n") {
				if k, v, ok := strings.Cut(line, "="); ok && !strings.HasPrefix(line, "#") {
					keys[k] = append(keys[k], strings.Fields(v)...)
				}
			}
			if !slices.Contains(keys["Requires"], "lightllm-instance@%i.service") || !slices.Contains(keys["After"], "lightllm-instance@%i.service") {
				t.Errorf("%s: not ordered after the instance unit", role)
			}
			if i > 0 {
				for _, prev := range stages[i-1] {
					dep := "lightllm-" + prev + "@%i.service"
					if !slices.Contains(keys["After"], dep) || !slices.Contains(keys["Wants"], dep) {
						t.Errorf("%s: missing After=/Wants= %s", role, dep)
					}
				}
			}
			want := "/usr/local/bin/lightllm-" + role + " --config /run/lightllm/%i/config.json"
			if got := strings.Join(keys["ExecStart"], " "); got != want {
				t.Errorf("%s: ExecStart=%s, want %s", role, got, want)
			}
			if got := keys["Type"]; len(got) != 1 || got[0] != "notify" {
				t.Errorf("%s: Type=%v", role, got)
			}
		}
	}
}
