package tensor

import (
	"math/rand/v2"
	"testing"
)

func TestReadSumMatchesGeneric(t *testing.T) {
	r := rand.New(rand.NewPCG(31, 32))
	for _, n := range []int{0, 1, 255, 256, 300, 1024, 4096 + 17, 3*1024 + 256 + 5} {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(r.Uint32())
		}
		if got, want := readSum(b), readSumGeneric(b); got != want {
			t.Errorf("n=%d: readSum %d, generic %d", n, got, want)
		}
		if got, want := readSumFar(b), readSumGeneric(b); got != want {
			t.Errorf("n=%d: readSumFar %d, generic %d", n, got, want)
		}
	}
}

func TestMemBandwidth(t *testing.T) {
	if _, err := MemBandwidth(1, 1000, 1); err == nil {
		t.Error("a buffer smaller than one work unit must be rejected")
	}
	if _, err := MemBandwidth(1, 1<<20, 0); err == nil {
		t.Error("zero passes must be rejected")
	}
	for _, threads := range []int{1, 2} {
		res, err := MemBandwidth(threads, 4<<20, 3)
		if err != nil {
			t.Fatal(err)
		}
		if res.Threads != threads || res.Bytes != 4<<20 || len(res.GBps) != 9 || len(res.TwoStreams) != 3 || len(res.Far) != 3 {
			t.Fatalf("threads %d: %+v", threads, res)
		}
		if res.Best() <= 0 || res.Median() <= 0 || res.Median() > res.Best() {
			t.Errorf("threads %d: best %v median %v", threads, res.Best(), res.Median())
		}
	}
}
