package infer

import (
	"fmt"
	"time"

	"github.com/rs/zerolog"

	"github.com/lightllm-go/lightllm/pkg/model"
)

// loadLog turns model.LoadOptions.Progress into log lines: one at info
// every `every` while the weights load (a big model takes minutes; the
// operator sees it move), and the totals for the summary line.
type loadLog struct {
	log   zerolog.Logger
	every time.Duration
	start time.Time
	next  time.Time
	last  model.LoadProgress
	lines int // progress lines written
}

func newLoadLog(log zerolog.Logger, every time.Duration) *loadLog {
	now := time.Now()
	return &loadLog{log: log, every: every, start: now, next: now.Add(every)}
}

func (l *loadLog) progress(p model.LoadProgress) {
	l.last = p
	if p.Done {
		return
	}
	if now := time.Now(); !now.Before(l.next) {
		l.next = now.Add(l.every)
		l.lines++
		pct := 0.0
		if p.TotalBytes > 0 {
			pct = 100 * float64(p.Bytes) / float64(p.TotalBytes)
		}
		l.log.Info().Int("tensors", p.Tensors).Int("tensors_total", p.TotalTensors).
			Str("bytes", byteSize(p.Bytes)).Str("bytes_total", byteSize(p.TotalBytes)).
			Stringer("elapsed", now.Sub(l.start).Round(100*time.Millisecond)).
			Msgf("loading weights: %.0f%% (%d/%d tensors)", pct, p.Tensors, p.TotalTensors)
	}
}

// summary is the one line after the model and its KV pool are ready.
func (l *loadLog) summary(kvBytes int64, kvTokens, threads int, mmap bool) {
	p := l.last
	l.log.Info().Int("tensors", p.Tensors).Str("weights", byteSize(p.TotalBytes)).
		Str("weights_copied", byteSize(p.CopiedBytes)).Bool("mmap_weights", mmap).
		Str("kv_cache", byteSize(kvBytes)).Int("kv_tokens", kvTokens).Int("threads", threads).
		Stringer("took", time.Since(l.start).Round(time.Millisecond)).
		Msg("model loaded")
}

// byteSize prints n in binary units ("1.5 GiB").
func byteSize(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit && exp < 4; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTP"[exp])
}
