package infer

import (
	"math"
	"reflect"
	"slices"
	"testing"

	"github.com/lightllm-go/lightllm/pkg/engine"
	"github.com/lightllm-go/lightllm/shm"
)

// TestThinkBudget drives the processor with a scripted "model" (each step's
// row has its argmax at the script's next token) and greedy picking, and
// checks the tokens written, and that a fresh processor fed the same tokens
// through Accept only (replay) reaches the same state at every step.
func TestThinkBudget(t *testing.T) {
	const start, end = 8, 9
	for name, tc := range map[string]struct {
		cfg    shm.ThinkBudget
		script []int32 // what the model would write, one per step
		want   []int32
	}{
		"open, forced after 3": {shm.ThinkBudget{Budget: 3, Open: true, Start: []int32{start}, End: []int32{end}},
			[]int32{1, 2, 3, 4, 5, 6}, []int32{1, 2, 3, end, 5, 6}},
		"opened by the output": {shm.ThinkBudget{Budget: 2, Start: []int32{start}, End: []int32{end}},
			[]int32{start, 1, 2, 3, 4}, []int32{start, 1, 2, end, 4}},
		"two-token tags": {shm.ThinkBudget{Budget: 1, Start: []int32{7, start}, End: []int32{end, 0}},
			[]int32{7, start, 1, 2, 3, 4, 5}, []int32{7, start, 1, end, 0, 4, 5}},
		"closed in time": {shm.ThinkBudget{Budget: 3, Open: true, Start: []int32{start}, End: []int32{end}},
			[]int32{1, end, 2, 3, 4, 5}, []int32{1, end, 2, 3, 4, 5}},
		"closed on the last allowed token": {shm.ThinkBudget{Budget: 2, Open: true, Start: []int32{start}, End: []int32{end}},
			[]int32{1, end, 2, 3}, []int32{1, end, 2, 3}},
		"budget 0": {shm.ThinkBudget{Budget: 0, Open: true, Start: []int32{start}, End: []int32{end}},
			[]int32{1, 2, 3}, []int32{end, 2, 3}},
		"never opened": {shm.ThinkBudget{Budget: 1, Start: []int32{start}, End: []int32{end}},
			[]int32{1, 2, start, 3, 4, 5}, []int32{1, 2, start, 3, 4, 5}},
		"start tag half written": {shm.ThinkBudget{Budget: 1, Start: []int32{7, start}, End: []int32{end}},
			[]int32{7, 1, 2, 3}, []int32{7, 1, 2, 3}},
	} {
		t.Run(name, func(t *testing.T) {
			mk := newThinkBudget(&tc.cfg)
			live, _ := mk()
			var got []int32
			for _, next := range tc.script {
				row := make([]float32, 10)
				row[next] = 5
				if err := live.Process(row); err != nil {
					t.Fatal(err)
				}
				tok := int32(slices.Index(row, slices.Max(row)))
				if err := live.Accept(tok); err != nil {
					t.Fatal(err)
				}
				got = append(got, tok)
				replay, _ := mk()
				for _, g := range got {
					if err := replay.Accept(g); err != nil {
						t.Fatalf("replay of %v: %v", got, err)
					}
				}
				if !reflect.DeepEqual(replay, live) {
					t.Fatalf("after %v: replayed %+v, live %+v", got, replay, live)
				}
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("wrote %v, want %v", got, tc.want)
			}
		})
	}
}

// TestThinkBudgetOverrides: the forced end tag survives an earlier
// processor's ban, every other token is masked, and a token past the row or
// a replayed token other than the forced one is an error.
func TestThinkBudgetOverrides(t *testing.T) {
	cfg := shm.ThinkBudget{Open: true, Start: []int32{1}, End: []int32{2}}
	p, _ := newThinkBudget(&cfg)()
	row := []float32{3, 4, float32(math.Inf(-1)), 5}
	if err := p.Process(row); err != nil || row[2] != 0 || !math.IsInf(float64(row[0]), -1) || !math.IsInf(float64(row[3]), -1) {
		t.Errorf("row %v, %v", row, err)
	}
	if err := p.Process(make([]float32, 2)); err == nil {
		t.Error("an end token past the row: no error")
	}
	if err := p.Accept(3); err == nil {
		t.Error("accepted another token than the forced end tag")
	}
	var _ engine.LogitsProcessor = p
}
