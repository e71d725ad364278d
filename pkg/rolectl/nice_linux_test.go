//go:build linux

package rolectl

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"

	"golang.org/x/sys/unix"
)

// TestLowerPriority runs in a child process (it renices the whole process):
// every thread ends at the wanted nice value, or keeps a higher one it
// already had.
func TestLowerPriority(t *testing.T) {
	if spec := os.Getenv("ROLECTL_NICE_CHILD"); spec != "" {
		var start, want int
		fmt.Sscanf(spec, "%d %d", &start, &want)
		// Setting a lower nice value than the test runs at needs
		// privilege: without it the child starts where it was launched.
		for _, tid := range threads(t) {
			_ = unix.Setpriority(unix.PRIO_PROCESS, tid, start)
		}
		cur, err := selfNice()
		if err != nil {
			t.Fatal(err)
		}
		fmt.Printf("START %d\n", cur)
		if err := lowerPriority(want); err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, tid := range threads(t) {
			b, err := os.ReadFile(fmt.Sprintf("/proc/self/task/%d/stat", tid))
			if err != nil {
				continue // exited
			}
			f := strings.Fields(string(b)[strings.LastIndexByte(string(b), ')')+1:])
			out = append(out, f[16])
		}
		fmt.Printf("NICES %s\n", strings.Join(out, " "))
		return
	}
	for _, tc := range []struct {
		name        string
		start, want int
	}{
		{"lowers every thread", 0, 7},
		{"keeps a lower priority", 12, 5},
		{"same value", 5, 5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd := exec.Command(os.Args[0], "-test.run=^TestLowerPriority$")
			cmd.Env = append(os.Environ(), fmt.Sprintf("ROLECTL_NICE_CHILD=%d %d", tc.start, tc.want))
			b, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("child: %v\n%s", err, b)
			}
			var line string
			start := -100
			for _, l := range strings.Split(string(b), "\n") {
				if v, ok := strings.CutPrefix(l, "NICES "); ok {
					line = v
				}
				if v, ok := strings.CutPrefix(l, "START "); ok {
					start, _ = strconv.Atoi(v)
				}
			}
			if start == -100 {
				t.Fatalf("child printed no START line\n%s", b)
			}
			expect := strconv.Itoa(max(start, tc.want))
			vals := strings.Fields(line)
			if len(vals) < 2 {
				t.Fatalf("want the nice value of several threads, got %q\n%s", line, b)
			}
			for _, v := range vals {
				if v != expect {
					t.Fatalf("thread nice values %q (child started at %d), want all %s", line, start, expect)
				}
			}
		})
	}
}

func threads(t *testing.T) []int {
	es, err := os.ReadDir("/proc/self/task")
	if err != nil {
		t.Fatal(err)
	}
	var ids []int
	for _, e := range es {
		if id, err := strconv.Atoi(e.Name()); err == nil {
			ids = append(ids, id)
		}
	}
	return ids
}

// TestShortenSlice runs in a child process (it changes every thread): each
// thread, including ones the runtime starts afterwards, ends with the slice
// and keeps its nice value.
func TestShortenSlice(t *testing.T) {
	if os.Getenv("ROLECTL_SLICE_CHILD") != "" {
		if err := lowerPriority(3); err != nil {
			t.Fatal(err)
		}
		want, err := selfNice()
		if err != nil {
			t.Fatal(err)
		}
		fmt.Printf("NICE %d\n", want)
		if err := shortenSlice(250); err != nil {
			t.Fatal(err)
		}
		// Goroutines that hold their threads while blocked make the
		// runtime start new ones, cloned from threads already changed.
		block := make(chan struct{})
		var started sync.WaitGroup
		for range 4 {
			started.Add(1)
			go func() {
				runtime.LockOSThread()
				started.Done()
				<-block
			}()
		}
		started.Wait()
		for _, tid := range threads(t) {
			a, err := unix.SchedGetAttr(tid, 0)
			if err != nil {
				continue // exited
			}
			fmt.Printf("THREAD %d %d\n", a.Nice, a.Runtime)
		}
		close(block)
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestShortenSlice$")
	cmd.Env = append(os.Environ(), "ROLECTL_SLICE_CHILD=1")
	b, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child: %v\n%s", err, b)
	}
	type thread struct {
		nice  int
		slice uint64
	}
	var got []thread
	custom, want := false, -100
	for _, l := range strings.Split(string(b), "\n") {
		fmt.Sscanf(l, "NICE %d", &want)
		var th thread
		if _, err := fmt.Sscanf(l, "THREAD %d %d", &th.nice, &th.slice); err == nil {
			got = append(got, th)
			custom = custom || th.slice != 0
		}
	}
	if len(got) < 6 {
		t.Fatalf("%d threads reported, want the runtime's and the 4 new ones\n%s", len(got), b)
	}
	if !custom {
		t.Skip("this kernel keeps no custom EEVDF slice (before 6.12): nothing to check")
	}
	for _, th := range got {
		if th.nice != want || want < 3 || th.slice != 250_000 {
			t.Errorf("threads (nice, slice ns) %v, want every one nice %d (>= 3) and 250000 ns", got, want)
			break
		}
	}
}
