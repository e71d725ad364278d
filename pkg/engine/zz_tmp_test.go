package engine_test

import (
	"fmt"
	"slices"
	"testing"

	"github.com/lightllm-go/lightllm/pkg/engine"
	"github.com/lightllm-go/lightllm/pkg/engine/enginetest"
)

func TestTmpTrace(t *testing.T) {
	p1 := prompt(3, 20)
	p2 := append(slices.Clone(p1), prompt(4, 11)[1:]...)
	reqs := []engine.Request{
		{ID: 0, Prompt: prompt(5, 10), Params: greedy(60)},
		{ID: 1, Prompt: p1, Params: greedy(5)},
		{ID: 2, Prompt: p2, Params: seeded(60, 9)},
	}
	f := enginetest.NewFakeModel(100, 256)
	f.ChunkRounding = true
	e, _ := engine.New(f, engine.Options{MaxTotalTokens: 120, MaxReqTotalLen: 100, PausedHeadroomSteps: 1})
	for _, r := range reqs {
		r.Params.IgnoreEOS = true
		e.Add(r)
	}
	for s := 0; e.HasWork(); s++ {
		outs, err := e.Step()
		if err != nil {
			t.Fatal(err)
		}
		line := ""
		for id := uint64(0); id < 3; id++ {
			if in, ok := e.Info(id); ok {
				line += " " + in.State.String() + ":" + itoa(in.KVLen) + "/" + itoa(in.PromptLen+in.Generated)
			} else {
				line += " done"
			}
		}
		st := e.Stats()
		t.Logf("step %d outs %d:%s cached %d", s, len(outs), line, st.KVCached)
	}
}

func itoa(n int) string { return fmt.Sprint(n) }
