package cuda

import (
	"slices"
	"testing"

	"github.com/lightllm-go/lightllm/pkg/engine"
	"github.com/lightllm-go/lightllm/pkg/model"
	"github.com/lightllm-go/lightllm/pkg/sampler"
)

// emuModel is the backend over the emulated device as pkg/engine sees it:
// the same Config/NewKV/Forward as Model, without the CUDA thread handling.
type emuModel struct {
	c   *core
	cpu *model.Model
}

func (m *emuModel) Config() model.Config { return m.c.cfg }

func (m *emuModel) NewKV(slots int) *model.KV {
	h := m.cpu.NewKV(0)
	m.c.newKV(slots, h)
	return h
}

func (m *emuModel) Forward(b *model.Batch, kv *model.KV, logits [][]float32) error {
	return m.c.forward(b, kv, logits, nil)
}

var _ engine.Forwarder = (*emuModel)(nil)

// generateAll runs requests to completion and returns each one's tokens.
func generateAll(t *testing.T, f engine.Forwarder, opts engine.Options, prompts [][]int32, maxNew int) map[uint64][]int32 {
	t.Helper()
	e, err := engine.New(f, opts)
	if err != nil {
		t.Fatal(err)
	}
	p := sampler.DefaultParams()
	p.MaxNewTokens = maxNew
	for i, pr := range prompts {
		if err := e.Add(engine.Request{ID: uint64(i + 1), Prompt: pr, Params: p}); err != nil {
			t.Fatal(err)
		}
	}
	out := map[uint64][]int32{}
	for finished, steps := 0, 0; finished < len(prompts); steps++ {
		if steps > 10000 {
			t.Fatal("engine does not finish")
		}
		outs, err := e.Step()
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range outs {
			if o.Token >= 0 {
				out[o.ID] = append(out[o.ID], o.Token)
			}
			if o.Finished {
				finished++
			}
		}
	}
	return out
}

// TestEmulatedEngine drives pkg/engine over the emulated backend and over
// the CPU model with a pool small enough to pause requests, chunked prefill
// and shared prompt prefixes (the radix cache hands slots across
// requests): the greedy outputs must be identical.
func TestEmulatedEngine(t *testing.T) {
	path := storiesPath(t, "stories260K-f32.gguf")
	cpu, err := model.Load(path, model.LoadOptions{Threads: 1, KVType: "f32", NoTokenizer: true})
	if err != nil {
		t.Fatal(err)
	}
	defer cpu.Close()
	core, _ := newEmuCore(t, cpu, Options{KVType: "f32"})
	prefix := []int32{1, 403, 407, 261, 378, 432, 383, 286}
	var prompts [][]int32
	for i := 0; i < 6; i++ {
		p := append(slices.Clone(prefix), int32(300+i), int32(310+2*i))
		if i%2 == 1 {
			p = append(p, 261, 378, 400) // longer prompts take several chunks
		}
		prompts = append(prompts, p)
	}
	opts := engine.Options{MaxTotalTokens: 160, ChunkedPrefillSize: 4, BatchMaxTokens: 8, SkipLogProbs: true}
	want := generateAll(t, cpu, opts, prompts, 24)
	got := generateAll(t, &emuModel{c: core, cpu: cpu}, opts, prompts, 24)
	for id, w := range want {
		if !slices.Equal(got[id], w) {
			t.Errorf("request %d: backend %v, CPU %v", id, got[id], w)
		}
	}
}
