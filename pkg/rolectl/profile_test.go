package rolectl

import (
	"os"
	"path/filepath"
	"testing"
)

// TestStartCPUProfile: no directory, no profile; a directory gets one
// non-empty profile named after the instance, role and pid; a directory
// that does not exist is an error, not a silently missing profile.
func TestStartCPUProfile(t *testing.T) {
	tmp := t.TempDir()
	for _, c := range []struct {
		name  string
		dir   string
		files int
		fail  bool
	}{
		{"off", "", 0, false},
		{"on", tmp, 1, false},
		{"missing dir", filepath.Join(tmp, "absent"), 0, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			stop, err := startCPUProfile(c.dir, "infer", "inst")
			if c.fail {
				if err == nil {
					stop()
					t.Fatal("no error for a missing directory")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			stop()
			if c.dir == "" {
				return
			}
			got, _ := filepath.Glob(filepath.Join(c.dir, "inst-infer-*.pprof"))
			if len(got) != c.files {
				t.Fatalf("profiles %v, want %d", got, c.files)
			}
			if st, err := os.Stat(got[0]); err != nil || st.Size() == 0 {
				t.Fatalf("profile %s empty or unreadable: %v", got[0], err)
			}
		})
	}
}
