package tokenizer

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// charVocab is a test vocabulary of single printable ASCII characters
// (id = code point - 32) plus "[UNK]".
func charVocab() map[string]int32 {
	v := map[string]int32{}
	for c := ' '; c <= '~'; c++ {
		v[string(c)] = int32(c - ' ')
	}
	v["[UNK]"] = 95
	return v
}

func charIDs(s string) []int32 {
	var ids []int32
	for _, c := range s {
		ids = append(ids, int32(c-' '))
	}
	return ids
}

// syntheticTokenizer builds a tokenizer.json around the character
// vocabulary; extra holds further top-level fields (JSON fragments).
func syntheticTokenizer(t *testing.T, added []hfAddedToken, extra map[string]string, cfg Config) *Tokenizer {
	t.Helper()
	vocab, err := json.Marshal(charVocab())
	if err != nil {
		t.Fatal(err)
	}
	addedJSON, err := json.Marshal(added)
	if err != nil {
		t.Fatal(err)
	}
	doc := fmt.Sprintf(`{"added_tokens": %s, "model": {"type": "BPE", "vocab": %s, "merges": [], "unk_token": "[UNK]"}`, addedJSON, vocab)
	for k, v := range extra {
		doc += fmt.Sprintf(`, %q: %s`, k, v)
	}
	doc += "}"
	tk, err := FromJSON([]byte(doc), cfg)
	if err != nil {
		t.Fatalf("FromJSON: %v\n%s", err, doc)
	}
	return tk
}

func cat(parts ...[]int32) []int32 { return slices.Concat(parts...) }

func TestAddedTokenMatching(t *testing.T) {
	const mask, ab, long, hi = 100, 101, 102, 103
	added := []hfAddedToken{
		{ID: mask, Content: "<mask>", LStrip: true, RStrip: true, Special: true},
		{ID: ab, Content: "ab", SingleWord: true},
		{ID: long, Content: "<mask>x"},
		{ID: hi, Content: "hi", Normalized: true},
	}
	lower := map[string]string{"normalizer": `{"type": "Lowercase"}`}
	tk := syntheticTokenizer(t, added, lower, Config{})
	tests := []struct {
		name, text string
		want       []int32
	}{
		{"lstrip and rstrip absorb spaces", "Q  <mask>  r", cat(charIDs("q"), []int32{mask}, charIDs("r"))},
		{"longest match wins", "<mask>xy", cat([]int32{long}, charIDs("y"))},
		{"single word alone", "ab c", cat([]int32{ab}, charIDs(" c"))},
		{"single word inside a word is text", "xab c", charIDs("xab c")},
		{"single word before a word is text", "abc", charIDs("abc")},
		{"normalized token matches after lowercasing", "HI", []int32{hi}},
		{"empty", "", nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := tk.Encode(tc.text, false); !slices.Equal(got, tc.want) {
				t.Errorf("Encode(%q) = %v, want %v", tc.text, got, tc.want)
			}
		})
	}
	if !tk.IsSpecial(mask) || tk.IsSpecial(ab) || tk.IsSpecial(-1) || tk.IsSpecial(1<<20) {
		t.Error("IsSpecial wrong")
	}
	if got := tk.Decode([]int32{mask, 33}, true); got != "A" {
		t.Errorf("Decode skipping special = %q, want %q", got, "A")
	}
}

func TestSpecialTokensAround(t *testing.T) {
	added := []hfAddedToken{{ID: 96, Content: "<s>", Special: true}, {ID: 97, Content: "</s>", Special: true}}
	template := `{"type": "Sequence", "processors": [{"type": "ByteLevel"}, {"type": "TemplateProcessing",
		"single": [{"SpecialToken": {"id": "<s>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}},
		           {"SpecialToken": {"id": "</s>", "type_id": 0}}],
		"special_tokens": {"<s>": {"id": "<s>", "ids": [96], "tokens": ["<s>"]},
		                   "</s>": {"id": "</s>", "ids": [97], "tokens": ["</s>"]}}}]}`
	yes, no := true, false
	tests := []struct {
		name       string
		post       string
		cfg        Config
		wantPrefix []int32
		wantSuffix []int32
	}{
		{"template", template, Config{BOSToken: "<s>", EOSToken: "</s>"}, []int32{96}, []int32{97}},
		{"llama class flags override the template", template,
			Config{BOSToken: "<s>", EOSToken: "</s>", TokenizerClass: "LlamaTokenizerFast", AddBOS: &no, AddEOS: &yes}, nil, []int32{97}},
		{"no processor, config flags", "null", Config{BOSToken: "<s>", AddBOS: &yes}, []int32{96}, nil},
		{"no processor, no flags", "null", Config{BOSToken: "<s>"}, nil, nil},
		{"roberta", `{"type": "RobertaProcessing", "sep": ["</s>", 97], "cls": ["<s>", 96]}`, Config{}, []int32{96}, []int32{97}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tk := syntheticTokenizer(t, added, map[string]string{"post_processor": tc.post}, tc.cfg)
			want := cat(tc.wantPrefix, charIDs("x"), tc.wantSuffix)
			if got := tk.Encode("x", true); !slices.Equal(got, want) {
				t.Errorf("Encode(addSpecial) = %v, want %v", got, want)
			}
			if got := tk.Encode("x", false); !slices.Equal(got, charIDs("x")) {
				t.Errorf("Encode = %v", got)
			}
		})
	}
}

func TestFromJSONErrors(t *testing.T) {
	tests := []struct {
		name, doc   string
		unsupported bool
	}{
		{"not json", `{`, false},
		{"unigram", `{"model": {"type": "Unigram", "vocab": []}}`, true},
		{"merge of unknown token", `{"model": {"type": "BPE", "vocab": {"a": 0}, "merges": ["a b"]}}`, false},
		{"merge result missing", `{"model": {"type": "BPE", "vocab": {"a": 0, "b": 1}, "merges": ["a b"]}}`, false},
		{"malformed merge", `{"model": {"type": "BPE", "vocab": {"a": 0}, "merges": ["a"]}}`, false},
		{"unk not in vocab", `{"model": {"type": "BPE", "vocab": {"a": 0}, "merges": [], "unk_token": "<unk>"}}`, false},
		{"unknown normalizer", `{"normalizer": {"type": "BertNormalizer"}, "model": {"type": "BPE", "vocab": {}, "merges": []}}`, true},
		{"unknown pre-tokenizer", `{"pre_tokenizer": {"type": "UnicodeScripts"}, "model": {"type": "BPE", "vocab": {}, "merges": []}}`, true},
		{"unknown decoder", `{"decoder": {"type": "WordPiece"}, "model": {"type": "BPE", "vocab": {}, "merges": []}}`, true},
		{"bad regex", `{"pre_tokenizer": {"type": "Split", "pattern": {"Regex": "("}, "behavior": "Isolated"}, "model": {"type": "BPE", "vocab": {}, "merges": []}}`, false},
		{"bad split behavior", `{"pre_tokenizer": {"type": "Split", "pattern": {"String": " "}, "behavior": "Sideways"}, "model": {"type": "BPE", "vocab": {}, "merges": []}}`, false},
		{"template names unknown token", `{"post_processor": {"type": "TemplateProcessing", "single": [{"SpecialToken": {"id": "<s>"}}], "special_tokens": {}}, "model": {"type": "BPE", "vocab": {}, "merges": []}}`, false},
		{"negative id", `{"model": {"type": "BPE", "vocab": {"a": -1}, "merges": []}}`, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := FromJSON([]byte(tc.doc), Config{})
			if err == nil {
				t.Fatal("no error")
			}
			if tc.unsupported != errors.Is(err, ErrUnsupported) {
				t.Errorf("error %v: ErrUnsupported = %v, want %v", err, !tc.unsupported, tc.unsupported)
			}
		})
	}
}

func TestParseConfig(t *testing.T) {
	tests := []struct {
		name, doc string
		want      Config
		wantErr   bool
	}{
		{"strings", `{"bos_token": "<s>", "eos_token": "</s>", "chat_template": "T"}`,
			Config{BOSToken: "<s>", EOSToken: "</s>", ChatTemplate: "T"}, false},
		{"added-token objects and null", `{"bos_token": {"content": "<s>", "lstrip": false}, "eos_token": null}`,
			Config{BOSToken: "<s>"}, false},
		{"template list takes default", `{"chat_template": [{"name": "tool_use", "template": "A"}, {"name": "default", "template": "B"}]}`,
			Config{ChatTemplate: "B"}, false},
		{"bad template", `{"chat_template": 3}`, Config{}, true},
		{"bad token", `{"bos_token": 3}`, Config{}, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseConfig([]byte(tc.doc))
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v", err)
			}
			if !tc.wantErr && (got.BOSToken != tc.want.BOSToken || got.EOSToken != tc.want.EOSToken || got.ChatTemplate != tc.want.ChatTemplate) {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestFromGGUFErrors(t *testing.T) {
	ok := GGUFVocab{Model: "llama", Tokens: []string{"a", "b"}, BOS: -1, EOS: -1, UNK: -1, PAD: -1}
	tests := []struct {
		name   string
		mutate func(v *GGUFVocab)
	}{
		{"no tokens", func(v *GGUFVocab) { v.Tokens = nil }},
		{"scores length", func(v *GGUFVocab) { v.Scores = []float32{0} }},
		{"types length", func(v *GGUFVocab) { v.Types = []int32{1, 1, 1} }},
		{"unknown model", func(v *GGUFVocab) { v.Model = "t5" }},
		{"gpt2 without merges", func(v *GGUFVocab) { v.Model = "gpt2" }},
	}
	if _, err := FromGGUF(ok); err != nil {
		t.Fatalf("valid vocab: %v", err)
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			v := ok
			tc.mutate(&v)
			if _, err := FromGGUF(v); err == nil {
				t.Error("no error")
			}
		})
	}
}

func TestLossyUTF8(t *testing.T) {
	tests := []struct {
		in   string
		want string
		tail int // incompleteTail
	}{
		{"abc", "abc", 0},
		{"a\xe4\xb8", "a\uFFFD", 2},
		{"a\xe4", "a\uFFFD", 1},
		{"\xf0\x9f\x98", "\uFFFD", 3},
		{"\xe4A", "\uFFFDA", 0},
		{"\x80", "\uFFFD", 0},
		{"\xed\xa0\x80", "\uFFFD\uFFFD\uFFFD", 0}, // surrogate: three maximal subparts
		{"\xed\xa0", "\uFFFD\uFFFD", 0},
		{"\xf4\x90", "\uFFFD\uFFFD", 0}, // beyond U+10FFFF
		{"你好", "你好", 0},
	}
	for _, tc := range tests {
		if got := lossyUTF8([]byte(tc.in)); got != tc.want {
			t.Errorf("lossyUTF8(%q) = %q, want %q", tc.in, got, tc.want)
		}
		if got := incompleteTail(tc.in); got != tc.tail {
			t.Errorf("incompleteTail(%q) = %d, want %d", tc.in, got, tc.tail)
		}
	}
}

func TestDecoders(t *testing.T) {
	tests := []struct {
		name string
		dec  decoderStep
		in   []string
		want string
	}{
		{"byte fallback valid run", seqDecoder{byteFallbackDecoder{}, fuseDecoder{}}, []string{"<0xE4>", "<0xBD>", "<0xA0>", "x"}, "你x"},
		{"byte fallback invalid run is one U+FFFD per byte", seqDecoder{byteFallbackDecoder{}, fuseDecoder{}},
			[]string{"<0xE4>", "<0xBD>", "x"}, "\uFFFD\uFFFDx"},
		{"metaspace drops the first token's marks", metaspaceDecoder{replacement: "▁", stripFirst: true},
			[]string{"▁Hello", "▁world"}, "Hello world"},
		{"sentencepiece sequence", seqDecoder{replaceDecoder{"▁", " "}, byteFallbackDecoder{}, fuseDecoder{}, stripDecoder{' ', 1, 0}},
			[]string{"▁Hello", "▁", "▁world"}, "Hello  world"},
		{"byte level", byteLevelDecoder{newByteLevelMap()}, []string{"Hello", "Ġworld", "Ċ", "<|eot|>"}, "Hello world\n<|eot|>"},
	}
	for _, tc := range tests {
		if got := strings.Join(tc.dec.decodeChain(tc.in, false), ""); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}

// TestGGUFPreRegexesCompile compiles every pre-tokenizer we implement of
// those llama.cpp names; a name we do not implement is refused, never
// replaced by another regex list.
func TestGGUFPreRegexesCompile(t *testing.T) {
	names := []string{"llama-bpe", "dbrx", "qwen2", "gpt-2", "starcoder", "falcon", "deepseek-coder",
		"deepseek-v3", "tekken", "gpt-4o", "bloom", "viking", "default", ""}
	for _, bad := range []string{"no-such-pre", "superbpe", "kimi-k2"} {
		if _, ok := lookupGGUFPre(bad); ok {
			t.Errorf("pre-tokenizer %q accepted", bad)
		}
		v := GGUFVocab{Model: "gpt2", Pre: bad, Tokens: []string{"a", "b"}, BOS: -1, EOS: -1, UNK: -1, PAD: -1}
		if _, err := FromGGUF(v); err == nil || !strings.Contains(err.Error(), bad) {
			t.Errorf("FromGGUF with pre %q: %v, want an error naming it", bad, err)
		}
	}
	for _, name := range names {
		pre, ok := lookupGGUFPre(name)
		if !ok {
			t.Errorf("%q refused", name)
		}
		for _, re := range pre.regexes {
			f, err := newRegexFinder(re)
			if err != nil {
				t.Errorf("%s: %v", name, err)
				continue
			}
			if m := f.matches(nil, "Hello, world 123 你好!\n"); len(m) == 0 {
				t.Errorf("%s: regex %q matched nothing", name, re)
			}
		}
	}
}

func TestMergeTable(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	want := map[uint64]bpeMerge{}
	b := newMergeBuilder(0)
	for i := range 5000 {
		// A few left ids get many merges (like "Ġ"), most get one or two.
		left := int32(rng.IntN(50))
		if i%3 == 0 {
			left = int32(rng.IntN(3))
		}
		right := int32(rng.IntN(2000))
		m := bpeMerge{rank: int32(i), newID: int32(rng.IntN(1 << 20))}
		if _, dup := want[pairKey(left, right)]; !dup {
			want[pairKey(left, right)] = m
		}
		b.add(left, right, m)
	}
	table := b.build()
	for a := int32(-1); a < 60; a++ {
		for r := int32(-1); r < 2001; r++ {
			got, ok := table.get(a, r)
			w, wok := want[pairKey(a, r)]
			if ok != wok || got != w {
				t.Fatalf("get(%d, %d) = %v %v, want %v %v", a, r, got, ok, w, wok)
			}
		}
	}
}
