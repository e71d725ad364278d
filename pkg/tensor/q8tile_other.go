//go:build !amd64

package tensor

const hasVNNI = false

func q8Tile(w []byte, nb int, tile []byte, ntok int, out *[8]float32) {
	panic("q8Tile needs AVX-512 VNNI")
}

func q8Tile2(w []byte, rowBytes, nb int, tile []byte, ntok int, out *[16]float32) {
	panic("q8Tile2 needs AVX-512 VNNI")
}
