package sched

// EMA is LightLLM's RouterStatics: an exponential moving average of the
// output lengths of finished requests whose weight starts high, so the first
// finishes pull the estimate to the workload quickly, and decays to a floor.
type EMA struct {
	value int
	alpha float64
}

// EMA constants from LightLLM's router/stats.py.
const (
	emaStart     = 2048
	emaAlpha     = 0.5
	emaAlphaMin  = 0.04
	emaAlphaMult = 0.8
	emaFloor     = 64
)

// NewEMA returns the estimator in its initial state (2048 tokens, alpha 0.5).
func NewEMA() EMA { return EMA{value: emaStart, alpha: emaAlpha} }

// Value is ema_req_out_len.
func (e *EMA) Value() int { return e.value }

// Update folds in one finished (not aborted) request's output length:
// x = max(out, 64); ema = max(64, int(ema·(1−α) + x·α)); α = max(0.04, 0.8·α).
// Short outputs are clamped so that a burst of them cannot drive the estimate
// so low that admission overshoots and infer has to pause requests.
func (e *EMA) Update(outputLen int) {
	x := max(outputLen, emaFloor)
	e.value = int(float64(e.value)*(1-e.alpha) + float64(x)*e.alpha)
	e.value = max(emaFloor, e.value)
	e.alpha = max(emaAlphaMin, e.alpha*emaAlphaMult)
}
