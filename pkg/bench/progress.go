package bench

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"
)

// IsTerminal reports whether w is a character device (a TTY): the progress
// bar is drawn only there, so redirected stderr stays clean.
func IsTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// progress draws a one-line bar, redrawn at most every 100 ms.
type progress struct {
	w       io.Writer
	total   int
	mu      sync.Mutex
	ok, bad int
	start   time.Time
	last    time.Time
}

func newProgress(w io.Writer, total int) *progress {
	return &progress{w: w, total: total, start: time.Now()}
}

func (p *progress) done(r *Result) {
	if p == nil || p.w == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case r.Success:
		p.ok++
	case !r.Canceled:
		p.bad++
	}
	if now := time.Now(); now.Sub(p.last) >= 100*time.Millisecond || p.ok+p.bad == p.total {
		p.last = now
		p.draw(now)
	}
}

func (p *progress) draw(now time.Time) {
	const width = 30
	n := p.ok + p.bad
	fill := width * n / max(p.total, 1)
	rate := float64(p.ok) / max(now.Sub(p.start).Seconds(), 1e-9)
	fmt.Fprintf(p.w, "\r[%s%s] %d/%d  ok %d  failed %d  %.2f req/s ",
		strings.Repeat("=", fill), strings.Repeat(" ", width-fill), n, p.total, p.ok, p.bad, rate)
}

func (p *progress) finish() {
	if p == nil || p.w == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.draw(time.Now())
	fmt.Fprintln(p.w)
}
