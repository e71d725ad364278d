package tokenizer

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// hfFile is the part of tokenizer.json this package reads.
type hfFile struct {
	AddedTokens   []hfAddedToken  `json:"added_tokens"`
	Normalizer    json.RawMessage `json:"normalizer"`
	PreTokenizer  json.RawMessage `json:"pre_tokenizer"`
	PostProcessor json.RawMessage `json:"post_processor"`
	Decoder       json.RawMessage `json:"decoder"`
	Model         json.RawMessage `json:"model"` // hfModel once the type is known
}

type hfAddedToken struct {
	ID         int32  `json:"id"`
	Content    string `json:"content"`
	SingleWord bool   `json:"single_word"`
	LStrip     bool   `json:"lstrip"`
	RStrip     bool   `json:"rstrip"`
	Normalized bool   `json:"normalized"`
	Special    bool   `json:"special"`
}

type hfModel struct {
	Type                    string           `json:"type"`
	Vocab                   map[string]int32 `json:"vocab"`
	Merges                  json.RawMessage  `json:"merges"`
	UnkToken                *string          `json:"unk_token"`
	ContinuingSubwordPrefix *string          `json:"continuing_subword_prefix"`
	EndOfWordSuffix         *string          `json:"end_of_word_suffix"`
	FuseUnk                 bool             `json:"fuse_unk"`
	ByteFallback            bool             `json:"byte_fallback"`
	IgnoreMerges            bool             `json:"ignore_merges"`
	Dropout                 *float64         `json:"dropout"`
}

// hfComponent holds the fields of any normalizer, pre-tokenizer,
// post-processor or decoder; Type says which apply.
type hfComponent struct {
	Type             string            `json:"type"`
	Normalizers      []json.RawMessage `json:"normalizers"`
	Pretokenizers    []json.RawMessage `json:"pretokenizers"`
	Processors       []json.RawMessage `json:"processors"`
	Decoders         []json.RawMessage `json:"decoders"`
	Pattern          *hfPattern        `json:"pattern"`
	Content          string            `json:"content"`
	Prepend          string            `json:"prepend"`
	Behavior         string            `json:"behavior"`
	Invert           bool              `json:"invert"`
	AddPrefixSpace   *bool             `json:"add_prefix_space"`
	UseRegex         *bool             `json:"use_regex"`
	Replacement      string            `json:"replacement"`
	PrependScheme    string            `json:"prepend_scheme"`
	Split            *bool             `json:"split"`
	IndividualDigits bool              `json:"individual_digits"`
	Start            int               `json:"start"`
	Stop             int               `json:"stop"`
	Left             *bool             `json:"strip_left"`
	Right            *bool             `json:"strip_right"`
	Single           []hfTemplatePiece `json:"single"`
	SpecialTokens    map[string]struct {
		IDs []int32 `json:"ids"`
	} `json:"special_tokens"`
	Cls []json.RawMessage `json:"cls"`
	Sep []json.RawMessage `json:"sep"`
}

type hfPattern struct {
	Regex  *string `json:"Regex"`
	String *string `json:"String"`
}

type hfTemplatePiece struct {
	SpecialToken *struct {
		ID string `json:"id"`
	} `json:"SpecialToken"`
	Sequence *struct {
		ID string `json:"id"`
	} `json:"Sequence"`
}

func isNull(raw json.RawMessage) bool {
	s := strings.TrimSpace(string(raw))
	return s == "" || s == "null"
}

func (p *hfPattern) finder() (matchFinder, error) {
	switch {
	case p == nil:
		return nil, errors.New("missing pattern")
	case p.String != nil:
		return literalFinder{*p.String}, nil
	case p.Regex != nil:
		return newRegexFinder(*p.Regex)
	}
	return nil, errors.New("pattern is neither String nor Regex")
}

func parseNormalizer(raw json.RawMessage) (normalizer, error) {
	if isNull(raw) {
		return nil, nil
	}
	var c hfComponent
	if err := json.Unmarshal(raw, &c); err != nil {
		return nil, fmt.Errorf("normalizer: %w", err)
	}
	switch c.Type {
	case "Sequence":
		var seq seqNormalizer
		for _, r := range c.Normalizers {
			n, err := parseNormalizer(r)
			if err != nil {
				return nil, err
			}
			if n != nil {
				seq = append(seq, n)
			}
		}
		return seq, nil
	case "NFC":
		return unicodeNormalizer{norm.NFC}, nil
	case "NFD":
		return unicodeNormalizer{norm.NFD}, nil
	case "NFKC":
		return unicodeNormalizer{norm.NFKC}, nil
	case "NFKD":
		return unicodeNormalizer{norm.NFKD}, nil
	case "Lowercase":
		return lowercaseNormalizer{}, nil
	case "Prepend":
		return prependNormalizer{c.Prepend}, nil
	case "Replace":
		f, err := c.Pattern.finder()
		if err != nil {
			return nil, fmt.Errorf("normalizer Replace: %w", err)
		}
		return replaceNormalizer{finder: f, content: c.Content}, nil
	case "Strip":
		return stripNormalizer{left: c.Left == nil || *c.Left, right: c.Right == nil || *c.Right}, nil
	}
	return nil, fmt.Errorf("%w: normalizer %q", ErrUnsupported, c.Type)
}

// parsePreTokenizer also reports whether a ByteLevel step is present (the
// model then works on the byte-level alphabet).
func parsePreTokenizer(raw json.RawMessage) (preTokenizer, bool, error) {
	if isNull(raw) {
		return nil, false, nil
	}
	var c hfComponent
	if err := json.Unmarshal(raw, &c); err != nil {
		return nil, false, fmt.Errorf("pre_tokenizer: %w", err)
	}
	switch c.Type {
	case "Sequence":
		var seq seqPreTokenizer
		byteLevel := false
		for _, r := range c.Pretokenizers {
			p, bl, err := parsePreTokenizer(r)
			if err != nil {
				return nil, false, err
			}
			byteLevel = byteLevel || bl
			if p != nil {
				seq = append(seq, p)
			}
		}
		return seq, byteLevel, nil
	case "Split":
		f, err := c.Pattern.finder()
		if err != nil {
			return nil, false, fmt.Errorf("pre_tokenizer Split: %w", err)
		}
		b, err := parseSplitBehavior(c.Behavior)
		if err != nil {
			return nil, false, fmt.Errorf("pre_tokenizer Split: %w", err)
		}
		return splitPreTokenizer{finder: f, behavior: b, invert: c.Invert}, false, nil
	case "ByteLevel":
		return byteLevelPreTokenizer{
			addPrefixSpace: c.AddPrefixSpace == nil || *c.AddPrefixSpace,
			useRegex:       c.UseRegex == nil || *c.UseRegex,
		}, true, nil
	case "Metaspace":
		repl, scheme := metaspaceSettings(c)
		return metaspacePreTokenizer{replacement: repl, prepend: scheme, splitWords: c.Split == nil || *c.Split}, false, nil
	case "Digits":
		return digitsPreTokenizer{individual: c.IndividualDigits}, false, nil
	case "WhitespaceSplit":
		return whitespaceSplitPreTokenizer{}, false, nil
	}
	return nil, false, fmt.Errorf("%w: pre_tokenizer %q", ErrUnsupported, c.Type)
}

// metaspaceSettings reads both the current (prepend_scheme) and the legacy
// (add_prefix_space) forms.
func metaspaceSettings(c hfComponent) (string, string) {
	repl := c.Replacement
	if repl == "" {
		repl = "▁"
	}
	scheme := c.PrependScheme
	if scheme == "" {
		scheme = "always"
		if c.AddPrefixSpace != nil && !*c.AddPrefixSpace {
			scheme = "never"
		}
	}
	return repl, scheme
}

func parseDecoder(raw json.RawMessage, bl *byteLevelMap) (decoderStep, error) {
	if isNull(raw) {
		return nil, nil
	}
	var c hfComponent
	if err := json.Unmarshal(raw, &c); err != nil {
		return nil, fmt.Errorf("decoder: %w", err)
	}
	switch c.Type {
	case "Sequence":
		var seq seqDecoder
		for _, r := range c.Decoders {
			d, err := parseDecoder(r, bl)
			if err != nil {
				return nil, err
			}
			if d != nil {
				seq = append(seq, d)
			}
		}
		return seq, nil
	case "ByteLevel":
		return byteLevelDecoder{bl: bl}, nil
	case "Metaspace":
		repl, scheme := metaspaceSettings(c)
		return metaspaceDecoder{replacement: repl, stripFirst: scheme != "never"}, nil
	case "Replace":
		if c.Pattern == nil || c.Pattern.String == nil {
			return nil, fmt.Errorf("%w: decoder Replace with a regex", ErrUnsupported)
		}
		return replaceDecoder{from: *c.Pattern.String, to: c.Content}, nil
	case "ByteFallback":
		return byteFallbackDecoder{}, nil
	case "Fuse":
		return fuseDecoder{}, nil
	case "Strip":
		r, _ := utf8.DecodeRuneInString(c.Content)
		return stripDecoder{content: r, start: c.Start, stop: c.Stop}, nil
	}
	return nil, fmt.Errorf("%w: decoder %q", ErrUnsupported, c.Type)
}

// parsePostProcessor returns the ids a single sequence is wrapped in;
// found is false when the processor adds nothing of its own.
func parsePostProcessor(raw json.RawMessage, lookup func(string) (int32, bool)) (prefix, suffix []int32, found bool, err error) {
	if isNull(raw) {
		return nil, nil, false, nil
	}
	var c hfComponent
	if err := json.Unmarshal(raw, &c); err != nil {
		return nil, nil, false, fmt.Errorf("post_processor: %w", err)
	}
	switch c.Type {
	case "Sequence":
		for _, r := range c.Processors {
			p, s, ok, err := parsePostProcessor(r, lookup)
			if err != nil {
				return nil, nil, false, err
			}
			if ok {
				return p, s, true, nil
			}
		}
		return nil, nil, false, nil
	case "TemplateProcessing":
		seen := false
		for _, piece := range c.Single {
			switch {
			case piece.Sequence != nil:
				seen = true
			case piece.SpecialToken != nil:
				st, ok := c.SpecialTokens[piece.SpecialToken.ID]
				if !ok {
					return nil, nil, false, fmt.Errorf("post_processor: template names unknown special token %q", piece.SpecialToken.ID)
				}
				if seen {
					suffix = append(suffix, st.IDs...)
				} else {
					prefix = append(prefix, st.IDs...)
				}
			}
		}
		return prefix, suffix, true, nil
	case "BertProcessing", "RobertaProcessing":
		cls, err := tokenPair(c.Cls)
		if err != nil {
			return nil, nil, false, fmt.Errorf("post_processor cls: %w", err)
		}
		sep, err := tokenPair(c.Sep)
		if err != nil {
			return nil, nil, false, fmt.Errorf("post_processor sep: %w", err)
		}
		return []int32{cls}, []int32{sep}, true, nil
	}
	return nil, nil, false, nil // ByteLevel and friends only touch offsets
}

// tokenPair reads ["<s>", 0].
func tokenPair(raw []json.RawMessage) (int32, error) {
	if len(raw) != 2 {
		return 0, errors.New("want [token, id]")
	}
	var id int32
	if err := json.Unmarshal(raw[1], &id); err != nil {
		return 0, err
	}
	return id, nil
}

// parseMerges accepts both ["a b", ...] and [["a", "b"], ...].
func parseMerges(raw json.RawMessage) ([][2]string, error) {
	if isNull(raw) {
		return nil, nil
	}
	var pairs [][2]string
	if err := json.Unmarshal(raw, &pairs); err == nil {
		return pairs, nil
	}
	var lines []string
	if err := json.Unmarshal(raw, &lines); err != nil {
		return nil, fmt.Errorf("merges: %w", err)
	}
	pairs = make([][2]string, len(lines))
	for i, l := range lines {
		a, b, ok := strings.Cut(l, " ")
		if !ok || strings.Contains(b, " ") {
			return nil, fmt.Errorf("merges: line %d %q is not two tokens", i, l)
		}
		pairs[i] = [2]string{a, b}
	}
	return pairs, nil
}

// LoadFile reads a tokenizer.json (and the tokenizer_config.json next to it,
// if any).
func LoadFile(path string) (*Tokenizer, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("load tokenizer: %w", err)
	}
	cfg, err := readConfig(filepath.Dir(path))
	if err != nil {
		return nil, err
	}
	t, err := FromJSON(data, cfg)
	if err != nil {
		return nil, fmt.Errorf("load %s: %w", path, err)
	}
	return t, nil
}

// LoadDir loads tokenizer.json and tokenizer_config.json from a model
// directory (the model files themselves are not needed).
func LoadDir(dir string) (*Tokenizer, error) {
	return LoadFile(filepath.Join(dir, "tokenizer.json"))
}
