package tensor

// fmaChain is acc + isum*scale with one rounding, as the FMA instruction
// of llama.cpp's repacked-q4_0 kernels does (|isum| < 2^24, so its
// conversion to float32 is exact).
func fmaChain(isum int32, scale, acc float32) float32 {
	return FMA32(float32(isum), scale, acc)
}
