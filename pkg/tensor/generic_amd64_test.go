package tensor

import "testing"

// TestPortableKernels runs the matrix tests with the assembly switched off,
// so the portable kernels used on CPUs without AVX2 are exercised here too.
func TestPortableKernels(t *testing.T) {
	saved := hasAVX2
	hasAVX2 = false
	defer func() { hasAVX2 = saved }()
	TestMatMulMatchesReference(t)
	TestQ4x8Kernels(t)
	TestDotX4MatchesSingle(t)
	TestAxpyAndDotF16(t)
	TestMadScaleF16(t)
}
