package model

import (
	"math"

	"github.com/lightllm-go/lightllm/pkg/tensor"
)

// geluTable is ggml's ggml_table_gelu_f16 (GGML_GELU_FP16, on in every
// llama.cpp CPU build): for each f16 x, f16(gelu(x)) with the tanh
// approximation 0.5x(1 + tanh(sqrt(2/pi) x (1 + 0.044715 x^2))), as
// ggml_cpu_init fills it in the FMA builds (the inner 1 + a*x*x fused).
// tanhf through float64 gives every entry of glibc's table (the f16
// rounding hides its last bits); TestGELUTable pins the table's hash.
func geluTable() []uint16 {
	const a, s = float32(0.044715), float32(0.79788456080286535587989211986876)
	t := make([]uint16, 1<<16)
	for i := range t {
		x := tensor.F16ToF32(uint16(i))
		inner := fma32(a*x, x, 1)
		th := float32(math.Tanh(float64(s * x * inner)))
		y := 0.5 * x * (1 + th)
		if y != y {
			// x86's conversion gives a quiet NaN of x's sign, no payload.
			t[i] = 0x7e00 | uint16(i)&0x8000
			continue
		}
		t[i] = tensor.F32ToF16(y)
	}
	return t
}

// gegluRow is ggml_vec_geglu_f32: g = gelu(g) * u with gelu read from the
// f16 table, except for |g| >= 10 (0 below, the identity above).
func gegluRow(g, u []float32, table []uint16) {
	u = u[:len(g)]
	for i, x := range g {
		switch {
		case x <= -10:
			g[i] = 0
		case x >= 10:
			g[i] = x * u[i]
		default:
			g[i] = tensor.F16ToF32(table[tensor.F32ToF16(x)]) * u[i]
		}
	}
}
