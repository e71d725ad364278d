package hub

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"time"
)

// ProgressMode selects how a Reporter draws.
type ProgressMode int

const (
	// ProgressAuto draws a bar when the writer is a terminal, log lines otherwise.
	ProgressAuto ProgressMode = iota
	// ProgressBar redraws one line in place with \r (for terminals).
	ProgressBar
	// ProgressLines prints a line every Interval (for logs and pipes).
	ProgressLines
)

// ReporterOptions configures NewReporter.
type ReporterOptions struct {
	Mode ProgressMode
	// Interval between log lines in ProgressLines mode; 0 → 5s. The bar is
	// redrawn at most 10 times a second whatever this is.
	Interval time.Duration
	// Now is the clock; nil → time.Now. Tests inject a fake one.
	Now func() time.Time
}

// Reporter prints the progress of byte-counted tasks (downloads now, weight
// loading later) to an io.Writer, normally stderr. A nil *Reporter is valid
// and prints nothing, so callers need no nil checks.
type Reporter struct {
	mu       sync.Mutex
	w        io.Writer
	bar      bool
	interval time.Duration
	now      func() time.Time
	drawn    bool // a bar line is on screen and must be cleared before a message
}

// NewReporter returns a Reporter writing to w.
func NewReporter(w io.Writer, opts ReporterOptions) *Reporter {
	r := &Reporter{w: w, interval: opts.Interval, now: opts.Now}
	if r.interval <= 0 {
		r.interval = 5 * time.Second
	}
	if r.now == nil {
		r.now = time.Now
	}
	switch opts.Mode {
	case ProgressBar:
		r.bar = true
	case ProgressAuto:
		r.bar = isTerminal(w)
	}
	return r
}

// Logf prints one message line, keeping a bar in progress intact below it.
func (r *Reporter) Logf(format string, args ...any) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.clearLocked()
	fmt.Fprintf(r.w, strings.TrimRight(format, "\n")+"\n", args...)
}

func (r *Reporter) clearLocked() {
	if r.drawn {
		fmt.Fprint(r.w, "\r\x1b[K")
		r.drawn = false
	}
}

// Task is one unit of progress. It is an io.Writer that counts the bytes
// written to it, so it can sit in an io.MultiWriter or io.TeeReader.
type Task struct {
	r       *Reporter
	name    string
	total   int64 // <= 0: unknown
	done    int64
	skipped int64 // bytes counted as done without being transferred now (resume)
	start   time.Time
	last    time.Time // last draw
	ended   bool
}

// Start begins a task of total bytes (<= 0 if unknown).
func (r *Reporter) Start(name string, total int64) *Task {
	if r == nil {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.now()
	t := &Task{r: r, name: name, total: total, start: now, last: now}
	if !r.bar {
		if total > 0 {
			fmt.Fprintf(r.w, "%s: starting, %s\n", name, FormatBytes(total))
		} else {
			fmt.Fprintf(r.w, "%s: starting\n", name)
		}
	} else {
		t.drawLocked(now)
	}
	return t
}

// Write counts len(p) bytes of progress.
func (t *Task) Write(p []byte) (int, error) {
	t.Add(int64(len(p)))
	return len(p), nil
}

// Add counts n bytes (negative when a transfer restarts from scratch).
func (t *Task) Add(n int64) {
	if t == nil {
		return
	}
	t.r.mu.Lock()
	defer t.r.mu.Unlock()
	t.done += n
	t.maybeDrawLocked()
}

// Skip counts n bytes as done without a transfer (a resumed partial file),
// so they do not inflate the rate.
func (t *Task) Skip(n int64) {
	if t == nil {
		return
	}
	t.r.mu.Lock()
	defer t.r.mu.Unlock()
	t.done += n
	t.skipped += n
	t.maybeDrawLocked()
}

// Done ends the task; err != nil reports it as failed.
func (t *Task) Done(err error) {
	if t == nil {
		return
	}
	r := t.r
	r.mu.Lock()
	defer r.mu.Unlock()
	if t.ended {
		return
	}
	t.ended = true
	now := r.now()
	elapsed := now.Sub(t.start)
	if r.bar {
		t.drawLocked(now)
		fmt.Fprint(r.w, "\n")
		r.drawn = false
	}
	if err != nil {
		fmt.Fprintf(r.w, "%s: failed after %s: %v\n", t.name, formatDuration(elapsed), err)
		return
	}
	if !r.bar {
		fmt.Fprintf(r.w, "%s: done, %s in %s (%s/s)\n", t.name, FormatBytes(t.done), formatDuration(elapsed),
			FormatBytes(int64(t.rate(now))))
	}
}

func (t *Task) maybeDrawLocked() {
	if t.ended {
		return
	}
	now := t.r.now()
	every := t.r.interval
	if t.r.bar {
		every = 100 * time.Millisecond
	}
	if now.Sub(t.last) < every {
		return
	}
	t.last = now
	t.drawLocked(now)
}

// rate is bytes per second actually transferred since Start.
func (t *Task) rate(now time.Time) float64 {
	secs := now.Sub(t.start).Seconds()
	if secs <= 0 {
		return 0
	}
	return float64(max(t.done-t.skipped, 0)) / secs
}

func (t *Task) drawLocked(now time.Time) {
	r := t.r
	rate := t.rate(now)
	eta := "--"
	if t.total > 0 && rate > 0 && t.done < t.total {
		eta = formatDuration(time.Duration(float64(t.total-t.done) / rate * float64(time.Second)))
	} else if t.total > 0 && t.done >= t.total {
		eta = "0s"
	}
	if !r.bar {
		if t.total > 0 {
			fmt.Fprintf(r.w, "%s: %5.1f%% (%s / %s), %s/s, ETA %s\n", t.name, t.percent(),
				FormatBytes(t.done), FormatBytes(t.total), FormatBytes(int64(rate)), eta)
		} else {
			fmt.Fprintf(r.w, "%s: %s, %s/s\n", t.name, FormatBytes(t.done), FormatBytes(int64(rate)))
		}
		return
	}
	if t.total > 0 {
		const width = 24
		filled := int(t.percent() / 100 * width)
		bar := strings.Repeat("█", filled) + strings.Repeat("░", width-filled)
		fmt.Fprintf(r.w, "\r%s %5.1f%% %s %s/%s %s/s ETA %s\x1b[K", t.name, t.percent(), bar,
			FormatBytes(t.done), FormatBytes(t.total), FormatBytes(int64(rate)), eta)
	} else {
		fmt.Fprintf(r.w, "\r%s %s %s/s\x1b[K", t.name, FormatBytes(t.done), FormatBytes(int64(rate)))
	}
	r.drawn = true
}

func (t *Task) percent() float64 {
	if t.total <= 0 {
		return 0
	}
	return min(100, max(0, 100*float64(t.done)/float64(t.total)))
}

// FormatBytes uses decimal units, as the Hub's web pages and `hf cache ls` do.
func FormatBytes(n int64) string {
	const unit = 1000
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	f := float64(n)
	for _, u := range []string{"kB", "MB", "GB", "TB"} {
		f /= unit
		if f < unit || u == "TB" {
			return fmt.Sprintf("%.1f %s", f, u)
		}
	}
	return fmt.Sprintf("%d B", n) // unreachable: the loop returns at TB
}

func formatDuration(d time.Duration) string {
	d = d.Round(time.Second)
	h, m, s := int(d.Hours()), int(d.Minutes())%60, int(d.Seconds())%60
	switch {
	case h > 0:
		return fmt.Sprintf("%dh%02dm", h, m)
	case m > 0:
		return fmt.Sprintf("%dm%02ds", m, s)
	}
	return fmt.Sprintf("%ds", s)
}
