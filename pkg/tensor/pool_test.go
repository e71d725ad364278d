package tensor

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"
)

// spinTask burns a fixed amount of arithmetic per index and counts the
// indexes each worker ran.
type spinTask struct {
	perIndex int
	sink     atomic.Uint64
	byWorker [2]atomic.Int64
}

func (s *spinTask) Run(worker, lo, hi int) {
	x := uint64(lo) | 1
	for i := lo; i < hi; i++ {
		for k := 0; k < s.perIndex; k++ {
			x = x*6364136223846793005 + 1442695040888963407
		}
	}
	s.sink.Add(x)
	s.byWorker[min(worker, 1)].Add(int64(hi - lo))
}

// BenchmarkPoolAfterSerialGap runs a short parallel job after a span in
// which the caller works alone, as the first matmul of a decode step
// follows the previous step's sampling and publishing (issue 25). A helper
// that parked during the span is woken late and leaves the job to the
// caller: helper_share (the fraction of indexes the helper ran; 0.5 is an
// even split) shows it without depending on the host's speed. With spans
// shorter than spinFor the helper is still polling when the job comes.
func BenchmarkPoolAfterSerialGap(b *testing.B) {
	for _, gap := range []time.Duration{0, 100 * time.Microsecond, 300 * time.Microsecond} {
		b.Run(fmt.Sprintf("gap=%s", gap), func(b *testing.B) {
			p := NewPool(2)
			defer p.Close()
			t := &spinTask{perIndex: 2000}
			for b.Loop() {
				for end := time.Now().Add(gap); time.Now().Before(end); {
				}
				p.Run(t, 64, 1)
			}
			h, c := t.byWorker[1].Load(), t.byWorker[0].Load()
			b.ReportMetric(float64(h)/float64(h+c), "helper_share")
		})
	}
}
