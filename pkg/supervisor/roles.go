package supervisor

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/lightllm-go/lightllm/pkg/config"
)

// LaunchStages is LightLLM's start order: each stage starts once every role
// of the previous stage is ready; the roles of one stage start together.
func LaunchStages() [][]string {
	return [][]string{
		{config.RoleMetric},
		{config.RoleRouter, config.RoleDetokenizer},
		{config.RoleInfer},
		{config.RoleAPIServer},
		{config.RoleHealth},
	}
}

// StopStages is the shutdown order: the HTTP intake first (it drains
// in-flight requests for --graceful_timeout while the rest still serves),
// then the health monitor (so it does not report the others going away),
// then the launch order reversed.
func StopStages() [][]string {
	return [][]string{
		{config.RoleAPIServer},
		{config.RoleHealth},
		{config.RoleInfer},
		{config.RoleRouter, config.RoleDetokenizer},
		{config.RoleMetric},
	}
}

// BinaryNames are the file names tried for a role, best first: installed
// binaries are lightllm-<role>; `go build -o DIR ./cmd/...` yields <role>.
func BinaryNames(role string) []string { return []string{"lightllm-" + role, role} }

// FindRoleBinary looks for a role's binary next to the running executable,
// then on $PATH.
func FindRoleBinary(role string) (string, error) {
	names := BinaryNames(role)
	var dir string
	if exe, err := os.Executable(); err == nil {
		if real, err := filepath.EvalSymlinks(exe); err == nil {
			exe = real
		}
		dir = filepath.Dir(exe)
		for _, n := range names {
			p := filepath.Join(dir, n)
			if isExecutable(p) {
				return p, nil
			}
		}
	}
	for _, n := range names {
		if p, err := exec.LookPath(n); err == nil {
			if abs, err := filepath.Abs(p); err == nil {
				return abs, nil
			}
		}
	}
	return "", fmt.Errorf("binary for role %s not found: looked for %s and %s in %s and on $PATH (build them with `go build -o DIR ./cmd/...`)",
		role, names[0], names[1], dir)
}

func isExecutable(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0
}
