package model

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/lightllm-go/lightllm/pkg/gguf"
)

func TestReadHFConfig(t *testing.T) {
	cases := []struct {
		name, config, gen string
		check             func(t *testing.T, c Config)
		wantErr           string
	}{
		{name: "defaults and eos merge",
			config: `{"model_type":"llama","hidden_size":64,"num_hidden_layers":2,"num_attention_heads":4,
				"intermediate_size":128,"vocab_size":300,"bos_token_id":1,"eos_token_id":2}`,
			gen: `{"eos_token_id":[2,7]}`,
			check: func(t *testing.T, c Config) {
				if c.KVHeads != 4 || c.HeadDim != 16 || c.RopeTheta != 10000 || c.BOS != 1 || !reflect.DeepEqual(c.EOS, []int32{2, 7}) {
					t.Errorf("config %+v", c)
				}
			}},
		{name: "llama3 rope scaling",
			config: `{"model_type":"llama","hidden_size":64,"num_hidden_layers":2,"num_attention_heads":4,"num_key_value_heads":2,
				"intermediate_size":128,"vocab_size":300,"rope_theta":500000,"eos_token_id":[128001,128009],
				"rope_scaling":{"rope_type":"llama3","factor":8.0,"low_freq_factor":1.0,"high_freq_factor":4.0,"original_max_position_embeddings":8192}}`,
			check: func(t *testing.T, c Config) {
				rs := c.RopeScaling
				if rs == nil || rs.Type != "llama3" || rs.Factor != 8 || rs.OriginalMaxPos != 8192 || len(c.EOS) != 2 {
					t.Errorf("config %+v scaling %+v", c, rs)
				}
			}},
		{name: "linear rope scaling", config: `{"model_type":"qwen2","rope_scaling":{"type":"linear","factor":2}}`,
			check: func(t *testing.T, c Config) {
				if c.RopeScaling == nil || c.RopeScaling.Type != "linear" || c.RopeScaling.Factor != 2 {
					t.Errorf("scaling %+v", c.RopeScaling)
				}
			}},
		{name: "yarn", config: `{"model_type":"qwen2","rope_scaling":{"type":"yarn","factor":4,"original_max_position_embeddings":32768}}`,
			check: func(t *testing.T, c Config) {
				if rs := c.RopeScaling; rs == nil || rs.Type != "yarn" || rs.Factor != 4 || rs.OriginalMaxPos != 32768 {
					t.Errorf("scaling %+v", c.RopeScaling)
				}
			}},
		{name: "yarn mscale unsupported", config: `{"model_type":"qwen2","rope_scaling":{"type":"yarn","factor":4,"mscale":0.7}}`, wantErr: "mscale"},
		{name: "dynamic ntk unsupported", config: `{"model_type":"llama","rope_scaling":{"type":"dynamic","factor":2}}`, wantErr: "dynamic"},
		{name: "gelu unsupported", config: `{"model_type":"llama","hidden_act":"gelu"}`, wantErr: "hidden_act"},
		{name: "bad json", config: `{"model_type":`, wantErr: "config.json"},
		{name: "bad eos", config: `{"model_type":"llama","eos_token_id":"x"}`, wantErr: "eos_token_id"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			os.WriteFile(filepath.Join(dir, "config.json"), []byte(c.config), 0o644)
			if c.gen != "" {
				os.WriteFile(filepath.Join(dir, "generation_config.json"), []byte(c.gen), 0o644)
			}
			cfg, err := readHFConfig(dir)
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("err %v, want %q", err, c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			c.check(t, cfg)
		})
	}
}

// hfLlama3InvFreq computes Llama 3's scaled inverse frequencies the way
// transformers' _compute_llama3_parameters does, as an independent
// reference for the per-pair divisors.
func hfLlama3InvFreq(theta float64, dim int, factor, low, high float64, orig int) []float64 {
	out := make([]float64, dim/2)
	lowWavelen, highWavelen := float64(orig)/low, float64(orig)/high
	for i := range out {
		inv := 1 / math.Pow(theta, float64(2*i)/float64(dim))
		wavelen := 2 * math.Pi / inv
		scaled := inv
		if wavelen > lowWavelen {
			scaled = inv / factor
		}
		smooth := (float64(orig)/wavelen - low) / (high - low)
		if wavelen >= highWavelen && wavelen <= lowWavelen {
			scaled = (1-smooth)*scaled/factor + smooth*scaled
		}
		out[i] = scaled
	}
	return out
}

func TestLlama3FreqFactors(t *testing.T) {
	rs := &RopeScaling{Type: "llama3", Factor: 8, LowFreqFactor: 1, HighFreqFactor: 4, OriginalMaxPos: 8192}
	ff := Llama3FreqFactors(rs, 500000, 128)
	ref := hfLlama3InvFreq(500000, 128, 8, 1, 4, 8192)
	for i, f := range ff {
		inv := 1 / math.Pow(500000, float64(2*i)/128)
		if got := inv / float64(f); math.Abs(got-ref[i]) > 1e-6*ref[i] {
			t.Errorf("pair %d: scaled frequency %g, transformers gives %g", i, got, ref[i])
		}
	}
	if ff[0] != 1 || ff[28] != 1 || ff[63] != 8 || !(ff[31] > 1 && ff[31] < 8) {
		t.Errorf("factors %v", ff)
	}
}

// TestLlama3RopeScalingHFvsGGUF: an HF model with rope_scaling llama3 and
// the GGUF form carrying rope_freqs.weight (as llama.cpp's converter
// writes it) give the same logits, which differ from the unscaled model.
func TestLlama3RopeScalingHFvsGGUF(t *testing.T) {
	dir := t.TempDir()
	o := smallOpts("llama", "f32")
	gp, hp := filepath.Join(dir, "m.gguf"), filepath.Join(dir, "hf")
	if err := GenerateGGUF(gp, o); err != nil {
		t.Fatal(err)
	}
	if err := GenerateHF(hp, o); err != nil {
		t.Fatal(err)
	}
	// HF: add rope_scaling to config.json.
	cfgPath := filepath.Join(hp, "config.json")
	var cfg map[string]any
	b, _ := os.ReadFile(cfgPath)
	json.Unmarshal(b, &cfg)
	cfg["rope_scaling"] = map[string]any{"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
		"high_freq_factor": 4.0, "original_max_position_embeddings": 64}
	b, _ = json.Marshal(cfg)
	os.WriteFile(cfgPath, b, 0o644)
	// GGUF: add rope_freqs.weight computed from transformers' formula.
	ref := hfLlama3InvFreq(10000, 16, 8, 1, 4, 64)
	ff := make([]float32, 8)
	for i := range ff {
		ff[i] = float32(1 / math.Pow(10000, float64(2*i)/16) / ref[i])
	}
	f, err := gguf.Open(gp)
	if err != nil {
		t.Fatal(err)
	}
	w := gguf.NewWriter()
	for _, k := range f.Keys() {
		v, _ := f.Value(k)
		w.Set(k, v)
	}
	for i := range f.Tensors {
		w.AddTensor(f.Tensors[i].Name, f.Tensors[i].Type, f.Tensors[i].Shape, f.TensorData(&f.Tensors[i]))
	}
	ffBytes := make([]byte, 0, 32)
	for _, v := range ff {
		u := math.Float32bits(v)
		ffBytes = append(ffBytes, byte(u), byte(u>>8), byte(u>>16), byte(u>>24))
	}
	w.AddTensor("rope_freqs.weight", gguf.F32, []uint64{8}, ffBytes)
	scaled := filepath.Join(dir, "scaled.gguf")
	if err := w.WriteFile(scaled); err != nil {
		t.Fatal(err)
	}
	f.Close()
	load := func(p string) *Model {
		m, err := Load(p, LoadOptions{Threads: 1, NoTokenizer: true, KVType: "f32"})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { m.Close() })
		return m
	}
	prompt := make([]int32, 40)
	for i := range prompt {
		prompt[i] = int32(3 + i*11%290)
	}
	lh, lg, plain := prefillLogits(t, load(hp), prompt), prefillLogits(t, load(scaled), prompt), prefillLogits(t, load(gp), prompt)
	if d := maxAbsDiff(lh, lg); d > 1e-4*(1+rms(lh)) {
		t.Errorf("HF llama3 scaling vs GGUF rope_freqs: max logit difference %g", d)
	}
	if d := maxAbsDiff(lh, plain); d < 1e-3 {
		t.Errorf("rope scaling had no effect (difference %g)", d)
	}
}
