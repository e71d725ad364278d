package sim

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

func TestDist(t *testing.T) {
	bounds := map[string][5]int{ // in lo, in hi, out lo, out hi, max_new
		DistDecodeHeavy:  {32, 4096, 2048, 4096, 4096},
		DistBalanced:     {3000, 5000, 3000, 5000, 5000},
		DistPrefillHeavy: {2048, 4096, 32, 4096, 4096},
		DistShareGPTLike: {16, 8192, 8, 4096, 4096},
	}
	for _, name := range DistNames() {
		t.Run(name, func(t *testing.T) {
			b := bounds[name]
			items, err := Dist(name, 2000, 7, 0)
			if err != nil {
				t.Fatal(err)
			}
			again, _ := Dist(name, 2000, 7, 0)
			if !slices.Equal(items, again) {
				t.Fatal("same seed, different workload")
			}
			sumOut := 0
			for _, it := range items {
				if it.Input < b[0] || it.Input > b[1] || it.Output < b[2] || it.Output > b[3] || it.MaxNew != b[4] || it.Arrival != 0 {
					t.Fatalf("item %+v outside %v", it, b)
				}
				sumOut += it.Output
			}
			if name == DistShareGPTLike {
				// Heavy tail: the mean is well above the 300-token median.
				if mean := float64(sumOut) / 2000; mean < 400 || mean > 700 {
					t.Fatalf("mean output %v", mean)
				}
			}
		})
	}
	items, err := Dist(DistDecodeHeavy, 1000, 1, 10)
	if err != nil {
		t.Fatal(err)
	}
	if last := items[len(items)-1].Arrival; last < 80 || last > 120 {
		t.Fatalf("1000 requests at 10/s end at %v s", last)
	}
	for _, bad := range []struct {
		name string
		n    int
		rate float64
	}{{"dist9", 10, 0}, {DistBalanced, 0, 0}, {DistBalanced, 10, -1}} {
		if _, err := Dist(bad.name, bad.n, 1, bad.rate); !errors.Is(err, ErrBadWorkload) {
			t.Errorf("Dist(%q, %d, %v): err %v", bad.name, bad.n, bad.rate, err)
		}
	}
}

func TestReadTrace(t *testing.T) {
	items, err := ReadTrace(strings.NewReader(`{"input_len": 10, "output_len": 5, "arrival_s": 2.5}

{"input_len": 20, "output_len": 7, "arrival_s": 1, "max_new_tokens": 9, "extra": "ignored"}
{"input_len": 30, "output_len": 3, "arrival_s": 2.5}
`))
	if err != nil {
		t.Fatal(err)
	}
	want := []Item{{20, 7, 1, 9}, {10, 5, 2.5, 7}, {30, 3, 2.5, 7}}
	if !slices.Equal(items, want) {
		t.Fatalf("items %+v, want %+v (arrival order, default max_new = largest output)", items, want)
	}
	for name, in := range map[string]string{
		"empty":          "",
		"not json":       "{input_len: 1}",
		"missing field":  `{"input_len": 1, "output_len": 1}`,
		"zero output":    `{"input_len": 1, "output_len": 0, "arrival_s": 0}`,
		"negative time":  `{"input_len": 1, "output_len": 1, "arrival_s": -1}`,
		"max_new < out":  `{"input_len": 1, "output_len": 5, "arrival_s": 0, "max_new_tokens": 4}`,
		"wrong type":     `{"input_len": "1", "output_len": 5, "arrival_s": 0}`,
		"second line ok": "{\"input_len\": 1, \"output_len\": 1, \"arrival_s\": 0}\n[1,2]",
	} {
		if _, err := ReadTrace(strings.NewReader(in)); !errors.Is(err, ErrBadWorkload) {
			t.Errorf("%s: err %v, want ErrBadWorkload", name, err)
		}
	}
	if _, err := LoadTrace("/nonexistent/trace.jsonl"); err == nil {
		t.Error("missing file: no error")
	}
}
