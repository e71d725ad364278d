package sampler

// The candidate sets are found by quickselect instead of sorting the whole
// vocabulary (O(V) on average instead of O(V log V) per token). Tokens are
// totally ordered: higher logit first, lower id first among equal logits, so
// the sets are exactly those of a stable descending sort.

func better(key []float32, a, b int32) bool {
	ka, kb := key[a], key[b]
	return ka > kb || (ka == kb && a < b)
}

// partition reorders idx[lo:hi] around a median-of-three pivot and returns
// its final position p: idx[lo:p] rank above the pivot, idx[p+1:hi] below.
func partition(idx []int32, key []float32, lo, hi int) int {
	mid := lo + (hi-lo)/2
	last := hi - 1
	// Order lo, mid, last so that the median lands in mid.
	if better(key, idx[mid], idx[lo]) {
		idx[mid], idx[lo] = idx[lo], idx[mid]
	}
	if better(key, idx[last], idx[lo]) {
		idx[last], idx[lo] = idx[lo], idx[last]
	}
	if better(key, idx[last], idx[mid]) {
		idx[last], idx[mid] = idx[mid], idx[last]
	}
	idx[mid], idx[last] = idx[last], idx[mid]
	pivot := idx[last]
	store := lo
	for i := lo; i < last; i++ {
		if better(key, idx[i], pivot) {
			idx[i], idx[store] = idx[store], idx[i]
			store++
		}
	}
	idx[store], idx[last] = idx[last], idx[store]
	return store
}

// selectTop moves the k best tokens of idx into idx[:k] (in no particular order).
func selectTop(idx []int32, key []float32, k int) {
	lo, hi := 0, len(idx)
	for hi-lo > 1 {
		p := partition(idx, key, lo, hi)
		switch {
		case p == k || p == k-1:
			return
		case p > k:
			hi = p
		default:
			lo = p + 1
		}
	}
}

// nucleus reorders idx so that its first n tokens are the top-p set and
// returns n: a token is kept when the probability mass ranked strictly above
// it is <= limit (LightLLM zeroes ranks where cumsum-p > top_p). probs are
// unnormalised, so limit is top_p times their sum. The best token is always kept.
func nucleus(idx []int32, key []float32, probs []float32, limit float64) int {
	lo, hi := 0, len(idx)
	var above float64 // mass of idx[:lo], all of which is kept
	for lo < hi {
		p := partition(idx, key, lo, hi)
		s := above
		for _, t := range idx[lo:p] {
			s += float64(probs[t])
		}
		if s <= limit || p == 0 {
			// The pivot is kept, and so is everything ranked above it.
			above = s + float64(probs[idx[p]])
			lo = p + 1
		} else {
			hi = p
		}
	}
	return lo
}
