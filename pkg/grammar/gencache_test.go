package grammar

import "testing"

func TestGenCache(t *testing.T) {
	type op struct {
		put  bool
		key  int
		size int
		want bool // get: found
	}
	cases := []struct {
		name string
		max  int
		ops  []op
	}{
		{"a full cache still takes new entries", 40, []op{
			{put: true, key: 1, size: 10}, {put: true, key: 2, size: 10}, {put: true, key: 3, size: 10},
			{put: true, key: 4, size: 10}, {put: true, key: 5, size: 10},
			{key: 5, want: true}, {key: 4, want: true}, {key: 1, want: false},
		}},
		{"a hit in the old generation survives the next turnover", 40, []op{
			{put: true, key: 1, size: 10}, {put: true, key: 2, size: 10}, {put: true, key: 3, size: 10}, // 1, 2 old
			{key: 1, want: true},          // back to the young one, with 3
			{put: true, key: 4, size: 10}, // young full: {3, 1} old, 2 dropped
			{key: 1, want: true}, {key: 2, want: false}, {key: 3, want: true},
		}},
		{"an entry over half the budget is not kept", 40, []op{
			{put: true, key: 1, size: 21}, {key: 1, want: false},
			{put: true, key: 2, size: 20}, {key: 2, want: true},
		}},
		{"a zero cache keeps nothing", 0, []op{{put: true, key: 1, size: 1}, {key: 1, want: false}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := newGenCache[int, int](tc.max)
			for i, o := range tc.ops {
				if o.put {
					c.put(o.key, o.key*100, o.size)
				} else if v, ok := c.get(o.key); ok != o.want || ok && v != o.key*100 {
					t.Fatalf("op %d: get(%d) = %d, %v; want found %v", i, o.key, v, ok, o.want)
				}
				if held := c.youngBytes + c.oldBytes; held > tc.max {
					t.Fatalf("op %d: %d bytes held, max %d", i, held, tc.max)
				}
			}
		})
	}
}
