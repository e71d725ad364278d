package model

import (
	"math"
	"path/filepath"
	"testing"
)

// TestYarnLogf: logf agrees with glibc 2.36's logf on the arguments YaRN
// takes (scale factors, RoPE bases, context lengths over 2π·beta), as
// printed by a C program calling logf (float32 bits: argument, result).
func TestYarnLogf(t *testing.T) {
	glibc := [][2]uint32{
		{0x3fc00000, 0x3ecf991f},
		{0x3fc00000, 0x3ecf991f},
		{0x40000000, 0x3f317218},
		{0x40000000, 0x3f317218},
		{0x40400000, 0x3f8c9f54},
		{0x40400000, 0x3f8c9f54},
		{0x40800000, 0x3fb17218},
		{0x40800000, 0x3fb17218},
		{0x40a00000, 0x3fce0210},
		{0x40a00000, 0x3fce0210},
		{0x41000000, 0x40051592},
		{0x41000000, 0x40051592},
		{0x41200000, 0x40135d8e},
		{0x41200000, 0x40135d8e},
		{0x41800000, 0x40317218},
		{0x41800000, 0x40317218},
		{0x41a00000, 0x403fba14},
		{0x41a00000, 0x403fba14},
		{0x42000000, 0x405dce9e},
		{0x42000000, 0x405dce9e},
		{0x42200000, 0x406c169a},
		{0x42200000, 0x406c169a},
		{0x42800000, 0x40851592},
		{0x42800000, 0x40851592},
		{0x461c4000, 0x41135d8e},
		{0x48f42400, 0x4151f533},
		{0x49742400, 0x415d0c55},
		{0x48127c00, 0x413eb1ba},
		{0x4a989680, 0x4176cc97},
		{0x4022f983, 0x3f6f4943},
		{0x42a2f983, 0x408cd077},
		{0x4122f983, 0x40148b5d},
		{0x43a2f983, 0x40b92cfd},
		{0x41a2f983, 0x4040e7e3},
		{0x4422f983, 0x40cf5b40},
		{0x4222f983, 0x406d4469},
		{0x44a2f983, 0x40e58983},
		{0x4322f983, 0x40a2feba},
		{0x45a2f983, 0x4108f305},
		{0x4422f983, 0x40cf5b40},
		{0x46a2f983, 0x411f2148},
	}
	for _, c := range glibc {
		x := math.Float32frombits(c[0])
		if got := logf(x); math.Float32bits(got) != c[1] {
			t.Errorf("logf(%g) = %08x, glibc %08x", x, math.Float32bits(got), c[1])
		}
	}
}

// yarnGen is the model of testdata/llamacpp_yarn.jsonl: qwen2 with YaRN
// factor 4 over a 512-token trained context, prompts up to 2,000 tokens.
// Made with
//
//	lightllm gen-model --arch qwen2 --hidden 256 --heads 4 --kv_heads 2 --layers 2 --ffn 512 \
//	    --vocab 600 --max_pos 4096 --dtype f32 --seed 9 --yarn_factor 4 --yarn_orig_ctx 512 --out yarn.gguf
//	node $DIR/greedy_kv.mjs yarn.gguf prompts.json 16 F16     (scripts/llamacpp/greedy_kv.mjs)
var yarnGen = GenOptions{Arch: "qwen2", Hidden: 256, Heads: 4, KVHeads: 2, Layers: 2, FFN: 512, Vocab: 600,
	MaxPos: 4096, DType: "f32", Seed: 9, YarnFactor: 4, YarnOrigCtx: 512}

// TestLlamaCppYarn: YaRN RoPE as llama.cpp computes it, from GGUF and from
// the HF form of the same model.
func TestLlamaCppYarn(t *testing.T) {
	dir := t.TempDir()
	gg, hf := filepath.Join(dir, "yarn.gguf"), filepath.Join(dir, "hf")
	if err := GenerateGGUF(gg, yarnGen); err != nil {
		t.Fatal(err)
	}
	if err := GenerateHF(hf, yarnGen); err != nil {
		t.Fatal(err)
	}
	for name, path := range map[string]string{"gguf": gg, "hf": hf} {
		t.Run(name, func(t *testing.T) {
			checkLogprobFixture(t, path, LoadOptions{Threads: 2, NoTokenizer: true}, "llamacpp_yarn.jsonl")
		})
	}
}
