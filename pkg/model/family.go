package model

import (
	"fmt"
	"sort"
	"strings"

	"github.com/lightllm-go/lightllm/pkg/gguf"
	"github.com/lightllm-go/lightllm/pkg/tensor"
)

// A family is one architecture family: everything about it that is not
// shared by all decoder-only models — the names it goes by, the
// hyperparameters it adds to the common ones in config.json and GGUF
// metadata, its tensor names and the options of the forward pass. Each
// family lives in one file (family_<name>.go) that registers it in init,
// so a new family is one new file plus its test.
type family struct {
	// name is Config.Arch, config.json's model_type and, unless ggufArch
	// says otherwise, GGUF's general.architecture.
	name string
	// ggufArch is the general.architecture llama.cpp's converter writes
	// for this family ("" = name): Mistral files say "llama".
	ggufArch string
	// hfClass is config.json's architectures[0] (written by gen-model).
	hfClass string
	// hfType is config.json's model_type when it is not name (Gemma 3's
	// text model says "gemma3_text").
	hfType string
	// hiddenAct is the only config.json hidden_act the family accepts.
	hiddenAct string
	// ropeNeox: llama.cpp's NEOX rope type, rotating (x[i], x[i+d/2]).
	// Otherwise adjacent pairs (x[2i], x[2i+1]): llama.cpp's converter
	// permutes such a family's q/k rows into that order in GGUF files, and
	// the forward pass permutes HF q/k activations the same way.
	ropeNeox bool
	// qkvBias: checkpoints carry q/k/v biases (gen-model writes them).
	qkvBias bool
	// qkNorm: per-head RMSNorm of q and k; required when set.
	qkNorm bool
	// qkNormFull: the q/k RMSNorms span the whole q and k vectors
	// (Heads*HeadDim, KVHeads*HeadDim) instead of one head (olmoe).
	qkNormFull bool
	// normShift: Hugging Face norm weights hold w of a (1 + w) RMSNorm
	// (Gemma); llama.cpp's converter adds 1 to every *norm.weight, so the
	// HF loader does the same, rounding as the converter does.
	normShift bool
	// postNorms: RMSNorms of the attention and FFN outputs before their
	// residual adds (post_attention_norm, post_ffw_norm); required when set.
	postNorms bool
	// tiedOnly: the output head is the embedding table whatever the file
	// holds (llama.cpp's gemma2 never reads output.weight).
	tiedOnly bool
	// genEmbedStd, when set, is the spread of gen-model's embeddings: a
	// family that scales them by sqrt(hidden) and reads them back as its
	// output head would otherwise only repeat its input token.
	genEmbedStd float32
	// fusedProj: q|k|v are one tensor (attn_qkv) and gate|up another
	// (ffn_up, gate rows first), as phi3 stores them.
	fusedProj bool
	// moe: the family's FFN is a mixture of experts (Config.Experts;
	// gen-model writes a router and experts in place of the FFN).
	moe bool
	// sharedExpert: with the experts, a shared expert every token runs
	// (Config.SharedFFN; qwen2moe).
	sharedExpert bool
	// expertBias: the router and every expert projection carry biases
	// (ffn_gate_inp.bias, ffn_{gate,up,down}_exps.bias; gpt-oss).
	expertBias bool
	// outBias: the attention output projection carries a bias
	// (attn_output.bias); required when set.
	outBias bool
	// sinks: attention sinks, one logit per query head (attn_sinks) that
	// joins every softmax without a value; required when set.
	sinks bool
	// ffnNorm is the GGUF name part of the RMSNorm before the FFN
	// ("" = ffn_norm; gpt-oss's converter names it post_attention_norm).
	ffnNorm string
	// lateRows: llama.cpp's graph runs the whole last layer on every token
	// of a batch and picks the output rows after it (gpt-oss's
	// embeddings_nextn_masked default) rather than before its FFN, so the
	// last layer's FFN keeps the batch's rounding.
	lateRows bool
	// hfGet, when set, produces the tensors whose Hugging Face layout is
	// not one GGUF tensor under another name (gpt-oss's fused, transposed
	// experts): ok false leaves name to the common mapping.
	hfGet func(s hfSource, name string) (t *rawTensor, ok bool, err error)
	// genHFTensors, when set, writes the tensors of ts whose Hugging Face
	// layout differs (the inverse of hfGet) and returns the others, which
	// GenerateHF writes as usual.
	genHFTensors func(o *GenOptions, ts []genTensor, dt tensor.DType) (custom []hfTensor, rest []genTensor)
	// hfTensors maps GGUF tensor-name parts (after "blk.N.") to Hugging
	// Face ones beyond the common llama-style map (commonHFTensors). A
	// stacked expert tensor (ffn_gate_exps) maps to a name with %d, the
	// expert, filled from a per-expert name "blk.N.ffn_gate_exps.E.weight".
	hfTensors map[string]string
	// fromHF and fromGGUF read the family's own hyperparameters after the
	// common ones (nil: none).
	fromHF   func(raw []byte, c *Config) error
	fromGGUF func(f *gguf.File, c *Config) error
	// chatTemplate is the family's chat template (Jinja), written by
	// gen-model into both forms ("" = none).
	chatTemplate string
	// genGGUF and genHF add the family's own metadata to what gen-model
	// writes (nil: none).
	genGGUF func(w *gguf.Writer, o *GenOptions)
	genHF   func(cfg map[string]any, o *GenOptions)
}

// families holds every registered family by name; written only by
// register from init functions, read-only afterwards.
var families = map[string]*family{}

// register adds a family; a duplicate name is a programming error.
func register(f *family) {
	if f.name == "" || families[f.name] != nil {
		panic(fmt.Sprintf("model: family %q registered twice or unnamed", f.name))
	}
	if f.hiddenAct == "" {
		f.hiddenAct = "silu"
	}
	families[f.name] = f
}

// lookupFamily returns the family of an architecture name.
func lookupFamily(arch string) (*family, error) {
	if f := families[arch]; f != nil {
		return f, nil
	}
	return nil, fmt.Errorf("unknown architecture %q (supported: %s)", arch, strings.Join(familyNames(), ", "))
}

// lookupHFFamily returns the family of a config.json model_type.
func lookupHFFamily(modelType string) (*family, error) {
	for _, f := range families {
		if f.hfType == modelType && modelType != "" {
			return f, nil
		}
	}
	if f := families[modelType]; f != nil {
		if f.hfType == "" {
			return f, nil
		}
		// Gemma 3's multimodal checkpoints say gemma3; its text model gemma3_text.
		return nil, fmt.Errorf("model_type %q is not supported (the %s family reads config.json model_type %q)", modelType, f.name, f.hfType)
	}
	return nil, fmt.Errorf("unknown architecture %q (supported: %s)", modelType, strings.Join(familyNames(), ", "))
}

// hfModelType is the model_type gen-model writes into config.json.
func (f *family) hfModelType() string {
	if f.hfType != "" {
		return f.hfType
	}
	return f.name
}

// Architectures lists the registered architecture names, sorted.
func Architectures() []string { return familyNames() }

func familyNames() []string {
	names := make([]string, 0, len(families))
	for n := range families {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

func (f *family) gguf() string {
	if f.ggufArch != "" {
		return f.ggufArch
	}
	return f.name
}

// commonHFTensors maps the GGUF tensor-name parts every llama-style
// family shares to their Hugging Face names.
var commonHFTensors = map[string]string{
	"attn_norm": "input_layernorm", "ffn_norm": "post_attention_layernorm",
	"attn_q": "self_attn.q_proj", "attn_k": "self_attn.k_proj", "attn_v": "self_attn.v_proj",
	"attn_output": "self_attn.o_proj", "attn_q_norm": "self_attn.q_norm", "attn_k_norm": "self_attn.k_norm",
	"ffn_gate": "mlp.gate_proj", "ffn_up": "mlp.up_proj", "ffn_down": "mlp.down_proj",
}

// hfName maps a GGUF tensor name to the Hugging Face one; a name it does
// not know is returned unchanged.
func (f *family) hfName(name string) string {
	base, suffix := name, ""
	if i := strings.LastIndexByte(name, '.'); i >= 0 {
		base, suffix = name[:i], name[i:]
	}
	switch base {
	case "token_embd":
		return "model.embed_tokens" + suffix
	case "output_norm":
		return "model.norm" + suffix
	case "output":
		return "lm_head" + suffix
	}
	var layer int
	var part string
	if _, err := fmt.Sscanf(base, "blk.%d.%s", &layer, &part); err != nil {
		return name
	}
	hf := f.hfTensors[part]
	if i := strings.LastIndexByte(part, '.'); i > 0 && hf == "" {
		var e int
		if _, err := fmt.Sscanf(part[i+1:], "%d", &e); err == nil && strings.Contains(f.hfTensors[part[:i]], "%d") {
			hf = fmt.Sprintf(f.hfTensors[part[:i]], e)
		}
	}
	if strings.Contains(hf, "%d") {
		return name // a stacked tensor has no single Hugging Face name
	}
	if hf == "" {
		hf = commonHFTensors[part]
	}
	if hf == "" {
		return name
	}
	return fmt.Sprintf("model.layers.%d.%s%s", layer, hf, suffix)
}

// ffnNormName is the GGUF name part of the FFN's input norm.
func (f *family) ffnNormName() string {
	if f.ffnNorm != "" {
		return f.ffnNorm
	}
	return "ffn_norm"
}

// checkHF applies the family's config.json rules after the common fields.
func (f *family) checkHF(hc *hfConfig, raw []byte, c *Config) error {
	if hc.HiddenAct != "" && hc.HiddenAct != f.hiddenAct {
		return fmt.Errorf("hidden_act %q is not supported by %s (%s only)", hc.HiddenAct, f.name, f.hiddenAct)
	}
	if f.fromHF != nil {
		return f.fromHF(raw, c)
	}
	return nil
}

// moeFamilies lists the families with experts (for messages).
func moeFamilies() []string {
	var names []string
	for _, n := range familyNames() {
		if families[n].moe {
			names = append(names, n)
		}
	}
	return names
}
