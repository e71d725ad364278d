package rolectl

import (
	"slices"
	"testing"
)

func TestSplitCPUs(t *testing.T) {
	tests := map[string]struct {
		allowed     []int
		threads     int
		infer, rest []int
		wantErr     bool
	}{
		"two cores, one thread":     {allowed: []int{0, 1}, threads: 1, infer: []int{0}, rest: []int{1}},
		"a cpuset of four":          {allowed: []int{2, 3, 6, 7}, threads: 3, infer: []int{2, 3, 6}, rest: []int{7}},
		"threads take every CPU":    {allowed: []int{0, 1}, threads: 2, wantErr: true},
		"more threads than CPUs":    {allowed: []int{0}, threads: 4, wantErr: true},
		"threads unset (all cores)": {allowed: []int{0, 1, 2}, threads: 0, wantErr: true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			inf, err := splitCPUs(tc.allowed, tc.threads, true)
			rest, err2 := splitCPUs(tc.allowed, tc.threads, false)
			if tc.wantErr {
				if err == nil || err2 == nil {
					t.Fatalf("split %v with %d threads: %v / %v, want errors", tc.allowed, tc.threads, inf, rest)
				}
				return
			}
			if err != nil || err2 != nil {
				t.Fatal(err, err2)
			}
			if !slices.Equal(inf, tc.infer) || !slices.Equal(rest, tc.rest) {
				t.Fatalf("split %v with %d threads: infer %v, rest %v; want %v, %v", tc.allowed, tc.threads, inf, rest, tc.infer, tc.rest)
			}
		})
	}
}
