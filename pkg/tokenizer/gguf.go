package tokenizer

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/lightllm-go/lightllm/pkg/gguf"
)

// GGUF token types (tokenizer.ggml.token_type).
const (
	TokenNormal      = 1
	TokenUnknown     = 2
	TokenControl     = 3
	TokenUserDefined = 4
	TokenUnused      = 5
	TokenByte        = 6
)

// GGUFVocab is the tokenizer a GGUF file embeds (tokenizer.ggml.* keys).
type GGUFVocab struct {
	Model  string // tokenizer.ggml.model: "llama" (SentencePiece) | "gpt2" (BPE)
	Pre    string // tokenizer.ggml.pre, e.g. "llama-bpe", "qwen2", "default"
	Tokens []string
	Scores []float32 // SentencePiece scores (nil: all 0)
	Types  []int32   // token types (nil: all normal)
	Merges []string  // "left right", gpt2 only

	BOS, EOS, UNK, PAD int32 // -1 when absent
	AddBOS, AddEOS     bool
	AddSpacePrefix     bool // SentencePiece: prefix the text with a space
	ChatTemplate       string
}

// ggufPre is a pre-tokenizer family llama.cpp knows by tokenizer.ggml.pre.
type ggufPre struct {
	regexes      []string
	ignoreMerges bool
	addBOS       bool // llama.cpp's default when tokenizer.ggml.add_bos_token is absent
}

const (
	preGPT2NoTail = `'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)`
	preTekken     = `[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+`
	preGPT4o      = `[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+`
	preDeepseek3  = `[!"#$%&'()*+,\-./:;<=>?@\[\\\]^_` + "`" + `{|}~][A-Za-z]+|[^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+| ?[\p{P}\p{S}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`
)

// lookupGGUFPre maps tokenizer.ggml.pre to llama.cpp's regex list (each
// applied to the pieces of the previous one). "" and "default" are
// llama.cpp's default list; any other name this package does not implement
// is reported (ok false) — llama.cpp refuses names it does not know, and a
// name it knows but we do not would otherwise split text with the wrong
// regex, silently.
func lookupGGUFPre(name string) (pre ggufPre, ok bool) {
	switch name {
	case "llama3", "llama-v3", "llama-bpe", "falcon3", "falcon-h1", "pixtral", "midm-2.0", "lfm2":
		return ggufPre{regexes: []string{patLlama3}, ignoreMerges: true, addBOS: true}, true
	case "dbrx", "smaug-bpe", "glm4", "chatglm-bpe":
		return ggufPre{regexes: []string{patLlama3}}, true
	case "qwen2", "deepseek-r1-qwen", "kormo", "stablelm2", "megrez", "hunyuan", "grok-2":
		return ggufPre{regexes: []string{patQwen2}}, true
	case "gpt-2", "phi-2", "jina-es", "jina-de", "gigachat", "jina-v2-es", "jina-v2-de", "a.x-4.0", "mellum",
		"jina-v1-en", "jina-v2-code", "roberta-bpe", "exaone4", "mpt", "olmo", "jais", "trillion", "granite-docling":
		return ggufPre{regexes: []string{preGPT2NoTail}}, true
	case "starcoder", "refact", "command-r", "smollm", "codeshell", "exaone", "minerva-7b":
		return ggufPre{regexes: []string{`\p{N}`, preGPT2NoTail}}, true
	case "falcon":
		return ggufPre{regexes: []string{"[\\p{P}\\$\\+<=>\\^~\\|`]+", preGPT2NoTail, `[0-9][0-9][0-9]`}}, true
	case "deepseek-coder":
		return ggufPre{regexes: []string{"[\r\n]", `\s?\p{L}+`, `\s?\p{P}+`, `[一-龥ࠀ-一가-퟿]+`, `\p{N}`}}, true
	case "deepseek-v3", "hunyuan-dense":
		return ggufPre{regexes: []string{`\p{N}{1,3}`, `[一-龥぀-ゟ゠-ヿ]+`, preDeepseek3}}, true
	case "tekken":
		return ggufPre{regexes: []string{preTekken}, ignoreMerges: true, addBOS: true}, true
	case "gpt-4o", "llama4", "minimax-m2":
		return ggufPre{regexes: []string{preGPT4o}}, true
	case "poro-chat", "bloom", "gpt3-finnish":
		return ggufPre{regexes: []string{` ?[^(\s|.,!?…。，、।۔،)]+`}}, true
	case "viking":
		return ggufPre{regexes: []string{` ?[^(\s|.,!?…。，、।۔،)]+`, `\p{N}`}}, true
	case "", "default":
		return ggufPre{regexes: []string{`[\p{P}\$\+<=>\^~\|]+`, preGPT2NoTail, `\p{N}+`, `[0-9][0-9][0-9]`}}, true
	}
	return ggufPre{}, false
}

// FromGGUF builds a tokenizer from a GGUF-embedded vocabulary. It encodes
// as llama.cpp does with parse_special (control and user-defined tokens
// written in the text are recognised).
func FromGGUF(v GGUFVocab) (*Tokenizer, error) {
	n := len(v.Tokens)
	if n == 0 {
		return nil, errors.New("gguf vocab: no tokens")
	}
	if v.Scores != nil && len(v.Scores) != n {
		return nil, fmt.Errorf("gguf vocab: %d scores for %d tokens", len(v.Scores), n)
	}
	if v.Types != nil && len(v.Types) != n {
		return nil, fmt.Errorf("gguf vocab: %d token types for %d tokens", len(v.Types), n)
	}
	t := &Tokenizer{bos: checkID(v.BOS, n), eos: checkID(v.EOS, n), unk: checkID(v.UNK, n), pad: checkID(v.PAD, n),
		chatTemplate: v.ChatTemplate}
	vocab, byID := make([]string, n), make(map[string]int32, n)
	t.known, t.special = make([]bool, n), make([]bool, n)
	var added []addedToken
	for i, s := range v.Tokens {
		if s == "" {
			s = "[EMPTY_" + strconv.Itoa(i) + "]" // llama.cpp's name for empty entries
		}
		id := int32(i)
		vocab[i], t.known[i] = s, true
		byID[s] = id // later duplicates win, as in llama.cpp's token_to_id
		typ := int32(TokenNormal)
		if v.Types != nil {
			typ = v.Types[i]
		}
		switch typ {
		case TokenUnknown, TokenControl:
			t.special[i] = true
			added = append(added, addedToken{id: id, content: s, special: true})
		case TokenUserDefined:
			added = append(added, addedToken{id: id, content: s})
		}
	}
	t.added, t.addedNorm = newAddedMatcher(added), newAddedMatcher(nil)
	t.vocab, t.byID = newStrList(vocab), newStrIndex(byID)
	if v.AddBOS && t.bos >= 0 {
		t.prefixIDs = []int32{t.bos}
	}
	if v.AddEOS && t.eos >= 0 {
		t.suffixIDs = []int32{t.eos}
	}

	switch v.Model {
	case "llama":
		t.spm = newSPMFromGGUF(v, t.byID, t.unk)
		// The space prefix goes in front of every text fragment that starts
		// the input or follows a special token, like llama.cpp's is_prev_special.
		var norms seqNormalizer
		if v.AddSpacePrefix {
			norms = append(norms, prependNormalizer{" "})
		}
		t.norm = append(norms, replaceNormalizer{finder: literalFinder{" "}, content: "▁"})
		var dec seqDecoder = []decoderStep{replaceDecoder{"▁", " "}, byteFallbackDecoder{}, fuseDecoder{}}
		if v.AddSpacePrefix {
			dec = append(dec, stripDecoder{content: ' ', start: 1})
		}
		t.dec = dec
	case "gpt2":
		pre, ok := lookupGGUFPre(v.Pre)
		if !ok {
			return nil, fmt.Errorf("%w: gguf pre-tokenizer %q (tokenizer.ggml.pre) is not implemented", ErrUnsupported, v.Pre)
		}
		var seq seqPreTokenizer
		for _, re := range pre.regexes {
			f, err := newRegexFinder(re)
			if err != nil {
				return nil, fmt.Errorf("gguf pre-tokenizer %q: %w", v.Pre, err)
			}
			seq = append(seq, splitPreTokenizer{finder: f, behavior: splitIsolated})
		}
		t.pre = seq
		t.bl = newByteLevelMap()
		bpe, err := newBPEFromGGUF(v, t.byID, t.bl, pre.ignoreMerges)
		if err != nil {
			return nil, err
		}
		t.bpe = bpe
		t.dec = byteLevelDecoder{bl: t.bl}
	default:
		return nil, fmt.Errorf("%w: gguf tokenizer model %q", ErrUnsupported, v.Model)
	}
	isAdded := make([]bool, n)
	for _, a := range added {
		isAdded[a.id] = true
	}
	t.splitMeta = t.pre == nil && metaSplitSafe(vocab, isAdded)
	t.cache = newWordCache()
	return t, nil
}

func checkID(id int32, n int) int32 {
	if id < 0 || int(id) >= n {
		return -1
	}
	return id
}

func newSPMFromGGUF(v GGUFVocab, byID *strIndex, unk int32) *spmModel {
	m := &spmModel{tokenToID: byID, scores: v.Scores, unk: unk}
	if m.scores == nil {
		m.scores = make([]float32, len(v.Tokens))
	}
	for b := 0; b < 256; b++ {
		m.byteID[b] = -1
		if id, ok := byID.get(fmt.Sprintf("<0x%02X>", b)); ok {
			m.byteID[b] = id
		} else if id, ok := byID.get(string([]byte{byte(b)})); ok {
			m.byteID[b] = id
		}
	}
	return m
}

func newBPEFromGGUF(v GGUFVocab, byID *strIndex, bl *byteLevelMap, ignoreMerges bool) (*bpeModel, error) {
	if len(v.Merges) == 0 {
		return nil, errors.New("gguf vocab: gpt2 tokenizer without merges")
	}
	m := &bpeModel{vocab: byID, unk: -1, ignoreMerges: ignoreMerges, bl: bl}
	mb := newMergeBuilder(len(v.Merges))
	for rank, line := range v.Merges {
		// llama.cpp splits at the first space after the first byte.
		sp := -1
		if len(line) > 1 {
			if i := strings.IndexByte(line[1:], ' '); i >= 0 {
				sp = i + 1
			}
		}
		if sp < 0 {
			continue
		}
		a, okA := byID.get(line[:sp])
		b, okB := byID.get(line[sp+1:])
		c, okC := byID.get(line[:sp] + line[sp+1:])
		if !okA || !okB || !okC {
			continue // a merge whose parts or result are not tokens can never apply
		}
		mb.add(a, b, bpeMerge{rank: int32(rank), newID: c})
	}
	m.merges = mb.build()
	m.setByteTables(bl)
	return m, nil
}

// FromGGUFFile reads the tokenizer.ggml.* keys of an open GGUF file, with
// llama.cpp's defaults for absent ones.
func FromGGUFFile(f *gguf.File) (*Tokenizer, error) {
	v := GGUFVocab{BOS: -1, EOS: -1, UNK: -1, PAD: -1}
	var ok bool
	if v.Model, ok = f.String("tokenizer.ggml.model"); !ok {
		return nil, errors.New("gguf: no tokenizer.ggml.model")
	}
	v.Pre, _ = f.String("tokenizer.ggml.pre")
	if v.Tokens, ok = f.Strings("tokenizer.ggml.tokens"); !ok {
		return nil, errors.New("gguf: no tokenizer.ggml.tokens string array")
	}
	if _, present := f.Value("tokenizer.ggml.scores"); present {
		if v.Scores, ok = f.Float32s("tokenizer.ggml.scores"); !ok {
			return nil, errors.New("gguf: tokenizer.ggml.scores is not a float array")
		}
	}
	if _, present := f.Value("tokenizer.ggml.token_type"); present {
		if v.Types, ok = f.Int32s("tokenizer.ggml.token_type"); !ok {
			return nil, errors.New("gguf: tokenizer.ggml.token_type is not an integer array")
		}
	}
	if _, present := f.Value("tokenizer.ggml.merges"); present {
		if v.Merges, ok = f.Strings("tokenizer.ggml.merges"); !ok {
			return nil, errors.New("gguf: tokenizer.ggml.merges is not a string array")
		}
	}
	switch v.Model {
	case "llama":
		v.BOS, v.EOS, v.UNK = 1, 2, 0
		v.AddBOS, v.AddSpacePrefix = true, true
	case "gpt2":
		pre, _ := lookupGGUFPre(v.Pre) // an unknown name is refused by FromGGUF
		v.AddBOS = pre.addBOS
	}
	for _, k := range []struct {
		key string
		dst *int32
	}{{"bos_token_id", &v.BOS}, {"eos_token_id", &v.EOS}, {"unknown_token_id", &v.UNK}, {"padding_token_id", &v.PAD}} {
		if id, ok := f.Uint("tokenizer.ggml." + k.key); ok && id < uint64(len(v.Tokens)) {
			*k.dst = int32(id)
		}
	}
	for _, k := range []struct {
		key string
		dst *bool
	}{{"add_bos_token", &v.AddBOS}, {"add_eos_token", &v.AddEOS}, {"add_space_prefix", &v.AddSpacePrefix}} {
		if b, ok := f.Bool("tokenizer.ggml." + k.key); ok {
			*k.dst = b
		}
	}
	v.ChatTemplate, _ = f.String("tokenizer.chat_template")
	t, err := FromGGUF(v)
	if err != nil {
		return nil, fmt.Errorf("gguf tokenizer: %w", err)
	}
	return t, nil
}
