//go:build !amd64

package tensor

func dotQ4K(w []byte, xq []int8, xd []float32, xbs []int16) float32 {
	return dotQ4KGeneric(w, xq, xd, xbs)
}

func dotQ5K(w []byte, xq []int8, xd []float32, xbs []int16) float32 {
	return dotQ5KGeneric(w, xq, xd, xbs)
}

func dotQ6K(w []byte, xq []int8, xd []float32, xbs []int16) float32 {
	return dotQ6KGeneric(w, xq, xd, xbs)
}

func dotQ4KGemm(w []byte, xq []int8, xd []float32, xbs []int16) float32 {
	return dotQ4KGemmGeneric(w, xq, xd, xbs)
}

func dotQ6Kx4(w []byte, xq []int8, xd []float32, xbs []int16, out *[4]float32) {
	dotQ6Kx4Generic(w, xq, xd, xbs, out)
}

func dotQ5Kx4(w []byte, xq []int8, xd []float32, xbs []int16, out *[4]float32) {
	dotQ5Kx4Generic(w, xq, xd, xbs, out)
}

func quantizeActQ8KAsm(x []float32, q []int8, d []float32, bsums []int16) bool { return false }

func dotQ5KRows(w []byte, xq []int8, xd []float32, xbs []int16, out []float32) {
	dotKRowsGeneric(dotQ5KGeneric, q5KBlockBytes, w, xq, xd, xbs, out)
}

func dotQ6KRows(w []byte, xq []int8, xd []float32, xbs []int16, out []float32) {
	dotKRowsGeneric(dotQ6KGeneric, q6KBlockBytes, w, xq, xd, xbs, out)
}
