// Package model loads decoder-only transformer LLMs (llama, mistral, qwen2,
// qwen3) from Hugging Face directories or GGUF files and runs their forward
// pass on the CPU over a token-granular KV store (LightLLM's TokenAttention).
package model

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"

	"github.com/lightllm-go/lightllm/pkg/gguf"
)

// Config is the architecture of a loaded model.
type Config struct {
	Arch           string // a registered family (family.go)
	Hidden         int
	Layers         int
	Heads          int
	KVHeads        int
	HeadDim        int
	RopeDim        int // dimensions of each head RoPE rotates (the first ones): HeadDim unless partial
	FFN            int
	Vocab          int
	MaxPos         int
	RMSEps         float32
	RopeTheta      float64
	RopeScaling    *RopeScaling
	TiedEmbeddings bool
	QKVBias        bool
	QKNorm         bool
	BOS            int32
	EOS            []int32 // from config + generation_config
	DType          string  // dominant weight type: f32 | f16 | bf16 | q8_0 | q4_0
	// Multipliers of the forward pass (granite); 0 means none, or the
	// default where one is stated.
	EmbedScale    float32 // token embeddings are multiplied by it
	ResidualScale float32 // attention and FFN outputs are multiplied by it before each residual add
	AttnScale     float32 // attention logit scale (0: 1/sqrt(HeadDim))
	LogitScale    float32 // output logits are divided by it
	// QScale, when set, multiplies q after RoPE, and the attention logits
	// are not scaled again (phi3, gemma: llama.cpp scales Qcur itself).
	QScale float32
	// Gemma's block: GELU (tanh) instead of SiLU in the gated FFN, RMSNorms
	// of the attention and FFN outputs (PostNorms), and sliding-window
	// attention on the layers LocalLayers marks: a query at position p sees
	// the keys at positions p-Window+1 .. p (llama.cpp's is_masked_swa).
	// Local layers rotate with RopeThetaLocal (0: RopeTheta) and, when
	// LocalRopeUnscaled, without RopeScaling (gemma3's global layers alone
	// are scaled).
	Act               string // "" (SiLU) | "gelu_tanh" | "swiglu_oai" (gpt-oss's clamped SwiGLU, experts only)
	PostNorms         bool
	Window            int
	LocalLayers       []bool // len Layers when Window > 0
	RopeThetaLocal    float64
	LocalRopeUnscaled bool
	// Soft-capping (gemma2), 0 for none: attention logits become
	// AttnSoftcap*tanh(logit/AttnSoftcap) inside flash attention, output
	// logits FinalSoftcap*tanh(logit/FinalSoftcap).
	AttnSoftcap, FinalSoftcap float32
	// Mixture of experts (Mixtral): Experts > 0 replaces every layer's
	// FFN by ExpertsUsed of Experts SwiGLU expert FFNs (FFN wide), chosen
	// per token by the router ffn_gate_inp's softmax probabilities, the
	// top ones in descending order, weighted by those probabilities —
	// renormalised over the chosen ones when ExpertsNorm (llama.cpp's
	// norm_w) — and summed in that order.
	// SharedFFN > 0 adds a shared expert (qwen2moe): a SwiGLU FFN that
	// wide every token runs, its output times the sigmoid of a gate row
	// (ffn_gate_inp_shexp), added to the experts' sum. With experts, FFN
	// is each expert's width.
	Experts, ExpertsUsed int
	ExpertsNorm          bool
	SharedFFN            int
	// ExpertsSoftmaxTopK (gpt-oss, llama.cpp's SOFTMAX_WEIGHT gating):
	// the experts are chosen by their raw router logits and weighted by
	// the softmax of the chosen ones' logits alone.
	ExpertsSoftmaxTopK bool
	// AttnSinks: every layer has a sink logit per query head that joins
	// the attention softmax without a value (gpt-oss).
	AttnSinks bool
}

// RopeScaling is a supported RoPE frequency scaling.
type RopeScaling struct {
	Type           string  // "llama3" | "linear" | "longrope" | "yarn"
	Factor         float64 // linear, yarn: positions divided by Factor
	LowFreqFactor  float64 // llama3
	HighFreqFactor float64 // llama3
	OriginalMaxPos int     // llama3, longrope; yarn: the trained context (n_ctx_orig_yarn)
	// LongRoPE (phi3): per-pair frequency divisors for contexts up to
	// OriginalMaxPos (short) and beyond (long), chosen at load by the
	// context the model runs at (LoadOptions.Context) as llama.cpp chooses
	// by n_ctx; cos and sin are multiplied by AttnFactor.
	ShortFactor, LongFactor []float32
	AttnFactor              float32 // also yarn: GGUF rope.scaling.attn_factor (0: 1)
}

func (c *Config) validate() error {
	if _, err := lookupFamily(c.Arch); err != nil {
		return err
	}
	switch {
	case c.Hidden <= 0 || c.Layers <= 0 || c.Heads <= 0 || c.KVHeads <= 0 || c.FFN <= 0 || c.Vocab <= 0:
		return fmt.Errorf("config has a non-positive size: %+v", *c)
	case c.Heads%c.KVHeads != 0:
		return fmt.Errorf("%d attention heads are not a multiple of %d KV heads", c.Heads, c.KVHeads)
	case c.HeadDim <= 0 || c.HeadDim%2 != 0:
		return fmt.Errorf("head dimension %d must be positive and even", c.HeadDim)
	case c.RopeDim <= 0 || c.RopeDim%2 != 0 || c.RopeDim > c.HeadDim:
		return fmt.Errorf("RoPE dimension %d must be positive, even and at most the head dimension %d", c.RopeDim, c.HeadDim)
	case c.RMSEps <= 0:
		return fmt.Errorf("rms_norm_eps %v must be positive", c.RMSEps)
	case c.RopeTheta <= 0:
		return fmt.Errorf("rope theta %v must be positive", c.RopeTheta)
	case c.Window < 0 || (c.Window > 0 && len(c.LocalLayers) != c.Layers):
		return fmt.Errorf("sliding window %d with %d of %d layers marked", c.Window, len(c.LocalLayers), c.Layers)
	case c.Experts < 0 || c.Experts > maxExperts || (c.Experts > 0 && (c.ExpertsUsed <= 0 || c.ExpertsUsed > c.Experts)):
		return fmt.Errorf("%d experts with %d used per token (want 1 <= used <= experts <= %d)", c.Experts, c.ExpertsUsed, maxExperts)
	}
	if c.MaxPos <= 0 {
		c.MaxPos = 2048
	}
	return nil
}

// hfConfig is the subset of config.json this package reads.
type hfConfig struct {
	ModelType         string          `json:"model_type"`
	Architectures     []string        `json:"architectures"`
	HiddenSize        int             `json:"hidden_size"`
	IntermediateSize  int             `json:"intermediate_size"`
	NumLayers         int             `json:"num_hidden_layers"`
	NumHeads          int             `json:"num_attention_heads"`
	NumKVHeads        int             `json:"num_key_value_heads"`
	HeadDim           int             `json:"head_dim"`
	VocabSize         int             `json:"vocab_size"`
	MaxPos            int             `json:"max_position_embeddings"`
	RMSNormEps        float64         `json:"rms_norm_eps"`
	RopeTheta         float64         `json:"rope_theta"`
	RopeScaling       json.RawMessage `json:"rope_scaling"`
	TieWordEmbeddings *bool           `json:"tie_word_embeddings"`
	HiddenAct         string          `json:"hidden_act"`
	BOSTokenID        json.RawMessage `json:"bos_token_id"`
	EOSTokenID        json.RawMessage `json:"eos_token_id"`
	TorchDType        string          `json:"torch_dtype"`
}

// parseIDs reads a token id given as a number, a list of numbers or null.
func parseIDs(raw json.RawMessage) ([]int32, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var one int32
	if err := json.Unmarshal(raw, &one); err == nil {
		return []int32{one}, nil
	}
	var many []int32
	if err := json.Unmarshal(raw, &many); err != nil {
		return nil, fmt.Errorf("token id %s: %w", raw, err)
	}
	return many, nil
}

func appendUnique(dst []int32, ids ...int32) []int32 {
	for _, id := range ids {
		dup := false
		for _, d := range dst {
			dup = dup || d == id
		}
		if !dup {
			dst = append(dst, id)
		}
	}
	return dst
}

// readHFConfig parses dir/config.json and dir/generation_config.json.
func readHFConfig(dir string) (Config, error) {
	path := filepath.Join(dir, "config.json")
	b, err := os.ReadFile(path)
	if err != nil {
		return Config{}, fmt.Errorf("model: %w", err)
	}
	var hc hfConfig
	if err := json.Unmarshal(b, &hc); err != nil {
		return Config{}, fmt.Errorf("model %s: %w", path, err)
	}
	c := Config{Arch: hc.ModelType, Hidden: hc.HiddenSize, Layers: hc.NumLayers, Heads: hc.NumHeads,
		KVHeads: hc.NumKVHeads, HeadDim: hc.HeadDim, FFN: hc.IntermediateSize, Vocab: hc.VocabSize,
		MaxPos: hc.MaxPos, RMSEps: float32(hc.RMSNormEps), RopeTheta: hc.RopeTheta, BOS: -1}
	if c.KVHeads == 0 {
		c.KVHeads = c.Heads
	}
	if c.HeadDim == 0 && c.Heads > 0 {
		c.HeadDim = c.Hidden / c.Heads
	}
	c.RopeDim = c.HeadDim // a family with partial rotary sets its own
	if c.RopeTheta == 0 {
		c.RopeTheta = 10000
	}
	if c.RMSEps == 0 {
		c.RMSEps = 1e-6
	}
	fam, err := lookupHFFamily(hc.ModelType)
	if err != nil {
		return Config{}, fmt.Errorf("model %s: %w", path, err)
	}
	c.Arch = fam.name
	if hc.TieWordEmbeddings != nil {
		c.TiedEmbeddings = *hc.TieWordEmbeddings
	}
	if c.RopeScaling, err = parseHFRopeScaling(hc.RopeScaling); err != nil {
		return Config{}, fmt.Errorf("model %s: %w", path, err)
	}
	if ids, err := parseIDs(hc.BOSTokenID); err != nil {
		return Config{}, fmt.Errorf("model %s: bos_token_id: %w", path, err)
	} else if len(ids) > 0 {
		c.BOS = ids[0]
	}
	eos, err := parseIDs(hc.EOSTokenID)
	if err != nil {
		return Config{}, fmt.Errorf("model %s: eos_token_id: %w", path, err)
	}
	c.EOS = appendUnique(nil, eos...)
	genPath := filepath.Join(dir, "generation_config.json")
	if gb, err := os.ReadFile(genPath); err == nil {
		var gc struct {
			BOS json.RawMessage `json:"bos_token_id"`
			EOS json.RawMessage `json:"eos_token_id"`
		}
		if err := json.Unmarshal(gb, &gc); err != nil {
			return Config{}, fmt.Errorf("model %s: %w", genPath, err)
		}
		geos, err := parseIDs(gc.EOS)
		if err != nil {
			return Config{}, fmt.Errorf("model %s: eos_token_id: %w", genPath, err)
		}
		c.EOS = appendUnique(c.EOS, geos...)
		if gbos, err := parseIDs(gc.BOS); err == nil && len(gbos) > 0 && c.BOS < 0 {
			c.BOS = gbos[0]
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		return Config{}, fmt.Errorf("model: %w", err)
	}
	if err := fam.checkHF(&hc, b, &c); err != nil {
		return Config{}, fmt.Errorf("model %s: %w", path, err)
	}
	if rs := c.RopeScaling; rs != nil && rs.Type == "longrope" && len(rs.ShortFactor) == 0 {
		return Config{}, fmt.Errorf("model %s: rope_scaling longrope is not supported for %s", path, c.Arch)
	}
	return c, nil
}

func parseHFRopeScaling(raw json.RawMessage) (*RopeScaling, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var rs struct {
		Type           string   `json:"type"`
		RopeType       string   `json:"rope_type"`
		Factor         float64  `json:"factor"`
		LowFreqFactor  float64  `json:"low_freq_factor"`
		HighFreqFactor float64  `json:"high_freq_factor"`
		OriginalMaxPos int      `json:"original_max_position_embeddings"`
		BetaFast       *float64 `json:"beta_fast"`
		BetaSlow       *float64 `json:"beta_slow"`
		AttnFactor     *float64 `json:"attention_factor"`
		MScale         *float64 `json:"mscale"`
		MScaleAllDim   *float64 `json:"mscale_all_dim"`
	}
	if err := json.Unmarshal(raw, &rs); err != nil {
		return nil, fmt.Errorf("rope_scaling: %w", err)
	}
	typ := rs.RopeType
	if typ == "" {
		typ = rs.Type
	}
	switch typ {
	case "default", "":
		return nil, nil
	case "linear":
		if rs.Factor <= 0 {
			return nil, fmt.Errorf("rope_scaling: linear factor %v", rs.Factor)
		}
		return &RopeScaling{Type: "linear", Factor: rs.Factor}, nil
	case "longrope", "su":
		// The factors live in the family's own config (family_phi3.go);
		// a family that does not fill them is refused in readHFConfig.
		return &RopeScaling{Type: "longrope"}, nil
	case "llama3":
		if rs.Factor <= 0 || rs.LowFreqFactor <= 0 || rs.HighFreqFactor <= rs.LowFreqFactor || rs.OriginalMaxPos <= 0 {
			return nil, fmt.Errorf("rope_scaling: bad llama3 parameters %s", raw)
		}
		return &RopeScaling{Type: "llama3", Factor: rs.Factor, LowFreqFactor: rs.LowFreqFactor,
			HighFreqFactor: rs.HighFreqFactor, OriginalMaxPos: rs.OriginalMaxPos}, nil
	case "yarn":
		// What llama.cpp's converter carries into GGUF (factor, original
		// context); YaRN's other knobs at their defaults only, since
		// llama.cpp would ignore them.
		switch {
		case rs.Factor <= 0:
			return nil, fmt.Errorf("rope_scaling: yarn factor %v", rs.Factor)
		case rs.BetaFast != nil && *rs.BetaFast != 32, rs.BetaSlow != nil && *rs.BetaSlow != 1:
			return nil, fmt.Errorf("rope_scaling: yarn beta_fast/beta_slow other than 32/1 are not supported")
		case rs.AttnFactor != nil, rs.MScale != nil, rs.MScaleAllDim != nil:
			return nil, fmt.Errorf("rope_scaling: yarn attention_factor/mscale/mscale_all_dim are not supported")
		}
		return &RopeScaling{Type: "yarn", Factor: rs.Factor, OriginalMaxPos: rs.OriginalMaxPos}, nil
	case "dynamic":
		return nil, fmt.Errorf("rope_scaling type \"dynamic\" (dynamic NTK) is not supported: llama.cpp has no such scaling to match")
	}
	return nil, fmt.Errorf("rope_scaling type %q is not supported (llama3, linear, yarn; longrope for phi3)", typ)
}

// Llama3FreqFactors returns the per-pair frequency divisors of Llama 3
// RoPE scaling, computed as llama.cpp's converter does for rope_freqs.
func Llama3FreqFactors(rs *RopeScaling, theta float64, headDim int) []float32 {
	lowWavelen := float64(rs.OriginalMaxPos) / rs.LowFreqFactor
	highWavelen := float64(rs.OriginalMaxPos) / rs.HighFreqFactor
	ff := make([]float32, headDim/2)
	for i := range ff {
		freq := 1 / math.Pow(theta, float64(2*i)/float64(headDim))
		wavelen := 2 * math.Pi / freq
		switch {
		case wavelen < highWavelen:
			ff[i] = 1
		case wavelen > lowWavelen:
			ff[i] = float32(rs.Factor)
		default:
			smooth := (float64(rs.OriginalMaxPos)/wavelen - rs.LowFreqFactor) / (rs.HighFreqFactor - rs.LowFreqFactor)
			ff[i] = float32(1 / ((1-smooth)/rs.Factor + smooth))
		}
	}
	return ff
}

// ggufConfig reads the architecture from GGUF metadata.
func ggufConfig(f *gguf.File) (Config, error) {
	arch, ok := f.String("general.architecture")
	if !ok {
		return Config{}, fmt.Errorf("missing general.architecture")
	}
	fam, err := lookupFamily(arch)
	if err != nil {
		return Config{}, err
	}
	u := func(key string, def int) int {
		if v, ok := f.Uint(arch + "." + key); ok {
			return int(v)
		}
		return def
	}
	c := Config{Arch: arch, Hidden: u("embedding_length", 0), Layers: u("block_count", 0),
		FFN: u("feed_forward_length", 0), Heads: u("attention.head_count", 0), MaxPos: u("context_length", 0),
		BOS: -1}
	c.KVHeads = u("attention.head_count_kv", c.Heads)
	if c.Heads > 0 {
		c.HeadDim = u("attention.key_length", c.Hidden/c.Heads)
	}
	if vd := u("attention.value_length", c.HeadDim); vd != c.HeadDim {
		return Config{}, fmt.Errorf("value head size %d differs from key head size %d", vd, c.HeadDim)
	}
	c.RopeDim = u("rope.dimension_count", c.HeadDim)
	eps, ok := f.Float(arch + ".attention.layer_norm_rms_epsilon")
	if !ok {
		eps = 1e-5
	}
	c.RMSEps = float32(eps)
	c.RopeTheta = 10000
	if v, ok := f.Float(arch + ".rope.freq_base"); ok {
		c.RopeTheta = v
	}
	if typ, ok := f.String(arch + ".rope.scaling.type"); ok && typ != "none" {
		factor, _ := f.Float(arch + ".rope.scaling.factor")
		switch {
		case factor <= 0 || (typ != "linear" && typ != "yarn"):
			return Config{}, fmt.Errorf("rope scaling %q (factor %v) is not supported (linear, yarn)", typ, factor)
		case typ == "linear":
			c.RopeScaling = &RopeScaling{Type: "linear", Factor: factor}
		default:
			if v, ok := f.Float(arch + ".rope.scaling.yarn_log_multiplier"); ok && v != 0 {
				return Config{}, fmt.Errorf("rope scaling yarn with yarn_log_multiplier %v is not supported", v)
			}
			rs := &RopeScaling{Type: "yarn", Factor: factor}
			if v, ok := f.Uint(arch + ".rope.scaling.original_context_length"); ok {
				rs.OriginalMaxPos = int(v)
			}
			if v, ok := f.Float(arch + ".rope.scaling.attn_factor"); ok {
				rs.AttnFactor = float32(v)
			}
			c.RopeScaling = rs
		}
	}
	// llama.cpp reads the expert counts for every architecture; the llama
	// graph (Mixtral) renormalises the chosen experts' weights.
	c.Experts, c.ExpertsUsed = u("expert_count", 0), u("expert_used_count", 0)
	c.ExpertsNorm = c.Experts > 0
	for _, key := range []string{"expert_shared_count", "expert_shared_feed_forward_length"} {
		if v := u(key, 0); v != 0 && fam.name == "llama" {
			return Config{}, fmt.Errorf("%s.%s %d (shared experts) is not supported for %s", arch, key, v, arch)
		}
	}
	if v, ok := f.Float(arch + ".expert_weights_scale"); ok && v != 0 && v != 1 && fam.name == "llama" {
		return Config{}, fmt.Errorf("%s.expert_weights_scale %v is not supported for %s", arch, v, arch)
	}
	if toks, ok := f.Strings("tokenizer.ggml.tokens"); ok {
		c.Vocab = len(toks)
	}
	c.Vocab = u("vocab_size", c.Vocab)
	if v, ok := f.Uint("tokenizer.ggml.bos_token_id"); ok {
		c.BOS = int32(v)
	}
	if v, ok := f.Uint("tokenizer.ggml.eos_token_id"); ok {
		c.EOS = appendUnique(c.EOS, int32(v))
	}
	if v, ok := f.Uint("tokenizer.ggml.eot_token_id"); ok {
		c.EOS = appendUnique(c.EOS, int32(v))
	}
	if fam.fromGGUF != nil {
		if err := fam.fromGGUF(f, &c); err != nil {
			return Config{}, err
		}
	}
	return c, nil
}
