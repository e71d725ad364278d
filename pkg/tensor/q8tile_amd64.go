package tensor

import (
	"unsafe"

	"golang.org/x/sys/cpu"
)

// hasVNNI selects the AVX-512 VNNI kernels (256-bit registers), which give
// the same numbers as the AVX2 ones in fewer instructions.
var hasVNNI = hasAVX2 && cpu.X86.HasAVX512F && cpu.X86.HasAVX512VL && cpu.X86.HasAVX512BW && cpu.X86.HasAVX512VNNI

// hasGFNI adds, to hasVNNI, the 512-bit GFNI affine byte transform
// q6KRowsZ unpacks q6_K's high bits with.
var hasGFNI = cpu.X86.HasAVX512GFNI

//go:noescape
func q8TileVNNI(w unsafe.Pointer, nb int, tile unsafe.Pointer, ntok int, out *[8]float32)

//go:noescape
func q8Tile2VNNI(w unsafe.Pointer, rowBytes, nb int, tile unsafe.Pointer, ntok int, out *[16]float32)

// q8Tile2 is q8Tile for two consecutive rows (rowBytes apart from w[0]):
// out[r*8+c].
func q8Tile2(w []byte, rowBytes, nb int, tile []byte, ntok int, out *[16]float32) {
	_ = w[rowBytes+nb*q8BlockBytes-1]
	_ = tile[nb*q8TileBlockBytes-1]
	q8Tile2VNNI(unsafe.Pointer(&w[0]), rowBytes, nb, unsafe.Pointer(&tile[0]), ntok, out)
}

// q8Tile computes one q8_0 row (nb blocks) against the first ntok (1..8)
// tokens of an activation tile (fillQ8Tile); each result equals dotQ8 of
// that token. Only called when hasVNNI.
func q8Tile(w []byte, nb int, tile []byte, ntok int, out *[8]float32) {
	_ = w[nb*q8BlockBytes-1]
	_ = tile[nb*q8TileBlockBytes-1]
	q8TileVNNI(unsafe.Pointer(&w[0]), nb, unsafe.Pointer(&tile[0]), ntok, out)
}
