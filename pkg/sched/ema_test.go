package sched

import "testing"

func TestEMAUpdate(t *testing.T) {
	// Hand-computed from RouterStatics.update:
	//   1000 → int(2048·0.5 + 1000·0.5)        = 1524, α 0.4
	//   10   → x=64: int(1524·0.6 + 64·0.4)    = 940,  α 0.32
	//   5000 → int(940·0.68 + 5000·0.32)       = 2239, α 0.256
	//   3000 → int(2239·0.744 + 3000·0.256)    = 2433, α 0.2048
	steps := []struct {
		in    int
		ema   int
		alpha float64
	}{
		{1000, 1524, 0.4},
		{10, 940, 0.32},
		{5000, 2239, 0.256},
		{3000, 2433, 0.2048},
		{3000, 2549, 0.16384},
		{3000, 2622, 0.131072},
		{3000, 2671, 0.1048576},
		{3000, 2705, 0.08388608},
		{3000, 2729, 0.067108864},
		{3000, 2747, 0.0536870912},
		{3000, 2760, 0.04294967296},
		{3000, 2770, 0.04}, // alpha floor reached
		{3000, 2779, 0.04},
	}
	e := NewEMA()
	if e.Value() != 2048 || e.Alpha() != 0.5 {
		t.Fatalf("initial = %d, %v; want 2048, 0.5", e.Value(), e.Alpha())
	}
	for i, s := range steps {
		e.Update(s.in)
		if e.Value() != s.ema || !near(e.Alpha(), s.alpha) {
			t.Fatalf("update %d (%d): ema %d alpha %v; want %d %v", i, s.in, e.Value(), e.Alpha(), s.ema, s.alpha)
		}
	}
}

func TestEMAFloor(t *testing.T) {
	e := NewEMA()
	for range 200 {
		e.Update(0)
	}
	if e.Value() != 64 || e.Alpha() != 0.04 {
		t.Fatalf("after 200 zero-length finishes: ema %d alpha %v; want 64 0.04", e.Value(), e.Alpha())
	}
}

func near(a, b float64) bool { return a-b < 1e-12 && b-a < 1e-12 }
