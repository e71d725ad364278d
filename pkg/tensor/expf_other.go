//go:build !amd64

package tensor

// ExpfRow sets dst[i] = Expf(src[i]) (len(dst) >= len(src)).
func ExpfRow(dst, src []float32) {
	for i, x := range src {
		dst[i] = Expf(x)
	}
}
