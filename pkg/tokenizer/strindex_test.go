package tokenizer

import (
	"fmt"
	"testing"
)

func TestStrIndex(t *testing.T) {
	big := map[string]int32{}
	for i := range 5000 {
		big[fmt.Sprintf("tok%d", i)] = int32(i * 7)
	}
	for _, tc := range []struct {
		name   string
		m      map[string]int32
		absent []string
	}{
		{"empty", map[string]int32{}, []string{"", "a"}},
		{"empty key", map[string]int32{"": 3, "a": 1}, []string{"b", "aa"}},
		{"prefixes", map[string]int32{"a": 0, "ab": 1, "abc": 2, "▁the": 9, "\x00": 4}, []string{"abcd", "b", "", "▁th"}},
		{"many", big, []string{"tok5000", "tok-1", "to", "tok00"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			x := newStrIndex(tc.m)
			for k, v := range tc.m {
				if got, ok := x.get(k); !ok || got != v {
					t.Errorf("get(%q) = %d, %v; want %d", k, got, ok, v)
				}
			}
			for _, k := range tc.absent {
				if got, ok := x.get(k); ok {
					t.Errorf("get(%q) = %d, found; want absent", k, got)
				}
			}
			seen := map[string]int32{}
			x.each(func(s string, id int32) { seen[s] = id })
			if len(seen) != len(tc.m) {
				t.Errorf("each visited %d keys, want %d", len(seen), len(tc.m))
			}
			for k, v := range tc.m {
				if seen[k] != v {
					t.Errorf("each gave %q → %d, want %d", k, seen[k], v)
				}
			}
		})
	}
}

func TestStrList(t *testing.T) {
	for _, list := range [][]string{nil, {""}, {"a", "", "bc", "▁x"}} {
		l := newStrList(list)
		if l.len() != len(list) {
			t.Fatalf("%q: len %d", list, l.len())
		}
		for i, s := range list {
			if l.at(i) != s {
				t.Errorf("%q: at(%d) = %q", list, i, l.at(i))
			}
		}
	}
}
