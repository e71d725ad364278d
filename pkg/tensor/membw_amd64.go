package tensor

import "unsafe"

//go:noescape
func readSumAVX2(p unsafe.Pointer, n int) uint64

// readSum adds up b as 64-bit words (b's length a multiple of 256), with
// wide loads so that only memory limits the speed.
func readSum(b []byte) uint64 {
	if len(b) < 256 {
		return readSumGeneric(b)
	}
	if hasAVX2 {
		n := len(b) &^ 255
		return readSumAVX2(unsafe.Pointer(&b[0]), n) + readSumGeneric(b[n:])
	}
	return readSumGeneric(b)
}

//go:noescape
func readSumFarAVX2(p unsafe.Pointer, n int) uint64

// readSumFar is readSum leading the hardware prefetcher by 16 KiB, as the
// one-token K-quant kernels do.
func readSumFar(b []byte) uint64 {
	if !hasAVX2 || len(b) < 1024 {
		return readSum(b)
	}
	n := len(b) &^ 1023
	return readSumFarAVX2(unsafe.Pointer(&b[0]), n) + readSum(b[n:])
}
