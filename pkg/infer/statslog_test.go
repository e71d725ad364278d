package infer

import (
	"testing"
	"time"

	"github.com/lightllm-go/lightllm/pkg/engine"
)

func TestStatsLine(t *testing.T) {
	t0 := time.Unix(1000, 0)
	base := engine.Stats{PrefillTokens: 100, CachedTokens: 50, KVSize: 1000}
	cases := []struct {
		name    string
		every   time.Duration
		at      time.Duration
		st      engine.Stats
		gen     uint64
		waiting int
		want    statsFields
		logged  bool
	}{
		{"off", 0, 20 * time.Second, engine.Stats{Running: 3}, 0, 0, statsFields{}, false},
		{"not yet due", 10 * time.Second, 9 * time.Second, engine.Stats{Running: 3}, 0, 0, statsFields{}, false},
		{"idle: quiet", 10 * time.Second, 10 * time.Second, base, 0, 0, statsFields{}, false},
		{"waiting only", 10 * time.Second, 10 * time.Second, base, 0, 2, statsFields{waiting: 2}, true},
		{"busy", 10 * time.Second, 10 * time.Second,
			engine.Stats{PrefillTokens: 400, CachedTokens: 150, KVSize: 1000, KVUsed: 250, Running: 4, Waiting: 1}, 200, 3,
			statsFields{running: 4, waiting: 4, kvUsagePct: 25, promptTokS: 30, genTokS: 20, hitRate: 25}, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			l := statsLine{every: tc.every}
			if _, ok := l.due(t0, base, 0); ok {
				t.Fatal("the first call logged")
			}
			l.gen += tc.gen
			got, ok := l.due(t0.Add(tc.at), tc.st, tc.waiting)
			if ok != tc.logged || got != tc.want {
				t.Errorf("due: %+v %v, want %+v %v", got, ok, tc.want, tc.logged)
			}
		})
	}
}
