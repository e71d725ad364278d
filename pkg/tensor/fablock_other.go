//go:build !amd64

package tensor

func tileKQBlock(out, kt, q []float32, dk int, scale float32) {
	tileKQBlockGeneric(out, kt, q, dk, scale)
}

func tileVAccBlock(acc, v, p []float32, dv int) { tileVAccBlockGeneric(acc, v, p, dv) }

func tileMax(x []float32) float32 { return tileMaxGeneric(x) }

func tileSub(x []float32, m float32) { tileSubGeneric(x, m) }

func tileSum(x []float32, lanes int) float64 { return tileSumGeneric(x, lanes) }
