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
// cache line.
type bwTask struct {
	buf  []byte
	step int
	sums [][8]uint64
}

func (t *bwTask) Run(worker, lo, hi int) {
	t.sums[worker][0] += readSum(t.buf[lo*t.step : hi*t.step])
}

// MemBandwidth measures sequential read bandwidth the way a decode step
// streams weights: the given number of workers read disjoint parts of a
// buffer of size bytes (it should be several times the last-level cache,
// so the reads come from DRAM), once to warm up and then passes times.
func MemBandwidth(threads, size, passes int) (BandwidthResult, error) {
	const step = 64 << 10 // bytes per work unit: long runs for the prefetchers
	if size < step || passes < 1 {
		return BandwidthResult{}, fmt.Errorf("membw: need at least %d bytes and one pass, got %d bytes, %d passes", step, size, passes)
	}
	n := size / step
	buf := make([]byte, n*step)
	for i := range buf {
		buf[i] = byte(i)
	}
	p := NewPool(threads)
	defer p.Close()
	t := &bwTask{buf: buf, step: step, sums: make([][8]uint64, p.Threads())}
	res := BandwidthResult{Bytes: len(buf), Threads: p.Threads()}
	p.Run(t, n, 1)
	for range passes {
		start := time.Now()
		p.Run(t, n, 1)
		res.GBps = append(res.GBps, float64(len(buf))/time.Since(start).Seconds()/1e9)
	}
	return res, nil
}
