package model

import "math"

// yarn is YaRN RoPE scaling as llama.cpp computes it: ggml's rope cache
// (ggml_rope_cache_init / rope_yarn in ggml-cpu/ops.cpp) with the
// correction dimensions of ggml_rope_yarn_corr_dims and the attention
// factor llama_context derives (ext_factor 1, beta_fast 32, beta_slow 1,
// the factor's mscale cancelled there and applied again per angle).
// Rounding follows the C expressions; products feeding a sum are fused as
// GCC contracts them in those builds (the same way it fuses ggml's
// rotate_pairs, which the existing RoPE matches bit for bit).
type yarn struct {
	lo, hi float32 // correction dimensions
	mscale float32 // cos/sin multiplier: attn_factor * (1 + 0.1 ln(1/freq_scale))
}

func newYarn(c *Config, freqScale float32) *yarn {
	rs := c.RopeScaling
	orig := rs.OriginalMaxPos
	if orig <= 0 {
		orig = c.MaxPos // n_ctx_orig_yarn defaults to n_ctx_train
	}
	nDims := c.HeadDim
	base := float32(c.RopeTheta)
	corrDim := func(nRot float32) float32 {
		// n_dims * logf(n_ctx_orig / (n_rot * 2 * (float)M_PI)) / (2 * logf(base))
		return float32(float32(nDims)*logf(float32(orig)/float32(float32(nRot*2)*float32(math.Pi)))) / float32(2*logf(base))
	}
	start := float32(math.Floor(float64(corrDim(32))))
	end := float32(math.Ceil(float64(corrDim(1))))
	y := &yarn{lo: max(0, start), hi: min(float32(nDims-1), end)}
	// llama_context: attn_factor = get_mscale(factor, 1) / (1 + 0.1 logf(factor)) * rope_attn_factor.
	factor := 1 / freqScale
	attn := float32(1)
	if factor > 1 {
		attn = fma32(0.1, logf(factor), 1)
	}
	attn *= 1 / fma32(0.1, logf(factor), 1)
	if rs.AttnFactor != 0 {
		attn *= rs.AttnFactor
	}
	// rope_yarn with ext_factor != 0: mscale *= 1.0f + 0.1f * logf(1.0f / freq_scale).
	y.mscale = attn * fma32(0.1, logf(1/freqScale), 1)
	return y
}

// table is ggml_rope_cache_init for position pos: per pair i the
// extrapolated angle theta/ff (no frequency factors here), its
// interpolation freq_scale*theta, mixed by the ramp between the correction
// dimensions, then cosf/sinf times mscale.
func (y *yarn) table(pos int32, thetaScale, freqScale float32, cos, sin []float32) {
	theta := float32(pos)
	for i := range cos {
		extrap := theta
		interp := freqScale * extrap
		// rope_yarn_ramp(low, high, i0) with i0 = 2i: (i0/2 - low) / MAX(0.001f, high - low).
		r := (float32(i) - y.lo) / max(0.001, y.hi-y.lo)
		ramp := 1 - min(1, max(0, r)) // times ext_factor 1
		t := fma32(interp, 1-ramp, float32(extrap*ramp))
		s, c := sincosf(t)
		cos[i], sin[i] = c*y.mscale, s*y.mscale
		theta *= thetaScale
	}
}

// logf is glibc's logf for the few arguments YaRN takes (context lengths,
// scale factors): the correctly rounded float32 logarithm, which glibc's
// implementation returns for them (checked in TestYarnLogf).
func logf(x float32) float32 { return float32(math.Log(float64(x))) }
