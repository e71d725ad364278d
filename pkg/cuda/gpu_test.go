//go:build cuda

package cuda

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/lightllm-go/lightllm/pkg/model"
)

// These tests need a GPU. Without one they skip, unless
// LIGHTLLM_REQUIRE_GPU=1 (scripts/gpu-check.sh sets it) makes that a
// failure. LIGHTLLM_GPU_1B names a 1B-class model for the comparison and
// throughput runs; LIGHTLLM_GPU_REPORT a file that receives the results as
// markdown.

// H200's memory bandwidth by the datasheet, the decode roofline's ceiling.
const rooflineBytesPerSec = 4.8e12

func report(t *testing.T, format string, args ...any) {
	t.Helper()
	line := fmt.Sprintf(format, args...)
	t.Log(line)
	path := os.Getenv("LIGHTLLM_GPU_REPORT")
	if path == "" {
		return
	}
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		t.Errorf("report: %v", err)
		return
	}
	defer f.Close()
	fmt.Fprintln(f, line)
}

// loadPair loads path on the CPU (with cpuKV) and on the GPU.
func loadPair(t *testing.T, path, cpuKV string, o Options) (*model.Model, *Model) {
	t.Helper()
	cpu, err := model.Load(path, model.LoadOptions{KVType: cpuKV, NoTokenizer: true})
	if err != nil {
		t.Fatal(err)
	}
	g, err := Load(cpu, o)
	if err != nil {
		cpu.Close()
		if os.Getenv("LIGHTLLM_REQUIRE_GPU") == "1" {
			t.Fatalf("GPU load: %v", err)
		}
		t.Skipf("no usable GPU (%v); LIGHTLLM_REQUIRE_GPU=1 makes this a failure", err)
	}
	t.Cleanup(func() {
		if err := g.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
		cpu.Close()
	})
	return cpu, g
}

func model1B(t *testing.T) string {
	p := os.Getenv("LIGHTLLM_GPU_1B")
	if p == "" {
		t.Skip("LIGHTLLM_GPU_1B not set (scripts/gpu-check.sh generates the model)")
	}
	return p
}

func minAgreement() float64 {
	if v, err := strconv.ParseFloat(os.Getenv("LIGHTLLM_GPU_MIN_AGREE"), 64); err == nil {
		return v
	}
	return 0.99
}

// TestGPUStoriesGolden decodes 511 tokens greedily from BOS on the GPU and
// compares them with llama.cpp's (which the CPU engine reproduces exactly).
func TestGPUStoriesGolden(t *testing.T) {
	path := storiesPath(t, "stories260K-f32.gguf")
	b, err := os.ReadFile(filepath.Join(filepath.Dir(path), "golden_greedy_llamacpp.json"))
	if err != nil {
		t.Fatal(err)
	}
	var golden struct {
		Prompt    []int32 `json:"prompt_tokens"`
		Generated []int32 `json:"generated_tokens"`
	}
	if err := json.Unmarshal(b, &golden); err != nil {
		t.Fatal(err)
	}
	for _, kv := range []string{"f16", "f32"} {
		t.Run("kv_"+kv, func(t *testing.T) {
			_, g := loadPair(t, path, kv, Options{KVType: kv})
			n := len(golden.Prompt) + len(golden.Generated)
			h := g.NewKV(n)
			slots := rand.New(rand.NewPCG(1, 1)).Perm(n)
			sl := make([]int32, n)
			for i, s := range slots {
				sl[i] = int32(s)
			}
			toks := append([]int32{}, golden.Prompt...)
			ids := []int32{0}
			same := 0
			start := time.Now()
			for len(toks) < n {
				done := len(toks) - 1
				if len(toks) == len(golden.Prompt) {
					done = 0
				}
				bt := &model.Batch{Tokens: toks[done:], Positions: make([]int32, len(toks)-done),
					Seqs: []model.Seq{{Start: 0, Len: len(toks) - done, Slots: sl[:len(toks)], WantLogits: true}}}
				for i := range bt.Positions {
					bt.Positions[i] = int32(done + i)
				}
				if err := g.ForwardArgmax(bt, h, ids); err != nil {
					t.Fatal(err)
				}
				if same == len(toks)-len(golden.Prompt) && ids[0] == golden.Generated[same] {
					same++
				}
				toks = append(toks, ids[0])
			}
			report(t, "| stories260K golden (llama.cpp) | f32 weights, %s KV | %d/%d greedy tokens identical | %.0f tok/s |",
				kv, same, len(golden.Generated), float64(len(golden.Generated))/time.Since(start).Seconds())
			if same != len(golden.Generated) {
				t.Errorf("GPU greedy run leaves llama.cpp's at token %d", same)
			}
		})
	}
}

// TestGPUMatchesCPU runs the CPU engine and the GPU through the same
// batches (chunked prefill next to decodes, a shared prefix, interleaved
// slots, then greedy decode fed the CPU's tokens) and compares logits and
// argmax on every output row.
func TestGPUMatchesCPU(t *testing.T) {
	type tc struct {
		name    string
		path    func(t *testing.T) string
		cpuKV   string
		opt     Options
		decode  int
		maxRel  float64 // 0: report only
		minFrac float64
	}
	gen := func(arch string) func(t *testing.T) string {
		return func(t *testing.T) string {
			return genModel(t, model.GenOptions{Arch: arch, Hidden: 256, Layers: 2, Heads: 8, KVHeads: 2, FFN: 512,
				Vocab: 1000, DType: "f32", Seed: 5})
		}
	}
	stories := func(name string) func(t *testing.T) string {
		return func(t *testing.T) string { return storiesPath(t, name) }
	}
	cases := []tc{
		{"stories260K gguf", stories("stories260K-f32.gguf"), "f16", Options{}, 40, 5e-3, 1},
		{"stories260K gguf exact", stories("stories260K-f32.gguf"), "f32", Options{KVType: "f32"}, 40, 1e-4, 1},
		{"stories260K hf (neox)", stories("hf"), "f16", Options{}, 40, 5e-3, 1},
		{"qwen2 generated", gen("qwen2"), "f32", Options{KVType: "f32"}, 20, 1e-4, 1},
		{"qwen3 generated", gen("qwen3"), "f32", Options{KVType: "f32"}, 20, 1e-4, 1},
		{"1B bf16", model1B, "f16", Options{}, 50, 0, minAgreement()},
		{"1B bf16 split", model1B, "f16", Options{Split: true}, 50, 0, minAgreement()},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path := c.path(t)
			cpu, g := loadPair(t, path, c.cpuKV, c.opt)
			const pool = 1024
			h := g.NewKV(pool)
			argmaxFn := func(b *model.Batch, ids []int32) error { return g.ForwardArgmax(b, h, ids) }
			start := time.Now()
			got := compareScenario(t, cpu, cpu.NewKV(pool), g, h, argmaxFn, pool, c.decode, 17)
			frac := float64(got.agree) / float64(got.rows)
			report(t, "| %s | %s weights, %s KV, split %v | %d/%d argmax identical (%.2f%%; %d via device argmax) | max rel err %.2e | %.1fs |",
				c.name, g.c.opt.wt, g.c.opt.kvt, g.c.opt.Split, got.agree, got.rows, 100*frac, got.argmaxChecked, got.maxRel,
				time.Since(start).Seconds())
			if c.maxRel > 0 && got.maxRel > c.maxRel {
				t.Errorf("max relative error %.3g above %.3g", got.maxRel, c.maxRel)
			}
			if frac < c.minFrac {
				t.Errorf("argmax agreement %.4f below %.4f", frac, c.minFrac)
			}
		})
	}
}

// TestGPUThroughput measures prefill and greedy decode on the 1B model at
// batch 1, 16 and 64, and the share of the memory-bandwidth roofline the
// decode steps reach (weights plus the KV read per step, over step time).
func TestGPUThroughput(t *testing.T) {
	path := model1B(t)
	cpu, err := model.Load(path, model.LoadOptions{Threads: 1, NoTokenizer: true})
	if err != nil {
		t.Fatal(err)
	}
	defer cpu.Close()
	g, err := Load(cpu, Options{})
	if err != nil {
		if os.Getenv("LIGHTLLM_REQUIRE_GPU") == "1" {
			t.Fatal(err)
		}
		t.Skipf("no usable GPU: %v", err)
	}
	defer g.Close()
	cfg := g.Config()
	const prompt, decode = 512, 64
	_, weights := g.WeightBytes()
	info := g.Info()
	report(t, "")
	report(t, "Throughput, %s (%s, %d SMs), 1B model %s weights, %s KV, prompt %d, %d decode steps; roofline %.1f TB/s:",
		info.Name, info.Kernels, info.Multiprocessors, g.c.opt.wt, g.c.opt.kvt, prompt, decode, rooflineBytesPerSec/1e12)
	report(t, "")
	report(t, "| batch | prefill tok/s | decode tok/s (device argmax) | decode step ms | decode tok/s (logits to host) | decode GB/s | roofline share |")
	report(t, "|---|---|---|---|---|---|---|")
	rng := rand.New(rand.NewPCG(3, 3))
	for _, B := range []int{1, 16, 64} {
		ctxMax := prompt + decode + 8
		h := g.NewKV(B * ctxMax)
		slots := make([][]int32, B)
		for i := range slots {
			slots[i] = make([]int32, ctxMax)
			for j := range slots[i] {
				slots[i][j] = int32(i*ctxMax + j)
			}
		}
		toks := make([][]int32, B)
		for i := range toks {
			toks[i] = make([]int32, prompt)
			for j := range toks[i] {
				toks[i][j] = int32(rng.IntN(cfg.Vocab))
			}
		}
		ids := make([]int32, B)
		// Warm-up (first use of each GEMM shape), not timed.
		if err := g.ForwardArgmax(prefillBatch(toks[:1], slots[:1], 0, prompt), h, ids); err != nil {
			t.Fatal(err)
		}
		perChunk := max(1, 8192/prompt)
		start := time.Now()
		for s := 0; s < B; s += perChunk {
			e := min(B, s+perChunk)
			if err := g.ForwardArgmax(prefillBatch(toks[s:e], slots[s:e], 0, prompt), h, ids[s:e]); err != nil {
				t.Fatal(err)
			}
		}
		prefillS := time.Since(start).Seconds()
		for i := range toks {
			toks[i] = append(toks[i], ids[i])
		}
		step := func(logits [][]float32) error {
			ctx := len(toks[0])
			b := prefillBatch(toks, slots, ctx-1, ctx)
			if logits != nil {
				return g.Forward(b, h, logits)
			}
			if err := g.ForwardArgmax(b, h, ids); err != nil {
				return err
			}
			for i := range toks {
				toks[i] = append(toks[i], ids[i])
			}
			return nil
		}
		start = time.Now()
		for s := 0; s < decode-8; s++ {
			if err := step(nil); err != nil {
				t.Fatal(err)
			}
		}
		decodeS := time.Since(start).Seconds()
		avgCtx := float64(prompt) + float64(decode-8)/2
		logits := make([][]float32, B)
		for i := range logits {
			logits[i] = make([]float32, cfg.Vocab)
		}
		start = time.Now()
		const logitSteps = 8
		for s := 0; s < logitSteps; s++ {
			if err := step(logits); err != nil {
				t.Fatal(err)
			}
		}
		logitS := time.Since(start).Seconds()
		stepS := decodeS / float64(decode-8)
		bytes := float64(weights) + float64(B)*avgCtx*float64(g.KVBytesPerToken())
		report(t, "| %d | %.0f | %.0f | %.2f | %.0f | %.0f | %.1f%% |", B, float64(B*prompt)/prefillS,
			float64(B*(decode-8))/decodeS, 1e3*stepS, float64(B*logitSteps)/logitS, bytes/stepS/1e9,
			100*bytes/stepS/rooflineBytesPerSec)
	}
}

// prefillBatch makes one batch of every sequence's tokens [from, to).
func prefillBatch(toks, slots [][]int32, from, to int) *model.Batch {
	b := &model.Batch{}
	for i := range toks {
		start := len(b.Tokens)
		for p := from; p < to; p++ {
			b.Tokens = append(b.Tokens, toks[i][p])
			b.Positions = append(b.Positions, int32(p))
		}
		b.Seqs = append(b.Seqs, model.Seq{Start: start, Len: to - from, Slots: slots[i][:to], WantLogits: true})
	}
	return b
}
