package tensor

import (
	"fmt"
	"slices"
	"time"
)

// BandwidthResult is what MemBandwidth measured.
type BandwidthResult struct {
	Bytes   int       // size of the buffer read per pass
	Threads int       // workers that read it
	GBps    []float64 // read bandwidth of each timed pass, 1e9 bytes/s
	// TwoStreams are the passes of GBps that read two streams per worker.
	TwoStreams []float64
	// Far are the passes of GBps that lead the hardware prefetcher by 16
	// KiB, as the one-token K-quant kernels do (readSumFar).
	Far []float64
	// HugePages: the buffer was in transparent huge pages.
	HugePages bool
}

// Best is the fastest pass: the bandwidth the machine can deliver when
// nothing else gets in the way, which is what a roofline needs.
func (r BandwidthResult) Best() float64 {
	if len(r.GBps) == 0 {
		return 0
	}
	return slices.Max(r.GBps)
}

// Median is the middle pass, the typical figure on a shared machine.
func (r BandwidthResult) Median() float64 {
	if len(r.GBps) == 0 {
		return 0
	}
	s := slices.Clone(r.GBps)
	slices.Sort(s)
	return s[len(s)/2]
}

// bwTask reads a share of the buffer per pool chunk; sums keeps the loads
// from being optimised away and is per worker so workers never share a
// cache line. With two set, unit i reads units i and i+n/2 of the buffer
// in alternating 4 KiB pieces: two streams, as the q8_0 decode kernel
// reads two rows half a matrix apart.
type bwTask struct {
	buf  []byte
	step int
	mode bwMode
	sums [][8]uint64
}

// bwMode is how a pass reads: the loads alone, two streams per worker, or
// leading the prefetcher.
type bwMode int

const (
	bwPlain bwMode = iota
	bwTwo
	bwFar
)

func (t *bwTask) Run(worker, lo, hi int) {
	switch t.mode {
	case bwPlain:
		t.sums[worker][0] += readSum(t.buf[lo*t.step : hi*t.step])
		return
	case bwFar:
		t.sums[worker][0] += readSumFar(t.buf[lo*t.step : hi*t.step])
		return
	}
	const piece = 4 << 10
	half := len(t.buf) / 2
	var sum uint64
	for off := lo * t.step; off < hi*t.step; off += piece {
		sum += readSum(t.buf[off : off+piece])
		sum += readSum(t.buf[half+off : half+off+piece])
	}
	t.sums[worker][0] += sum
}

// MemBandwidth measures sequential read bandwidth the way a decode step
// streams weights: the given number of workers read disjoint parts of a
// buffer of size bytes (it should be several times the last-level cache,
// so the reads come from DRAM), once to warm up and then passes times
// with one stream per worker, passes times with two, and passes times
// with one stream leading the prefetcher (as the K-quant kernels read:
// without it the roofline would be below what one core reads at best). The buffer lives
// where the engine keeps its weights (a WeightArena's huge pages when the
// kernel has them), so the roofline's denominator is the best this
// memory system delivers to reads like the engine's, not a lower figure.
func MemBandwidth(threads, size, passes int) (BandwidthResult, error) {
	const step = 64 << 10 // bytes per work unit: long runs for the prefetchers
	if size < 2*step || passes < 1 {
		return BandwidthResult{}, fmt.Errorf("membw: need at least %d bytes and one pass, got %d bytes, %d passes", 2*step, size, passes)
	}
	n := size / step &^ 1
	buf := make([]byte, n*step)
	for i := range buf {
		buf[i] = byte(i)
	}
	arena := NewWeightArena()
	defer arena.Close()
	if arena != nil {
		buf = arena.Copy(buf, false)
	}
	p := NewPool(threads)
	defer p.Close()
	t := &bwTask{buf: buf, step: step, sums: make([][8]uint64, p.Threads())}
	res := BandwidthResult{Bytes: len(buf), Threads: p.Threads(), HugePages: arena != nil && arena.Copied() > 0}
	for _, mode := range []bwMode{bwPlain, bwTwo, bwFar} {
		t.mode = mode
		units := n
		if mode == bwTwo {
			units = n / 2
		}
		p.Run(t, units, 1)
		for range passes {
			start := time.Now()
			p.Run(t, units, 1)
			gbps := float64(len(buf)) / time.Since(start).Seconds() / 1e9
			res.GBps = append(res.GBps, gbps)
			switch mode {
			case bwTwo:
				res.TwoStreams = append(res.TwoStreams, gbps)
			case bwFar:
				res.Far = append(res.Far, gbps)
			}
		}
	}
	return res, nil
}
