package model

import (
	"bufio"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/lightllm-go/lightllm/pkg/gguf"
)

// gemma2Fixture is the gen-model gemma2 llama.cpp ran (testdata/README.md):
// four layers alternating local (window 32) and global, with soft-caps
// small enough that tanh bends (attention 2, final 0.5).
var gemma2Fixture = GenOptions{Arch: "gemma2", Hidden: 256, Layers: 4, Heads: 4, KVHeads: 2, FFN: 512, Vocab: 512, Seed: 23,
	SlidingWindow: 32, AttnSoftcap: 2, FinalSoftcap: 0.5}

// TestGemma2LlamaCpp: a gen-model gemma2 is bit-exact with llama.cpp from
// GGUF f16 and q8_0 and from the HF form on 24 prompts of 2-834 tokens
// (checkFamilyFixture).
func TestGemma2LlamaCpp(t *testing.T) {
	checkFamilyFixture(t, familyFixture{opts: gemma2Fixture,
		runs:  map[string]string{"f16": "llamacpp_gemma2_f16.jsonl", "q8_0": "llamacpp_gemma2_q8_0.jsonl"},
		forms: []string{"gguf-f16", "gguf-q8_0", "hf-f16"}})
}

// TestTanhf: tanhf returns glibc 2.36's tanhf bit for bit on
// testdata/glibc_tanhf.txt (500 arguments where rounding a float64 tanh
// differs, the branch edges, random ones). Checked once on all 2^32
// floats (per-2^24 block hashes against the C library's).
func TestTanhf(t *testing.T) {
	f, err := os.Open("testdata/glibc_tanhf.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	n := 0
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "#") || line == "" {
			continue
		}
		var xb, yb uint32
		if _, err := fmt.Sscanf(line, "%x %x", &xb, &yb); err != nil {
			t.Fatalf("%q: %v", line, err)
		}
		got := math.Float32bits(tanhf(math.Float32frombits(xb)))
		if got != yb && !(isNaN32(yb) && isNaN32(got)) {
			t.Errorf("tanhf(%08x) = %08x, glibc %08x", xb, got, yb)
		}
		n++
	}
	if n < 600 {
		t.Fatalf("only %d values", n)
	}
}

// TestGemma2Config: both forms read the same block (alternating local
// layers, soft-caps, q and embedding scales), the output head is the
// embedding table, and a GGUF without the keys gets llama.cpp's defaults.
func TestGemma2Config(t *testing.T) {
	o := gemma2Fixture
	o.DType = "f32"
	g, h := genBoth(t, o)
	for _, c := range []Config{g.Config(), h.Config()} {
		if c.Arch != "gemma2" || c.Window != 32 || !slices.Equal(c.LocalLayers, []bool{true, false, true, false}) ||
			c.AttnSoftcap != 2 || c.FinalSoftcap != 0.5 || c.QScale != 0.125 || c.EmbedScale != 16 || c.Act != "gelu_tanh" ||
			!c.PostNorms || c.QKNorm || !c.TiedEmbeddings || c.RopeThetaLocal != 0 {
			t.Errorf("config %+v", c)
		}
	}
	// llama.cpp's defaults when the file has no soft-caps or window.
	path := filepath.Join(t.TempDir(), "bare.gguf")
	w := gguf.NewWriter()
	w.Set("general.architecture", "gemma2")
	if err := w.WriteFile(path); err != nil {
		t.Fatal(err)
	}
	f, err := gguf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	c := Config{Hidden: 256, Heads: 4, HeadDim: 64, Layers: 3}
	if err := gemma2GGUF(f, &c); err != nil || c.AttnSoftcap != 50 || c.FinalSoftcap != 30 || c.Window != 4096 ||
		!slices.Equal(c.LocalLayers, []bool{true, false, true}) {
		t.Errorf("defaults: %v, soft-caps %v %v, window %d, local %v; want 50 30 4096", err, c.AttnSoftcap, c.FinalSoftcap, c.Window, c.LocalLayers)
	}
}
