package testmodels

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
)

// recorder is a testing.TB that records how a test would have ended.
type recorder struct {
	testing.TB
	fatal, skip string
}

func (r *recorder) Helper()                        {}
func (r *recorder) Fatalf(format string, a ...any) { r.fatal = fmtS(format, a...) }
func (r *recorder) Skipf(format string, a ...any)  { r.skip = fmtS(format, a...) }

func fmtS(format string, a ...any) string { return strings.TrimSpace(fmt.Sprintf(format, a...)) }

func TestMissing(t *testing.T) {
	for _, tc := range []struct {
		name, env string
		fails     bool
	}{
		{"unset skips", "", false},
		{"0 skips", "0", false},
		{"1 fails", "1", true},
		{"yes fails", "yes", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv(RequireEnv, tc.env)
			r := &recorder{}
			Missing(r, "/nowhere/stories260K", errors.New("no such file"))
			got := r.skip
			if tc.fails {
				got = r.fatal
			}
			if got == "" || (r.fatal != "") != tc.fails || !strings.Contains(got, "/nowhere/stories260K") {
				t.Fatalf("fatal %q skip %q: want the test to %s, naming the path", r.fatal, r.skip,
					map[bool]string{true: "fail", false: "skip"}[tc.fails])
			}
		})
	}
}

func TestPath(t *testing.T) {
	dir := t.TempDir()
	t.Setenv(ModelsEnv, dir)
	t.Setenv(RequireEnv, "1")
	if got := Path(t, "."); got != dir {
		t.Errorf("Path(.) = %s, want %s", got, dir)
	}
	r := &recorder{}
	Path(r, "stories260K", "hf")
	if want := filepath.Join(dir, "stories260K", "hf"); !strings.Contains(r.fatal, want) {
		t.Errorf("missing model: %q, want a failure naming %s", r.fatal, want)
	}
}
