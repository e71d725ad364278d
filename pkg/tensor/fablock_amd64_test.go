package tensor

import "testing"

// TestTileBlocksAVX2 runs the tile-kernel test with the 512-bit kernels
// switched off, so both assembly versions are checked against the chains
// on an AVX-512 machine (TestTileBlocksMatchChains takes the 512-bit ones
// where the CPU has them).
func TestTileBlocksAVX2(t *testing.T) {
	if !hasFA512 {
		t.Skip("CPU without AVX-512: TestTileBlocksMatchChains ran the AVX2 kernels")
	}
	hasFA512 = false
	defer func() { hasFA512 = true }()
	TestTileBlocksMatchChains(t)
}
