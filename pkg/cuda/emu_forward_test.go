package cuda

import (
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lightllm-go/lightllm/pkg/model"
)

// forwarder is the Forward of *model.Model and of the GPU backend.
type forwarder interface {
	Forward(b *model.Batch, kv *model.KV, logits [][]float32) error
}

// coreForwarder adapts a core (over any device) to forwarder; argmax makes
// every other decode step use the device argmax instead of logits.
type coreForwarder struct {
	c *core
}

func (f coreForwarder) Forward(b *model.Batch, kv *model.KV, logits [][]float32) error {
	return f.c.forward(b, kv, logits, nil)
}

// newEmuCore loads cpu's weights onto an emulated device.
func newEmuCore(t testing.TB, cpu *model.Model, o Options) (*core, *emuDevice) {
	t.Helper()
	cfg := cpu.Config()
	r, err := o.resolve(cfg)
	if err != nil {
		t.Fatal(err)
	}
	emu := newEmu(t, r.wt, r.kvt)
	c := &core{cfg: cfg, opt: r, dev: emu}
	if err := c.loadWeights(cpu.Weights()); err != nil {
		t.Fatal(err)
	}
	if err := c.prepare(); err != nil {
		t.Fatal(err)
	}
	return c, emu
}

// comparison is how closely a backend followed the CPU engine.
type comparison struct {
	maxRel        float64 // max over rows of max|g-c| / max|c|
	agree, rows   int     // rows whose argmax matched
	argmaxChecked int     // of which through the device argmax
}

func (c comparison) String() string {
	return fmt.Sprintf("%d/%d argmax agree (%d via device argmax), max rel error %.3g", c.agree, c.rows, c.argmaxChecked, c.maxRel)
}

func argmax(x []float32) int32 {
	best, bv := 0, float32(math.Inf(-1))
	for i, v := range x {
		if v > bv {
			best, bv = i, v
		}
	}
	return int32(best)
}

func relErr(got, want []float32) float64 {
	var diff, scale float64
	for i := range want {
		diff = max(diff, math.Abs(float64(got[i])-float64(want[i])))
		scale = max(scale, math.Abs(float64(want[i])))
	}
	return diff / max(scale, 1e-30)
}

// seqState is one sequence of a scenario: its tokens and the KV slot of
// each position.
type seqState struct {
	tokens []int32
	slots  []int32
	done   int // tokens whose K/V are in the pool
}

// compareScenario drives the CPU engine and a backend through the same
// steps: three sequences prefilled in chunks next to decodes (chunked
// prefill), a fourth sharing the first one's prompt prefix through its
// slots (a radix-cache hit), slots drawn from a shuffled pool so sequences
// interleave, then decode steps fed the CPU's greedy tokens. gpuArgmax
// selects the device argmax on every other decode step.
func compareScenario(t testing.TB, cpu *model.Model, cpuKV *model.KV, g forwarder, gKV *model.KV, gArgmax func(*model.Batch, []int32) error,
	poolSlots, decodeSteps int, seed uint64) comparison {
	t.Helper()
	V := cpu.Config().Vocab
	rng := rand.New(rand.NewPCG(seed, 7))
	free := rng.Perm(poolSlots)
	take := func(n int) []int32 {
		out := make([]int32, n)
		for i := range out {
			out[i] = int32(free[0])
			free = free[1:]
		}
		return out
	}
	prompt := func(n int) []int32 {
		p := make([]int32, n)
		for i := range p {
			p[i] = int32(rng.IntN(V))
		}
		return p
	}
	seqs := []*seqState{{tokens: prompt(7)}, {tokens: prompt(1)}, {tokens: prompt(12)}}
	// step plans: for each sequence, how many new tokens (0: not in batch).
	type part struct {
		seq, n int
		want   bool
	}
	steps := [][]part{
		{{0, 7, true}, {1, 1, true}, {2, 5, false}},
		{{2, 7, true}, {0, 1, true}, {1, 1, true}},
		{{3, 0, true}, {0, 1, true}, {1, 1, true}, {2, 1, true}}, // seq 3 joins: n filled below
	}
	for i := 0; i < decodeSteps; i++ {
		steps = append(steps, []part{{0, 1, true}, {1, 1, true}, {2, 1, true}, {3, 1, true}})
	}
	var cmp comparison
	cpuLogits, gLogits := make([][]float32, 4), make([][]float32, 4)
	for i := range cpuLogits {
		cpuLogits[i], gLogits[i] = make([]float32, V), make([]float32, V)
	}
	ids := make([]int32, 4)
	for si, step := range steps {
		if si == 2 {
			// Sequence 3 = sequence 0's first 4 prompt tokens (their K/V
			// reused through sequence 0's slots) plus 3 tokens of its own.
			s0 := seqs[0]
			seqs = append(seqs, &seqState{tokens: append(append([]int32{}, s0.tokens[:4]...), prompt(3)...),
				slots: append([]int32{}, s0.slots[:4]...), done: 4})
			step[0].n = 3
		}
		b := &model.Batch{}
		for _, pt := range step {
			s := seqs[pt.seq]
			if len(s.slots) < s.done+pt.n {
				s.slots = append(s.slots, take(s.done+pt.n-len(s.slots))...)
			}
			start := len(b.Tokens)
			for p := s.done; p < s.done+pt.n; p++ {
				b.Tokens = append(b.Tokens, s.tokens[p])
				b.Positions = append(b.Positions, int32(p))
			}
			b.Seqs = append(b.Seqs, model.Seq{Start: start, Len: pt.n, Slots: s.slots[:s.done+pt.n], WantLogits: pt.want})
		}
		if err := cpu.Forward(b, cpuKV, cpuLogits); err != nil {
			t.Fatalf("step %d: CPU: %v", si, err)
		}
		useArgmax := gArgmax != nil && si >= 3 && si%2 == 1
		var err error
		if useArgmax {
			err = gArgmax(b, ids)
		} else {
			err = g.Forward(b, gKV, gLogits)
		}
		if err != nil {
			t.Fatalf("step %d: backend: %v", si, err)
		}
		for bi, pt := range step {
			s := seqs[pt.seq]
			s.done += pt.n
			if !pt.want {
				continue
			}
			want := argmax(cpuLogits[bi])
			got := ids[bi]
			if useArgmax {
				cmp.argmaxChecked++
			} else {
				got = argmax(gLogits[bi])
				cmp.maxRel = max(cmp.maxRel, relErr(gLogits[bi], cpuLogits[bi]))
			}
			cmp.rows++
			if got == want {
				cmp.agree++
			}
			if s.done == len(s.tokens) {
				s.tokens = append(s.tokens, want) // teacher forcing with the CPU's token
			}
		}
	}
	return cmp
}

func genModel(t testing.TB, o model.GenOptions) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), o.Arch+"-"+o.DType+".gguf")
	if err := model.GenerateGGUF(p, o); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestEmulatedForwardMatchesCPU runs the backend's host side over the
// emulated device against the CPU engine on real and generated models,
// in every weight/KV type combination that changes the code path.
func TestEmulatedForwardMatchesCPU(t *testing.T) {
	type tc struct {
		name   string
		path   func(t *testing.T) string
		cpuKV  string
		opt    Options
		maxRel float64
		all    bool // every argmax must agree
	}
	gen := func(arch, dtype string, kvHeads int) func(t *testing.T) string {
		return func(t *testing.T) string {
			return genModel(t, model.GenOptions{Arch: arch, Hidden: 64, Layers: 2, Heads: 8, KVHeads: kvHeads, FFN: 96,
				Vocab: 300, DType: dtype, Seed: 3})
		}
	}
	stories := func(name string) func(t *testing.T) string {
		return func(t *testing.T) string { return storiesPath(t, name) }
	}
	cases := []tc{
		{"stories gguf f32", stories("stories260K-f32.gguf"), "f32", Options{KVType: "f32"}, 1e-4, true},
		{"stories hf f32 (neox)", stories("hf"), "f32", Options{KVType: "f32"}, 1e-4, true},
		{"stories gguf f16 KV", stories("stories260K-f32.gguf"), "f16", Options{}, 5e-3, true},
		{"qwen2 biases", gen("qwen2", "f32", 2), "f32", Options{KVType: "f32"}, 1e-4, true},
		{"qwen3 q/k norm", gen("qwen3", "f32", 4), "f32", Options{KVType: "f32"}, 1e-4, true},
		{"llama bf16", gen("llama", "bf16", 2), "f32", Options{KVType: "f32"}, 0.05, false},
		{"llama bf16 split", gen("llama", "bf16", 2), "f32", Options{KVType: "f32", Split: true}, 2e-3, false},
		{"llama f16 split bf16 KV", gen("llama", "f16", 8), "f32", Options{KVType: "bf16", Split: true}, 0.02, false},
		{"mistral q8_0", gen("mistral", "q8_0", 2), "f16", Options{}, 0.05, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path := c.path(t)
			cpu, err := model.Load(path, model.LoadOptions{Threads: 1, KVType: c.cpuKV, NoTokenizer: true})
			if err != nil {
				t.Fatal(err)
			}
			defer cpu.Close()
			c.opt.MaxBatchTokens = 16 // below the first batch: the scratch must grow
			core, emu := newEmuCore(t, cpu, c.opt)
			const pool = 96
			h := cpu.NewKV(0)
			core.newKV(pool, h)
			argmaxFn := func(b *model.Batch, ids []int32) error { return core.forward(b, h, nil, ids) }
			got := compareScenario(t, cpu, cpu.NewKV(pool), coreForwarder{core}, h, argmaxFn, pool, 5, 11)
			t.Logf("%s: %v; launches %v", c.name, got, emu.launches)
			if got.maxRel > c.maxRel {
				t.Errorf("max relative error %.3g above %.3g", got.maxRel, c.maxRel)
			}
			if c.all && got.agree != got.rows || got.agree < got.rows*9/10 {
				t.Errorf("argmax agreement %d/%d", got.agree, got.rows)
			}
			if got.argmaxChecked == 0 || emu.launches["fold_rows"] == 0 && core.opt.Split {
				t.Errorf("paths not exercised: %v, launches %v", got, emu.launches)
			}
		})
	}
}

// TestEmulatedSplitIsMoreAccurate checks that split mode's remainder rows
// are used: the same bf16 model gets much closer to the CPU engine.
func TestEmulatedSplitIsMoreAccurate(t *testing.T) {
	path := genModel(t, model.GenOptions{Arch: "llama", Hidden: 64, Layers: 2, Heads: 4, KVHeads: 2, FFN: 128, Vocab: 300, DType: "bf16", Seed: 9})
	cpu, err := model.Load(path, model.LoadOptions{Threads: 1, KVType: "f32", NoTokenizer: true})
	if err != nil {
		t.Fatal(err)
	}
	defer cpu.Close()
	var rel [2]float64
	for i, split := range []bool{false, true} {
		core, _ := newEmuCore(t, cpu, Options{KVType: "f32", Split: split})
		h := cpu.NewKV(0)
		core.newKV(64, h)
		rel[i] = compareScenario(t, cpu, cpu.NewKV(64), coreForwarder{core}, h, nil, 64, 2, 5).maxRel
	}
	t.Logf("max relative error: plain bf16 %.3g, split %.3g", rel[0], rel[1])
	if rel[1] > rel[0]/8 {
		t.Errorf("split mode error %.3g is not well below plain bf16's %.3g", rel[1], rel[0])
	}
}

func TestEmulatedForwardErrors(t *testing.T) {
	path := storiesPath(t, "stories260K-f32.gguf")
	cpu, err := model.Load(path, model.LoadOptions{Threads: 1, NoTokenizer: true})
	if err != nil {
		t.Fatal(err)
	}
	defer cpu.Close()
	core, emu := newEmuCore(t, cpu, Options{})
	V := cpu.Config().Vocab
	h := cpu.NewKV(0)
	core.newKV(8, h)
	b := &model.Batch{Tokens: []int32{1}, Positions: []int32{0}, Seqs: []model.Seq{{Start: 0, Len: 1, Slots: []int32{3}, WantLogits: true}}}
	logits := [][]float32{make([]float32, V)}
	tests := []struct {
		name string
		run  func() error
		want string
	}{
		{"foreign KV", func() error { return core.forward(b, cpu.NewKV(8), logits, nil) }, "not made by this model"},
		{"short logits", func() error { return core.forward(b, h, [][]float32{make([]float32, 3)}, nil) }, "shorter than"},
		{"missing ids", func() error { return core.forward(b, h, nil, []int32{}) }, "ids has 0 entries"},
		{"slot outside pool", func() error {
			bb := *b
			bb.Seqs = []model.Seq{{Start: 0, Len: 1, Slots: []int32{8}, WantLogits: true}}
			return core.forward(&bb, h, logits, nil)
		}, "outside the KV pool"},
		{"pool too large", func() error {
			h2 := cpu.NewKV(0)
			core.newKV(core.maxKV+1, h2)
			return core.forward(b, h2, logits, nil)
		}, "KV slots requested"},
		{"out of memory", func() error {
			emu.capacity = emu.used // the next allocation fails
			core.maxKV = 1 << 20
			h3 := cpu.NewKV(0)
			core.newKV(4, h3)
			return core.forward(b, h3, logits, nil)
		}, "out of memory"},
	}
	for _, tc := range tests {
		err := tc.run()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one containing %q", tc.name, err, tc.want)
		}
	}
}

// TestKernelSignatures checks the parser against kernels.cu itself: every
// kernel the host can launch exists, in every type instantiation.
func TestKernelSignatures(t *testing.T) {
	emu := newEmu(t, dtF32, dtF16)
	for _, wt := range []dtype{dtF32, dtF16, dtBF16} {
		for _, kvt := range []dtype{dtF32, dtF16, dtBF16} {
			for k := kernel(0); k < numKernels; k++ {
				if _, ok := emu.sigs[kernelName(k, wt, kvt)]; !ok {
					t.Errorf("kernels.cu lacks %s", kernelName(k, wt, kvt))
				}
			}
		}
	}
	if got := emu.sigs["attention_kvf16_bf16"]; got != "plppplpppiiiif" {
		t.Errorf("attention signature %q", got)
	}
}

// TestEmulatedLongContext prefills a 300-token prompt in chunks of 128 (so
// attention runs over many 32-key chunks and the scratch grows past
// MaxBatchTokens) next to a short sequence, then decodes.
func TestEmulatedLongContext(t *testing.T) {
	path := storiesPath(t, "stories260K-f32.gguf")
	cpu, err := model.Load(path, model.LoadOptions{Threads: 1, KVType: "f32", NoTokenizer: true})
	if err != nil {
		t.Fatal(err)
	}
	defer cpu.Close()
	V := cpu.Config().Vocab
	core, _ := newEmuCore(t, cpu, Options{KVType: "f32", MaxBatchTokens: 16})
	const pool = 400
	h, cpuKV := cpu.NewKV(0), cpu.NewKV(pool)
	core.newKV(pool, h)
	rng := rand.New(rand.NewPCG(1, 2))
	perm := rng.Perm(pool)
	slots := make([]int32, pool)
	for i, p := range perm {
		slots[i] = int32(p)
	}
	long, short := slots[:320], slots[320:]
	tokens := make([]int32, 310)
	for i := range tokens {
		tokens[i] = int32(rng.IntN(V))
	}
	cl, gl := [][]float32{make([]float32, V), make([]float32, V)}, [][]float32{make([]float32, V), make([]float32, V)}
	var worst float64
	done := 0
	for _, n := range []int{128, 128, 44, 1, 1, 1} {
		b := &model.Batch{}
		for p := done; p < done+n; p++ {
			b.Tokens = append(b.Tokens, tokens[p])
			b.Positions = append(b.Positions, int32(p))
		}
		b.Seqs = []model.Seq{{Start: 0, Len: n, Slots: long[:done+n], WantLogits: true},
			{Start: n, Len: 1, Slots: short[:1], WantLogits: true}}
		b.Tokens = append(b.Tokens, tokens[done])
		b.Positions = append(b.Positions, 0)
		if err := cpu.Forward(b, cpuKV, cl); err != nil {
			t.Fatal(err)
		}
		if err := core.forward(b, h, gl, nil); err != nil {
			t.Fatal(err)
		}
		for i := range cl {
			worst = max(worst, relErr(gl[i], cl[i]))
			if argmax(gl[i]) != argmax(cl[i]) {
				t.Errorf("context %d, seq %d: argmax %d, CPU %d", done+n, i, argmax(gl[i]), argmax(cl[i]))
			}
		}
		done += n
	}
	t.Logf("max relative error over contexts up to %d: %.3g; scratch holds %d tokens", done, worst, core.sc.tok)
	if worst > 1e-4 {
		t.Errorf("max relative error %.3g", worst)
	}
	if core.sc.tok < 129 {
		t.Errorf("scratch did not grow: %d tokens", core.sc.tok)
	}
}
