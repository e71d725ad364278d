package model

import (
	"path/filepath"
	"testing"
)

// kquantModel is the random-weight model of the K-quant fixtures
// (testdata/README.md): row lengths multiples of 256, eight layers so the
// _M mixes put attn_v/ffn_down in q6_K on some layers (0, 3, 6, 7) only.
func kquantModel(dtype string) GenOptions {
	return GenOptions{Arch: "llama", Hidden: 256, Layers: 8, Heads: 4, KVHeads: 2, FFN: 512, Vocab: 512, DType: dtype, Seed: 7}
}

// TestLlamaCppKQuants: greedy decoding of files in llama.cpp's Q4_K_M,
// Q5_K_M and Q6_K mixes, computed natively on q4_K/q5_K/q6_K, must
// reproduce llama.cpp's tokens (testdata/llamacpp_kquant_*.jsonl; 32
// tokens per prompt, prompts of 2-464 tokens). All prompts share every
// batch; llama.cpp's q4_K gemm (tokens in fours) and gemv round
// differently, and each prompt's prefill must follow the same split.
func TestLlamaCppKQuants(t *testing.T) {
	for _, dtype := range []string{"q4_K_M", "q5_K_M", "q6_K"} {
		t.Run(dtype, func(t *testing.T) {
			runs := readRuns(t, filepath.Join("testdata", "llamacpp_kquant_"+dtype+".jsonl"))
			if len(runs) < 100 {
				t.Fatalf("%d runs in the fixture", len(runs))
			}
			path := filepath.Join(t.TempDir(), dtype+".gguf")
			if err := GenerateGGUF(path, kquantModel(dtype)); err != nil {
				t.Fatal(err)
			}
			m, err := Load(path, LoadOptions{Threads: 2, NoTokenizer: true})
			if err != nil {
				t.Fatal(err)
			}
			defer m.Close()
			ok := checkRuns(t, m, runs)
			t.Logf("%d of %d runs match llama.cpp", ok, len(runs))
		})
	}
}

// TestLlamaCppLowBit: as TestLlamaCppKQuants, on files in llama.cpp's
// Q2_K, Q3_K_M, IQ4_XS, IQ4_NL, Q4_1, Q5_0 and Q5_1 mixes (q2_K, q3_K,
// iq4_xs, iq4_nl, q4_1, q5_0, q5_1 with their q3_K/q4_K/q5_K/q6_K
// layers), against testdata/llamacpp_lowbit_*.jsonl. Prefills of 8 or
// more tokens take llama.cpp's IQ panel gemm on iq4_xs, q2_K's tokens in
// fours its repacked gemm: each prompt's tokens must follow the same
// kernels whatever else is in the batch.
func TestLlamaCppLowBit(t *testing.T) {
	for _, dtype := range []string{"q2_K", "q3_K_M", "iq4_xs", "iq4_nl", "q4_1", "q5_0", "q5_1"} {
		t.Run(dtype, func(t *testing.T) {
			all := readRuns(t, filepath.Join("testdata", "llamacpp_lowbit_"+dtype+".jsonl"))
			if len(all) < 100 {
				t.Fatalf("%d runs in the fixture", len(all))
			}
			var runs []llamaRun
			for i := 0; i < len(all); i += 4 {
				runs = append(runs, all[i])
			}
			path := filepath.Join(t.TempDir(), dtype+".gguf")
			if err := GenerateGGUF(path, kquantModel(dtype)); err != nil {
				t.Fatal(err)
			}
			m, err := Load(path, LoadOptions{Threads: 2, NoTokenizer: true})
			if err != nil {
				t.Fatal(err)
			}
			defer m.Close()
			ok := checkRuns(t, m, runs)
			t.Logf("%d of %d runs match llama.cpp", ok, len(runs))
		})
	}
}
