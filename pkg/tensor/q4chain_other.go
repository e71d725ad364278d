//go:build !amd64

package tensor

func dotQ4Chain(w []byte, xq []int8, ds []float32) float32 { return dotQ4ChainGeneric(w, xq, ds) }

func dotQ4Rows8(w []byte, rowBytes int, xq []int8, ds []float32, out *[8]float32) {
	for k := range out {
		out[k] = dotQ4ChainGeneric(w[k*rowBytes:], xq, ds)
	}
}

func dotQ4Tok4(w []byte, xq []int8, dsT []float32, out *[4]float32) {
	dotQ4Tok4Generic(w, xq, dsT, out)
}
