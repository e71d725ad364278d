package hub

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"
)

// fakeClock is a settable clock for the Reporter.
type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time          { return c.t }
func (c *fakeClock) advance(d time.Duration) { c.t = c.t.Add(d) }

func TestReporterLines(t *testing.T) {
	clk := &fakeClock{t: time.Unix(1000, 0)}
	var out bytes.Buffer
	r := NewReporter(&out, ReporterOptions{Mode: ProgressLines, Interval: 5 * time.Second, Now: clk.now})
	task := r.Start("download org/m", 10_000_000)
	task.Skip(2_000_000) // resumed bytes do not count toward the rate
	clk.advance(2 * time.Second)
	task.Add(2_000_000) // before the interval: no line
	clk.advance(3 * time.Second)
	_, _ = task.Write(make([]byte, 3_000_000)) // 5 s in: 5 MB moved → 1 MB/s, 3 MB left → 3 s
	r.Logf("a message")
	clk.advance(time.Second)
	task.Done(nil)
	want := []string{
		"download org/m: starting, 10.0 MB",
		"download org/m:  70.0% (7.0 MB / 10.0 MB), 1.0 MB/s, ETA 3s",
		"a message",
		"download org/m: done, 7.0 MB in 6s (833.3 kB/s)",
	}
	if got := strings.Split(strings.TrimSpace(out.String()), "\n"); strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("lines:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestReporterBar(t *testing.T) {
	clk := &fakeClock{t: time.Unix(1000, 0)}
	var out bytes.Buffer
	r := NewReporter(&out, ReporterOptions{Mode: ProgressBar, Now: clk.now})
	task := r.Start("load", 1000)
	clk.advance(time.Second)
	task.Add(500)
	if !strings.HasSuffix(out.String(), "\rload  50.0% ████████████░░░░░░░░░░░░ 500 B/1.0 kB 500 B/s ETA 1s\x1b[K") {
		t.Fatalf("bar: %q", out.String())
	}
	r.Logf("note")
	if !strings.HasSuffix(out.String(), "\r\x1b[Knote\n") {
		t.Fatalf("a message must clear the bar first: %q", out.String())
	}
	clk.advance(time.Second)
	task.Done(errors.New("boom"))
	if !strings.Contains(out.String(), "\nload: failed after 2s: boom\n") {
		t.Fatalf("failure line missing: %q", out.String())
	}
	// A writer that is not a terminal gets log lines in auto mode.
	if NewReporter(&out, ReporterOptions{}).bar {
		t.Fatal("a bytes.Buffer was taken for a terminal")
	}
}

func TestNilReporterIsSilent(t *testing.T) {
	var r *Reporter
	task := r.Start("x", 10)
	task.Add(5)
	task.Skip(1)
	_, _ = task.Write([]byte("abc"))
	task.Done(nil)
	r.Logf("nothing")
}

func TestFormatBytes(t *testing.T) {
	cases := map[int64]string{0: "0 B", 999: "999 B", 1000: "1.0 kB", 1_176_144: "1.2 MB", 724_000_000: "724.0 MB", 5e12: "5.0 TB"}
	for n, want := range cases {
		if got := FormatBytes(n); got != want {
			t.Errorf("FormatBytes(%d) = %s, want %s", n, got, want)
		}
	}
}
