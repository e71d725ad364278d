//go:build !amd64

package tensor

func i8Lanes(v, q []int8, sc []int16, per int, out []int32) { i8LanesGeneric(v, q, sc, per, out) }

func fmaBlocks(acc *[8]float32, d []float32, lanes []int32) { fmaBlocksGeneric(acc, d, lanes) }
