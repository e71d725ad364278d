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
