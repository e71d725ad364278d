package sampler

import "golang.org/x/sys/cpu"

//go:noescape
func expAVX2(dst, x *float32, n int, m, scale float32) float64

// hasAVX2 is fixed at start-up from the CPU's features.
var hasAVX2 = cpu.X86.HasAVX2 && cpu.X86.HasFMA

// expBlock fills dst[:n] with exp((x[i]-m)*scale) for the largest n that is a
// multiple of 8 the vector kernel handles, returns n and the sum.
func expBlock(dst, x []float32, m, scale float32) (int, float64) {
	n := len(x) &^ 7
	if !hasAVX2 || n == 0 {
		return 0, 0
	}
	_ = dst[n-1]
	return n, expAVX2(&dst[0], &x[0], n, m, scale)
}
