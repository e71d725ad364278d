package sched

import "testing"

func TestPeak(t *testing.T) {
	tests := []struct {
		name string
		in   []Tuple
		want int
	}{
		{"empty", nil, 0},
		{"one", []Tuple{{A: 100, B: 20}}, 120},
		// sorted (5,8) (10,5) (20,1): 5+8=13, 15+2·5=25, 35+3·1=38
		{"last term", []Tuple{{A: 10, B: 5, Group: 1}, {A: 20, B: 1, Group: 2}, {A: 5, B: 8, Group: 3}}, 38},
		// sorted (100,50) (10,40) (10,1): 150, 110+80=190, 120+3=123
		{"middle term", []Tuple{{A: 10, B: 1, Group: 1}, {A: 100, B: 50, Group: 2}, {A: 10, B: 40, Group: 3}}, 190},
		// sorted G(110,50) H(50,40) G(110,30): 160, 160+80=240, the second
		// member of G adds only 110-100: 170+90=260 (not 270+90=360).
		{"group shares its prompt", []Tuple{
			{A: 110, B: 50, Group: 7, Input: 100},
			{A: 110, B: 30, Group: 7, Input: 100},
			{A: 50, B: 40, Group: 9, Input: 40},
		}, 260},
		{"zero futures sum", []Tuple{{A: 3, Group: 1}, {A: 4, Group: 2}}, 7},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := Peak(tc.in); got != tc.want {
				t.Fatalf("Peak = %d, want %d", got, tc.want)
			}
		})
	}
}

func TestLightLLMTuple(t *testing.T) {
	cfg := DefaultConfig(1 << 20) // chunk 8192, max_wait 1, margin 16
	tests := []struct {
		name string
		r    Request
		busy bool
		ema  int
		want Tuple
	}{
		// a = 1001; b = ceil(1000/8192)·2 + min(4096, max(0, 2048)) − 0 − 1 = 2049, +16
		{"new request uses the EMA", Request{InputLen: 1000, MaxNewTokens: 4096}, false, 2048, Tuple{A: 1001, B: 2065}},
		// a = max(4001, 4000); b = 1·2 + min(4096, max(3300, 2048)) − 3000 − 1 = 301, +16
		{"long output uses 1.1·out", Request{InputLen: 1000, OutputLen: 3000, KVLen: 3999, MaxNewTokens: 4096}, false, 2048, Tuple{A: 4001, B: 317}},
		// b = 2 + 4096 − 3000 − 1 = 1097, +16
		{"busy reserves max_new_tokens", Request{InputLen: 1000, OutputLen: 3000, KVLen: 3999, MaxNewTokens: 4096}, true, 2048, Tuple{A: 4001, B: 1113}},
		{"ignore_eos reserves max_new_tokens", Request{InputLen: 1000, OutputLen: 3000, KVLen: 3999, MaxNewTokens: 4096, IgnoreEOS: true}, false, 2048, Tuple{A: 4001, B: 1113}},
		// int(1.1·4095) = 4504 > max_new: b = 2 + 4096 − 4095 − 1 = 2, +16
		{"capped by max_new_tokens", Request{InputLen: 10, OutputLen: 4095, KVLen: 4104, MaxNewTokens: 4096}, false, 2048, Tuple{A: 4106, B: 18}},
		// mid chunked prefill: 11808 left → 2 chunks → 4; b = 4 + 2048 − 1 = 2051, +16
		{"chunk term", Request{InputLen: 20000, KVLen: 8192, MaxNewTokens: 4096}, false, 2048, Tuple{A: 20001, B: 2067}},
		// evicted after 500 tokens: recompute 1500 tokens = 1 chunk; cur_max_new = 2048
		{"recompute after eviction", Request{InputLen: 1000, OutputLen: 500, MaxNewTokens: 4096}, false, 2048, Tuple{A: 1501, B: 2 + 2048 - 500 - 1 + 16}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.r.ID = 42
			tc.want.Group, tc.want.Input = 42, tc.r.InputLen
			if got := LightLLMTuple(&tc.r, tc.busy, tc.ema, &cfg); got != tc.want {
				t.Fatalf("tuple = %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestSortEntriesFallsBack(t *testing.T) {
	// Reverse order exceeds the insertion budget and takes the pdqsort path.
	l := make([]entry, 100)
	for i := range l {
		l[i].B = i
	}
	sortEntries(l)
	for i := 1; i < len(l); i++ {
		if l[i-1].B < l[i].B {
			t.Fatalf("not sorted at %d: %d < %d", i, l[i-1].B, l[i].B)
		}
	}
}
