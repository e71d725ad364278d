//go:build !amd64

package tensor

// hasAVX2 is false off amd64: the portable kernels are used.
const hasAVX2 = false

// DotF32 returns sum a[i]*b[i] over len(a) (b must be at least as long).
func DotF32(a, b []float32) float32 { return dotF32Generic(a, b) }

func dotF16(w []byte, x []float32) float32            { return dotF16Generic(w, x) }
func dotBF16(w []byte, x []float32) float32           { return dotBF16Generic(w, x) }
func dotQ8(w []byte, xq []int8, ds []float32) float32 { return dotQ8Generic(w, xq, ds) }
func dotQ4(w []byte, xq []int8, ds []float32) float32 { return dotQ4Generic(w, xq, ds) }

// dotQ8x2 is dotQ8 for the two rows w[:rowBytes] and w[rowBytes:].
func dotQ8x2(w []byte, rowBytes int, xq []int8, ds []float32, out *[2]float32) {
	out[0] = dotQ8Generic(w, xq, ds)
	out[1] = dotQ8Generic(w[rowBytes:], xq, ds)
}

// AxpyF32 adds a*x to dst (len(dst) values).
func AxpyF32(dst []float32, a float32, x []float32) { axpyF32Generic(dst, a, x) }

func dotQ8x4(w []byte, xq []int8, ds []float32, out *[4]float32) {
	nb := len(ds) / 4
	for t := range out {
		out[t] = dotQ8(w, xq[t*nb*QK:(t+1)*nb*QK], ds[t*nb:(t+1)*nb])
	}
}

func dotQ4x4(w []byte, xq []int8, ds []float32, out *[4]float32) {
	nb := len(ds) / 4
	for t := range out {
		out[t] = dotQ4(w, xq[t*nb*QK:(t+1)*nb*QK], ds[t*nb:(t+1)*nb])
	}
}
