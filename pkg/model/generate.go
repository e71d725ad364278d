package model

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/lightllm-go/lightllm/pkg/gguf"
	"github.com/lightllm-go/lightllm/pkg/safetensors"
	"github.com/lightllm-go/lightllm/pkg/tensor"
)

// GenOptions describes a random-weight model (for tests and benchmarks).
type GenOptions struct {
	Arch                                    string // a registered family (family.go)
	Hidden, Layers, Heads, KVHeads, HeadDim int    // HeadDim 0: Hidden/Heads
	FFN, Vocab, MaxPos                      int    // MaxPos 0: 2048
	DType                                   string // f32 | f16 | bf16 | q8_0 | q4_0 | q4_K_M | q5_K_M | q6_K | mxfp4_moe ... (ggmlMixes)
	Seed                                    uint64
	Tied                                    bool    // output head shares the embedding
	RopeTheta                               float64 // 0: 10000
	RMSEps                                  float64 // 0: 1e-5
	// YaRN RoPE scaling (rope_scaling yarn), when YarnFactor > 0: the
	// positions' scale factor and the trained context it extends.
	YarnFactor  float64
	YarnOrigCtx int
	// Granite's multipliers (0: Granite 3.0's values); other families
	// ignore them.
	EmbedScale, ResidualScale, AttnScale, LogitScale float64
	// RopeOrigMaxPos > 0 gives a phi3 model LongRoPE with that original
	// context (MaxPos its extended one) and fixed short/long factors.
	RopeOrigMaxPos int
	// RopeDim is the rotated part of each head (0: all of it; phi3 writes
	// a partial one as partial_rotary_factor).
	RopeDim int
	// Gemma: SlidingWindow > 0 makes the layers SWAPattern marks (0: the
	// family's default) local, rotating with RopeThetaLocal (0: 10000);
	// RopeLinear > 0 is a linear RoPE scaling factor of the global layers.
	SlidingWindow, SWAPattern  int
	RopeThetaLocal, RopeLinear float64
	// Gemma 2's attention and final soft-caps (0: Gemma 2's 50 and 30).
	AttnSoftcap, FinalSoftcap float64
	// Mixture of experts (MoE families): Experts expert FFNs of FFN rows,
	// ExpertsUsed of them per token (0: Mixtral's 8 and 2).
	Experts, ExpertsUsed int
	// SharedFFN is the width of a shared expert (families that have one;
	// 0: 2*FFN).
	SharedFFN int
	// Tokenizer is a Hugging Face tokenizer directory the model carries
	// (tokenizer.json, tokenizer_config.json with its chat template)
	// instead of a synthetic vocabulary; Vocab becomes its size. HF
	// output only.
	Tokenizer string
}

func (o *GenOptions) normalize() (tensor.DType, *family, error) {
	fam, err := lookupFamily(o.Arch)
	if err != nil {
		return 0, nil, fmt.Errorf("gen-model: %w", err)
	}
	if o.KVHeads == 0 {
		o.KVHeads = o.Heads
	}
	if o.HeadDim == 0 && o.Heads > 0 {
		o.HeadDim = o.Hidden / o.Heads
	}
	if o.RopeDim == 0 {
		o.RopeDim = o.HeadDim
	}
	if o.MaxPos == 0 {
		o.MaxPos = 2048
	}
	if o.RopeTheta == 0 {
		o.RopeTheta = 10000
	}
	if o.RMSEps == 0 {
		o.RMSEps = 1e-5
	}
	if fam.tiedOnly {
		o.Tied = true
	}
	if fam.moe {
		if o.Experts == 0 {
			o.Experts = 8
		}
		if o.ExpertsUsed == 0 {
			o.ExpertsUsed = min(2, o.Experts)
		}
		if o.ExpertsUsed < 0 || o.ExpertsUsed > o.Experts || o.Experts > maxExperts {
			return 0, nil, fmt.Errorf("gen-model: %d experts used of %d (want 1 <= used <= experts <= %d)", o.ExpertsUsed, o.Experts, maxExperts)
		}
		if fam.sharedExpert && o.SharedFFN == 0 {
			o.SharedFFN = 2 * o.FFN
		}
		if !fam.sharedExpert && o.SharedFFN != 0 {
			return 0, nil, fmt.Errorf("gen-model: %s has no shared expert", o.Arch)
		}
	} else if o.Experts != 0 || o.ExpertsUsed != 0 || o.SharedFFN != 0 {
		return 0, nil, fmt.Errorf("gen-model: %s has no experts (--experts is for %s)", o.Arch, strings.Join(moeFamilies(), ", "))
	}
	switch {
	case o.Hidden <= 0 || o.Layers <= 0 || o.Heads <= 0 || o.KVHeads <= 0 || o.FFN <= 0:
		return 0, nil, fmt.Errorf("gen-model: sizes must be positive: %+v", *o)
	case o.Heads%o.KVHeads != 0:
		return 0, nil, fmt.Errorf("gen-model: %d heads are not a multiple of %d KV heads", o.Heads, o.KVHeads)
	case o.HeadDim <= 0 || o.HeadDim%2 != 0:
		return 0, nil, fmt.Errorf("gen-model: head dimension %d must be positive and even", o.HeadDim)
	case o.RopeDim <= 0 || o.RopeDim%2 != 0 || o.RopeDim > o.HeadDim || (o.RopeDim != o.HeadDim && !fam.ropeNeox):
		return 0, nil, fmt.Errorf("gen-model: RoPE dimension %d must be even, at most %d, and partial only for NEOX families", o.RopeDim, o.HeadDim)
	}
	dt, err := tensor.ParseDType(o.DType)
	if mix, ok := ggmlMixes[o.DType]; ok {
		dt, err = mix.base, nil
	}
	if err != nil {
		return 0, nil, fmt.Errorf("gen-model: %w (or a llama.cpp mix: %s)", err, mixNames())
	}
	if bl := dt.BlockLen(); bl > 1 {
		for _, n := range []int{o.Hidden, o.FFN, o.Heads * o.HeadDim, max(o.SharedFFN, bl)} {
			if n%bl != 0 {
				return 0, nil, fmt.Errorf("gen-model: %s needs every row length to be a multiple of %d; %d is not", o.DType, bl, n)
			}
		}
	}
	if o.Tokenizer != "" {
		return dt, fam, nil // Vocab was set from the tokenizer
	}
	if _, err := newGenVocab(o.Vocab); err != nil {
		return 0, nil, fmt.Errorf("gen-model: %w", err)
	}
	return dt, fam, nil
}

// ggmlMix is one of llama-quantize's file types that mix tensor types.
type ggmlMix struct {
	base     tensor.DType // the type of every matrix pick leaves alone
	fileType uint32       // general.file_type (llama_ftype)
	// pick is the type of a layer's matrix of the given kind ("attn_v",
	// which includes a fused attn_qkv as in llama-quant.cpp, "ffn_down",
	// "attn_output", ...) in layer of layers, with gqa query heads per KV
	// head; nil: all base.
	pick func(kind string, layer, layers, gqa int) tensor.DType
}

// ggmlMixes are the mixes gen-model writes, with llama-quant.cpp's
// llama_tensor_get_type rules for a dense model without an importance
// matrix: the output head is q6_K, the embedding table the base type, and
// some layers' matrices get more bits.
var ggmlMixes = map[string]ggmlMix{
	"q4_K_M": {tensor.Q4_K, 15, moreBitsMix(tensor.Q4_K)},
	"q5_K_M": {tensor.Q5_K, 17, moreBitsMix(tensor.Q5_K)},
	"q6_K":   {tensor.Q6_K, 18, nil},
	"q2_K": {tensor.Q2_K, 10, func(kind string, _, _, gqa int) tensor.DType {
		switch {
		case kind == "attn_v" && gqa >= 4:
			return tensor.Q4_K
		case kind == "attn_v" || kind == "ffn_down" || kind == "attn_output":
			return tensor.Q3_K
		}
		return tensor.Q2_K
	}},
	"q3_K_M": {tensor.Q3_K, 12, func(kind string, layer, layers, _ int) tensor.DType {
		switch {
		case kind == "attn_v" && layer < 2, kind == "ffn_down" && layer < layers/16:
			return tensor.Q5_K
		case kind == "attn_v" || kind == "ffn_down" || kind == "attn_output":
			return tensor.Q4_K
		}
		return tensor.Q3_K
	}},
	"iq4_nl": {tensor.IQ4_NL, 25, iq4Mix(tensor.IQ4_NL)},
	"iq4_xs": {tensor.IQ4_XS, 30, iq4Mix(tensor.IQ4_XS)},
	// MXFP4_MOE (llama-quantize's type for gpt-oss, the layout of its
	// released GGUF files): every 3-D expert tensor MXFP4, every other
	// matrix q8_0, the output head too.
	"mxfp4_moe": {tensor.Q8_0, 38, func(kind string, _, _, _ int) tensor.DType {
		if strings.HasSuffix(kind, "_exps") {
			return tensor.MXFP4
		}
		return tensor.Q8_0
	}},
	// What llama.cpp's converter writes from gpt-oss's released (MXFP4)
	// checkpoints with --outtype f16: the experts' MXFP4 blocks copied,
	// every other matrix f16; gen-model's HF form of it is such a
	// checkpoint (quantization_config mxfp4, *_blocks/_scales experts).
	"mxfp4_f16": {tensor.F16, 1, func(kind string, _, _, _ int) tensor.DType {
		if strings.HasSuffix(kind, "_exps") {
			return tensor.MXFP4
		}
		return tensor.F16
	}},
	"q4_1": {tensor.Q4_1, 3, nil},
	"q5_0": {tensor.Q5_0, 8, nil},
	"q5_1": {tensor.Q5_1, 9, nil},
}

// moreBitsMix is the _K_M rule: q6_K attn_v and ffn_down on the
// use_more_bits layers.
func moreBitsMix(base tensor.DType) func(string, int, int, int) tensor.DType {
	return func(kind string, layer, layers, _ int) tensor.DType {
		if (kind == "attn_v" || kind == "ffn_down") && useMoreBits(layer, layers) {
			return tensor.Q6_K
		}
		return base
	}
}

// iq4Mix is the IQ4_NL / IQ4_XS rule: q5_K attn_v with 4 or more query
// heads per KV head, q5_K ffn_down in the first eighth of the layers.
func iq4Mix(base tensor.DType) func(string, int, int, int) tensor.DType {
	return func(kind string, layer, layers, gqa int) tensor.DType {
		if kind == "attn_v" && gqa >= 4 || kind == "ffn_down" && layer < layers/8 {
			return tensor.Q5_K
		}
		return base
	}
}

// mixNames lists the mixes for messages.
func mixNames() string {
	names := make([]string, 0, len(ggmlMixes))
	for n := range ggmlMixes {
		names = append(names, n)
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}

// useMoreBits is llama-quant.cpp's rule for the layers whose attn_v and
// ffn_down get more bits in the _M mixes: the first and last eighth and
// every third layer between.
func useMoreBits(layer, layers int) bool {
	return layer < layers/8 || layer >= 7*layers/8 || (layer-layers/8)%3 == 2
}

// typeOf is the type tensor t is stored in for a model of type dt.
func (o *GenOptions) typeOf(t *genTensor, dt tensor.DType) tensor.DType {
	mix, ok := ggmlMixes[o.DType]
	if !ok || t.rows == 0 {
		return dt
	}
	if t.f32 {
		return hfStoreType(dt)
	}
	if t.name == "output.weight" || (o.Tied && t.name == "token_embd.weight") {
		if mix.base == tensor.Q8_0 || !mix.base.Quantized() {
			// llama-quant.cpp: q6_K unless the type is q8_0 already; the
			// converter's f16.
			return mix.base
		}
		return tensor.Q6_K
	}
	var layer int
	if _, err := fmt.Sscanf(t.name, "blk.%d.", &layer); err != nil || mix.pick == nil {
		return mix.base
	}
	kind := strings.TrimSuffix(t.name[strings.Index(t.name[4:], ".")+5:], ".weight")
	if kind == "attn_qkv" {
		kind = "attn_v"
	}
	return mix.pick(kind, layer, o.Layers, o.Heads/o.KVHeads)
}

// sqrt3 scales a unit-range uniform to unit standard deviation.
const sqrt3 = 1.7320508

// hfTensor is one tensor GenerateHF writes in a layout of its own
// (family.genHFTensors): its Hugging Face name and shape, and its values
// in row-major order, computed when it is written.
type hfTensor struct {
	name   string
	shape  []int64
	values func() []float32
	// raw, when set, gives the tensor's bytes of type dtype instead
	// (gpt-oss's MXFP4 blocks and scales, U8).
	raw   func() []byte
	dtype safetensors.DType
}

// genTensor is one weight of a generated model, named as in GGUF.
type genTensor struct {
	name       string
	rows, cols int     // rows == 0: a vector of cols values
	std        float32 // spread of the uniform values
	center     float32 // 1 for norm weights
	ropeHeads  int     // > 0: q/k rows to permute to GGUF's adjacent-pair RoPE layout
	// experts > 0: a stack of that many [rows x cols] matrices, one 3-D
	// tensor in GGUF (row r of expert e is row e*rows+r), one tensor per
	// expert in Hugging Face form.
	experts int
	// f32: GGUF stores it as f32 whatever the model's type (a router, as
	// llama.cpp's converter and llama-quantize keep it), holding the
	// values the Hugging Face form stores.
	f32 bool
}

// genRows is the number of rows the generator produces for t.
func (t *genTensor) genRows() int { return max(t.rows, 1) * max(t.experts, 1) }

func (o *GenOptions) tensors(fam *family) []genTensor {
	H, qDim, kvDim := o.Hidden, o.Heads*o.HeadDim, o.KVHeads*o.HeadDim
	lin := func(rows, cols int) float32 { return float32(0.5 / math.Sqrt(float64(cols))) }
	ts := []genTensor{{name: "token_embd.weight", rows: o.Vocab, cols: H, std: 0.5}}
	if fam.genEmbedStd != 0 {
		ts[0].std = fam.genEmbedStd
	}
	for i := 0; i < o.Layers; i++ {
		p := fmt.Sprintf("blk.%d.", i)
		ts = append(ts, genTensor{name: p + "attn_norm.weight", cols: H, std: 0.05, center: 1})
		if fam.fusedProj { // NEOX RoPE: no q/k row permutation
			ts = append(ts, genTensor{name: p + "attn_qkv.weight", rows: qDim + 2*kvDim, cols: H, std: lin(qDim, H)})
		} else {
			ts = append(ts,
				genTensor{name: p + "attn_q.weight", rows: qDim, cols: H, std: lin(qDim, H), ropeHeads: o.Heads},
				genTensor{name: p + "attn_k.weight", rows: kvDim, cols: H, std: lin(kvDim, H), ropeHeads: o.KVHeads},
				genTensor{name: p + "attn_v.weight", rows: kvDim, cols: H, std: lin(kvDim, H)})
		}
		ts = append(ts, genTensor{name: p + "attn_output.weight", rows: H, cols: qDim, std: lin(H, qDim)})
		if fam.outBias {
			ts = append(ts, genTensor{name: p + "attn_output.bias", cols: H, std: 0.05})
		}
		if fam.sinks {
			// Of the order of the attention logits, so that the sink
			// takes a visible share of every softmax.
			ts = append(ts, genTensor{name: p + "attn_sinks.weight", cols: o.Heads, std: 1})
		}
		if fam.qkvBias {
			ts = append(ts,
				genTensor{name: p + "attn_q.bias", cols: qDim, std: 0.05, ropeHeads: o.Heads},
				genTensor{name: p + "attn_k.bias", cols: kvDim, std: 0.05, ropeHeads: o.KVHeads},
				genTensor{name: p + "attn_v.bias", cols: kvDim, std: 0.05})
		}
		if fam.qkNorm {
			qn, kn := o.HeadDim, o.HeadDim
			if fam.qkNormFull {
				qn, kn = qDim, kvDim
			}
			ts = append(ts,
				genTensor{name: p + "attn_q_norm.weight", cols: qn, std: 0.05, center: 1},
				genTensor{name: p + "attn_k_norm.weight", cols: kn, std: 0.05, center: 1})
		}
		ts = append(ts, genTensor{name: p + fam.ffnNormName() + ".weight", cols: H, std: 0.05, center: 1})
		if fam.moe {
			ts = append(ts,
				genTensor{name: p + "ffn_gate_inp.weight", rows: o.Experts, cols: H, std: 1 / float32(math.Sqrt(float64(H))), f32: true},
				genTensor{name: p + "ffn_gate_exps.weight", rows: o.FFN, cols: H, std: lin(o.FFN, H), experts: o.Experts},
				genTensor{name: p + "ffn_up_exps.weight", rows: o.FFN, cols: H, std: lin(o.FFN, H), experts: o.Experts},
				genTensor{name: p + "ffn_down_exps.weight", rows: H, cols: o.FFN, std: lin(H, o.FFN), experts: o.Experts})
			if fam.expertBias {
				// GGUF keeps biases f32 (the converter's rule for every
				// tensor not named .weight); a stack of expert biases is
				// one [experts x n] tensor in both forms.
				ts = append(ts,
					genTensor{name: p + "ffn_gate_inp.bias", cols: o.Experts, std: 0.5},
					genTensor{name: p + "ffn_gate_exps.bias", rows: o.Experts, cols: o.FFN, std: 0.05, f32: true},
					genTensor{name: p + "ffn_up_exps.bias", rows: o.Experts, cols: o.FFN, std: 0.05, f32: true},
					genTensor{name: p + "ffn_down_exps.bias", rows: o.Experts, cols: H, std: 0.05, f32: true})
			}
			if fam.sharedExpert {
				F := o.SharedFFN
				ts = append(ts,
					genTensor{name: p + "ffn_gate_inp_shexp.weight", rows: 1, cols: H, std: 1 / float32(math.Sqrt(float64(H))), f32: true},
					genTensor{name: p + "ffn_gate_shexp.weight", rows: F, cols: H, std: lin(F, H)},
					genTensor{name: p + "ffn_up_shexp.weight", rows: F, cols: H, std: lin(F, H)},
					genTensor{name: p + "ffn_down_shexp.weight", rows: H, cols: F, std: lin(H, F)})
			}
		} else if fam.fusedProj { // gate rows first, then up
			ts = append(ts, genTensor{name: p + "ffn_up.weight", rows: 2 * o.FFN, cols: H, std: lin(o.FFN, H)})
		} else {
			ts = append(ts,
				genTensor{name: p + "ffn_gate.weight", rows: o.FFN, cols: H, std: lin(o.FFN, H)},
				genTensor{name: p + "ffn_up.weight", rows: o.FFN, cols: H, std: lin(o.FFN, H)})
		}
		if !fam.moe {
			ts = append(ts, genTensor{name: p + "ffn_down.weight", rows: H, cols: o.FFN, std: lin(H, o.FFN)})
		}
		if fam.postNorms {
			ts = append(ts, genTensor{name: p + "post_attention_norm.weight", cols: H, std: 0.05, center: 1},
				genTensor{name: p + "post_ffw_norm.weight", cols: H, std: 0.05, center: 1})
		}
	}
	ts = append(ts, genTensor{name: "output_norm.weight", cols: H, std: 0.05, center: 1})
	if fam.normShift {
		// Stored as w of (1 + w): GGUF's w + 1 is made from them as the
		// converter makes it (GenerateGGUF).
		for i := range ts {
			if ts[i].center == 1 {
				ts[i].center = 0
			}
		}
	}
	if !o.Tied {
		ts = append(ts, genTensor{name: "output.weight", rows: o.Vocab, cols: H, std: lin(o.Vocab, H)})
	}
	return ts
}

// row fills dst with row r (in Hugging Face order) of tensor t. Every row
// has its own generator so rows can be produced in any order.
func (o *GenOptions) row(t *genTensor, r int, dst []float32) {
	h := fnv.New64a()
	io.WriteString(h, t.name)
	rng := rand.New(rand.NewPCG(o.Seed^h.Sum64(), uint64(r)))
	for i := range dst {
		dst[i] = t.center + (rng.Float32()*2-1)*t.std*sqrt3
	}
}

// values is row r rounded to what a model of type dt stores: matrices
// through dt itself, vectors (GGUF keeps them f32) through f16/bf16 when
// dt is one of those, so the GGUF and HF forms hold identical numbers.
func (o *GenOptions) values(t *genTensor, r int, dst []float32, dt tensor.DType) {
	o.row(t, r, dst)
	round := dt
	if t.rows == 0 && dt.Quantized() {
		round = tensor.F32
	}
	if round == tensor.F32 {
		return
	}
	enc, _ := tensor.Quantize(round, dst) // row lengths were validated
	tensor.Dequantize(round, enc, dst)
}

// ggufRow maps row r of a GGUF q/k weight to the Hugging Face row it holds:
// llama.cpp's converter interleaves the two rotate-half halves of each head
// into adjacent pairs.
func ggufRow(r, heads, rows int) int {
	hd := rows / heads
	h, j := r/hd, r%hd
	return h*hd + (j%2)*(hd/2) + j/2
}

// GenerateGGUF writes a random-weight model as a GGUF v3 file that
// llama.cpp can load, with an embedded SentencePiece vocabulary.
func GenerateGGUF(path string, o GenOptions) error {
	w, err := ggufWriter(o)
	if err != nil {
		return err
	}
	if err := w.WriteFile(path); err != nil {
		return fmt.Errorf("gen-model: %w", err)
	}
	return nil
}

// ggufWriter prepares the GGUF image of a random-weight model; its tensors
// are computed while it is written (to a file, or to memory for builtin
// models).
func ggufWriter(o GenOptions) (*gguf.Writer, error) {
	if o.Tokenizer != "" {
		return nil, fmt.Errorf("gen-model: --tokenizer writes Hugging Face directories only (--hf_out), not GGUF")
	}
	dt, fam, err := o.normalize()
	if err != nil {
		return nil, err
	}
	vocab, _ := newGenVocab(o.Vocab)
	arch := fam.gguf()
	w := gguf.NewWriter()
	w.Set("general.architecture", arch)
	w.Set("general.name", "lightllm-random-"+o.Arch)
	fileType := map[tensor.DType]uint32{tensor.F32: 0, tensor.F16: 1, tensor.Q4_0: 2, tensor.Q8_0: 7,
		tensor.Q4_K: 14, tensor.Q5_K: 16, tensor.Q6_K: 18, tensor.BF16: 32}[dt]
	if mix, ok := ggmlMixes[o.DType]; ok {
		fileType = mix.fileType
	}
	w.Set("general.file_type", fileType)
	w.Set(arch+".context_length", uint32(o.MaxPos))
	w.Set(arch+".embedding_length", uint32(o.Hidden))
	w.Set(arch+".block_count", uint32(o.Layers))
	w.Set(arch+".feed_forward_length", uint32(o.FFN))
	w.Set(arch+".attention.head_count", uint32(o.Heads))
	w.Set(arch+".attention.head_count_kv", uint32(o.KVHeads))
	w.Set(arch+".attention.key_length", uint32(o.HeadDim))
	w.Set(arch+".attention.value_length", uint32(o.HeadDim))
	w.Set(arch+".rope.dimension_count", uint32(o.RopeDim))
	w.Set(arch+".rope.freq_base", float32(o.RopeTheta))
	if o.YarnFactor > 0 {
		w.Set(arch+".rope.scaling.type", "yarn")
		w.Set(arch+".rope.scaling.factor", float32(o.YarnFactor))
		w.Set(arch+".rope.scaling.original_context_length", uint32(o.YarnOrigCtx))
	}
	w.Set(arch+".attention.layer_norm_rms_epsilon", float32(o.RMSEps))
	w.Set(arch+".vocab_size", uint32(o.Vocab))
	if fam.moe {
		genExpertsGGUF(w, arch, &o)
	}
	if fam.genGGUF != nil {
		fam.genGGUF(w, &o)
	}
	w.Set("tokenizer.ggml.model", "llama")
	w.Set("tokenizer.ggml.tokens", vocab.tokens)
	w.Set("tokenizer.ggml.scores", vocab.scores)
	w.Set("tokenizer.ggml.token_type", vocab.types)
	w.Set("tokenizer.ggml.bos_token_id", uint32(1))
	w.Set("tokenizer.ggml.eos_token_id", uint32(2))
	w.Set("tokenizer.ggml.unknown_token_id", uint32(0))
	w.Set("tokenizer.ggml.add_bos_token", true)
	w.Set("tokenizer.ggml.add_eos_token", false)
	if fam.chatTemplate != "" {
		w.Set("tokenizer.chat_template", fam.chatTemplate)
	}
	for _, t := range o.tensors(fam) {
		t := t
		typ, ggmlType := tensor.F32, gguf.F32
		tdt := o.typeOf(&t, dt)
		if t.rows > 0 && !t.f32 {
			typ, ggmlType = tdt, ggufType(tdt)
		}
		shape := []uint64{uint64(t.cols)}
		rows := t.genRows()
		if t.rows > 0 {
			shape = append(shape, uint64(t.rows))
		}
		if t.experts > 0 {
			shape = append(shape, uint64(t.experts))
		}
		// GGUF files of adjacent-pair RoPE families store q/k in that order.
		permute := t.ropeHeads > 0 && !fam.ropeNeox
		w.AddTensorFunc(t.name, ggmlType, shape, func(out io.Writer) error {
			buf := make([]float32, t.cols)
			var tmp []float32
			for r := 0; r < rows; r++ {
				switch {
				case permute && t.rows > 0:
					o.values(&t, ggufRow(r, t.ropeHeads, t.rows), buf, tdt)
				case permute:
					// A bias vector is permuted like the rows it belongs to.
					tmp = make([]float32, t.cols)
					o.values(&t, 0, tmp, tdt)
					for i := range buf {
						buf[i] = tmp[ggufRow(i, t.ropeHeads, t.cols)]
					}
				default:
					o.values(&t, r, buf, tdt)
				}
				if fam.normShift && t.rows == 0 && strings.HasSuffix(t.name, "norm.weight") {
					shiftNorm(buf, hfStoreType(dt))
				}
				enc, err := tensor.Quantize(typ, buf)
				if err != nil {
					return err
				}
				if _, err := out.Write(enc); err != nil {
					return err
				}
			}
			return nil
		})
	}
	return w, nil
}

// hfStoreType is the type GenerateHF stores a model of type dt in: f16 and
// bf16 as themselves, everything else as f32.
func hfStoreType(dt tensor.DType) tensor.DType {
	if dt == tensor.F16 || dt == tensor.BF16 {
		return dt
	}
	return tensor.F32
}

func ggufType(dt tensor.DType) gguf.GGMLType {
	return map[tensor.DType]gguf.GGMLType{tensor.F32: gguf.F32, tensor.F16: gguf.F16, tensor.BF16: gguf.BF16,
		tensor.Q8_0: gguf.Q8_0, tensor.Q4_0: gguf.Q4_0, tensor.Q4_K: gguf.Q4_K, tensor.Q5_K: gguf.Q5_K, tensor.Q6_K: gguf.Q6_K,
		tensor.Q4_1: gguf.Q4_1, tensor.Q5_0: gguf.Q5_0, tensor.Q5_1: gguf.Q5_1, tensor.Q2_K: gguf.Q2_K, tensor.Q3_K: gguf.Q3_K,
		tensor.IQ4_NL: gguf.IQ4_NL, tensor.IQ4_XS: gguf.IQ4_XS, tensor.MXFP4: gguf.MXFP4}[dt]
}

// GenerateHF writes the same random model as a Hugging Face directory:
// config.json, generation_config.json, tokenizer files and
// model.safetensors. Quantized types are stored as f32 holding exactly the
// dequantized weights, so both forms describe one model.
func GenerateHF(dir string, o GenOptions) error {
	var rt *realTokenizer
	if o.Tokenizer != "" {
		var err error
		if rt, err = loadRealTokenizer(o.Tokenizer); err != nil {
			return err
		}
		o.Vocab = rt.vocab
	}
	dt, fam, err := o.normalize()
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("gen-model: %w", err)
	}
	if rt != nil {
		err = rt.copyFiles(dir)
	} else {
		vocab, _ := newGenVocab(o.Vocab)
		err = vocab.writeHFTokenizer(dir)
	}
	if err != nil {
		return fmt.Errorf("gen-model: %w", err)
	}
	if fam.chatTemplate != "" && rt == nil { // a real tokenizer brings its own
		if err := os.WriteFile(filepath.Join(dir, "chat_template.jinja"), []byte(fam.chatTemplate), 0o644); err != nil {
			return fmt.Errorf("gen-model: %w", err)
		}
	}
	hfType := hfStoreType(dt)
	stDType := map[tensor.DType]safetensors.DType{tensor.F16: safetensors.F16, tensor.BF16: safetensors.BF16, tensor.F32: safetensors.F32}[hfType]
	var wts []safetensors.WriteTensor
	ts := o.tensors(fam)
	if fam.genHFTensors != nil {
		var custom []hfTensor
		custom, ts = fam.genHFTensors(&o, ts, dt)
		for _, ct := range custom {
			ct := ct
			if ct.raw != nil {
				wts = append(wts, safetensors.WriteTensor{Name: ct.name, DType: ct.dtype, Shape: ct.shape,
					Fill: func(out io.Writer) error {
						_, err := out.Write(ct.raw())
						return err
					}})
				continue
			}
			wts = append(wts, safetensors.WriteTensor{Name: ct.name, DType: stDType, Shape: ct.shape,
				Fill: func(out io.Writer) error {
					enc, err := tensor.Quantize(hfType, ct.values())
					if err != nil {
						return err
					}
					_, err = out.Write(enc)
					return err
				}})
		}
	}
	for _, t := range ts {
		t := t
		shape := []int64{int64(t.cols)}
		if t.rows > 0 {
			shape = []int64{int64(t.rows), int64(t.cols)}
		}
		// A stack of experts is one tensor per expert (rows r0.. of the
		// generator's rows).
		for e := range max(t.experts, 1) {
			name, r0 := t.name, 0
			if t.experts > 0 {
				name, r0 = fmt.Sprintf("%s.%d.weight", strings.TrimSuffix(t.name, ".weight"), e), e*t.rows
			}
			wts = append(wts, safetensors.WriteTensor{Name: fam.hfName(name), DType: stDType, Shape: shape,
				Fill: func(out io.Writer) error {
					buf := make([]float32, t.cols)
					for r := r0; r < r0+max(t.rows, 1); r++ {
						o.values(&t, r, buf, o.typeOf(&t, dt))
						enc, err := tensor.Quantize(hfType, buf)
						if err != nil {
							return err
						}
						if _, err := out.Write(enc); err != nil {
							return err
						}
					}
					return nil
				}})
		}
	}
	if err := safetensors.WriteFile(filepath.Join(dir, "model.safetensors"), wts, map[string]string{"format": "pt"}); err != nil {
		return fmt.Errorf("gen-model: %w", err)
	}
	cfg := map[string]any{
		"architectures": []string{fam.hfClass}, "model_type": fam.hfModelType(), "hidden_size": o.Hidden,
		"intermediate_size": o.FFN, "num_hidden_layers": o.Layers, "num_attention_heads": o.Heads,
		"num_key_value_heads": o.KVHeads, "head_dim": o.HeadDim, "vocab_size": o.Vocab,
		"max_position_embeddings": o.MaxPos, "rms_norm_eps": o.RMSEps, "rope_theta": o.RopeTheta,
		"hidden_act": fam.hiddenAct, "tie_word_embeddings": o.Tied, "attention_bias": fam.qkvBias,
		"bos_token_id": 1, "eos_token_id": 2, "torch_dtype": map[safetensors.DType]string{
			safetensors.F32: "float32", safetensors.F16: "float16", safetensors.BF16: "bfloat16"}[stDType],
	}
	if o.YarnFactor > 0 {
		cfg["rope_scaling"] = map[string]any{"rope_type": "yarn", "factor": o.YarnFactor,
			"original_max_position_embeddings": o.YarnOrigCtx}
	}
	if fam.genHF != nil {
		fam.genHF(cfg, &o)
	}
	gen := map[string]any{"bos_token_id": 1, "eos_token_id": 2}
	if rt != nil {
		delete(cfg, "bos_token_id")
		delete(gen, "bos_token_id")
		for k, v := range rt.tokenIDs() {
			cfg[k], gen[k] = v, v
		}
	}
	for name, obj := range map[string]any{"config.json": cfg, "generation_config.json": gen} {
		b, err := json.MarshalIndent(obj, "", "  ")
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			return fmt.Errorf("gen-model: %w", err)
		}
	}
	return nil
}
