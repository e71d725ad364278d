package tokenizer

import (
	"strconv"
	"strings"
)

// decoderStep is one HF decoder: it rewrites the list of token strings.
// raw asks for invalid UTF-8 to be kept as bytes instead of being replaced
// with U+FFFD (incremental decoding needs to see the bytes).
type decoderStep interface {
	decodeChain(tokens []string, raw bool) []string
}

type seqDecoder []decoderStep

func (d seqDecoder) decodeChain(tokens []string, raw bool) []string {
	for _, x := range d {
		tokens = x.decodeChain(tokens, raw)
	}
	return tokens
}

// byteLevelDecoder maps the byte-level alphabet back to bytes and joins
// everything; a token with a character outside the alphabet (an added
// token written in plain text) contributes its own UTF-8.
type byteLevelDecoder struct{ bl *byteLevelMap }

func (d byteLevelDecoder) decodeChain(tokens []string, raw bool) []string {
	var buf []byte
	for _, t := range tokens {
		if b, ok := d.bl.decode(t); ok {
			buf = append(buf, b...)
		} else {
			buf = append(buf, t...)
		}
	}
	if raw {
		return []string{string(buf)}
	}
	return []string{lossyUTF8(buf)}
}

// metaspaceDecoder turns the replacement character back into spaces; in the
// first token it is dropped instead (the prefix space the encoder added).
type metaspaceDecoder struct {
	replacement string
	stripFirst  bool
}

func (d metaspaceDecoder) decodeChain(tokens []string, _ bool) []string {
	out := make([]string, len(tokens))
	for i, t := range tokens {
		if i == 0 && d.stripFirst {
			out[i] = strings.ReplaceAll(t, d.replacement, "")
		} else {
			out[i] = strings.ReplaceAll(t, d.replacement, " ")
		}
	}
	return out
}

type replaceDecoder struct{ from, to string }

func (d replaceDecoder) decodeChain(tokens []string, _ bool) []string {
	out := make([]string, len(tokens))
	for i, t := range tokens {
		out[i] = strings.ReplaceAll(t, d.from, d.to)
	}
	return out
}

// parseByteToken reads "<0xXX>".
func parseByteToken(t string) (byte, bool) {
	if len(t) != 6 || !strings.HasPrefix(t, "<0x") || t[5] != '>' {
		return 0, false
	}
	v, err := strconv.ParseUint(t[3:5], 16, 8)
	if err != nil {
		return 0, false
	}
	return byte(v), true
}

// byteFallbackDecoder joins runs of <0xXX> tokens into text; HF replaces a
// run that is not valid UTF-8 by one U+FFFD per byte.
type byteFallbackDecoder struct{}

func (byteFallbackDecoder) decodeChain(tokens []string, raw bool) []string {
	out := make([]string, 0, len(tokens))
	var run []byte
	flush := func() {
		if len(run) == 0 {
			return
		}
		switch {
		case raw || isValidUTF8(run):
			out = append(out, string(run))
		default:
			out = append(out, strings.Repeat("\uFFFD", len(run)))
		}
		run = run[:0]
	}
	for _, t := range tokens {
		if b, ok := parseByteToken(t); ok {
			run = append(run, b)
			continue
		}
		flush()
		out = append(out, t)
	}
	flush()
	return out
}

type fuseDecoder struct{}

func (fuseDecoder) decodeChain(tokens []string, _ bool) []string {
	return []string{strings.Join(tokens, "")}
}

// stripDecoder removes up to start/stop copies of content from each
// token's ends.
type stripDecoder struct {
	content     rune
	start, stop int
}

func (d stripDecoder) decodeChain(tokens []string, _ bool) []string {
	out := make([]string, len(tokens))
	for i, t := range tokens {
		for k := 0; k < d.start && strings.HasPrefix(t, string(d.content)); k++ {
			t = t[len(string(d.content)):]
		}
		for k := 0; k < d.stop && strings.HasSuffix(t, string(d.content)); k++ {
			t = t[:len(t)-len(string(d.content))]
		}
		out[i] = t
	}
	return out
}

// tokenStrings lists the strings HF hands its decoder: vocabulary text of
// every known id, special tokens dropped when asked.
func (t *Tokenizer) tokenStrings(ids []int32, skipSpecial bool) []string {
	toks := make([]string, 0, len(ids))
	for _, id := range ids {
		if id < 0 || int(id) >= t.vocab.len() || !t.known[id] {
			continue
		}
		if skipSpecial && t.special[id] {
			continue
		}
		toks = append(toks, t.vocab.at(int(id)))
	}
	return toks
}

func (t *Tokenizer) decode(ids []int32, skipSpecial, raw bool) string {
	toks := t.tokenStrings(ids, skipSpecial)
	if t.dec == nil {
		return strings.Join(toks, " ")
	}
	return strings.Join(t.dec.decodeChain(toks, raw), "")
}

// Decode turns ids back into text as HF's tokenizer.decode does (without
// transformers' clean_up_tokenization_spaces). Unknown ids are skipped.
func (t *Tokenizer) Decode(ids []int32, skipSpecial bool) string {
	return t.decode(ids, skipSpecial, false)
}

// DecodeState is where incremental decoding of one sequence stands: plain
// ints so the detokenizer can keep it in shared memory. Ids before
// PrefixOffset no longer matter; ids from ReadOffset on are not emitted yet.
type DecodeState struct {
	PrefixOffset int
	ReadOffset   int
}

// NewDecodeState starts incremental decoding after a prompt of promptLen
// ids, with a few prompt tokens of context as LightLLM does (so a decoder
// that strips a leading space sees the same first token every time).
func NewDecodeState(promptLen int) DecodeState {
	return DecodeState{PrefixOffset: max(promptLen-5, 0), ReadOffset: promptLen}
}

// DecodeIncremental returns the text that ids[st.ReadOffset:] add, and
// advances st. It returns "" and holds the new ids back while the decoded
// bytes end inside an unfinished UTF-8 sequence, so a split character never
// comes out as U+FFFD. Pieces concatenated (plus DecodeFlush at the end)
// equal Decode of the same ids for well-formed output.
func (t *Tokenizer) DecodeIncremental(ids []int32, st *DecodeState, skipSpecial bool) string {
	return t.decodeStep(ids, st, skipSpecial, false)
}

// DecodeFlush emits whatever DecodeIncremental still holds back (a
// sequence that ended inside a character), as U+FFFD where invalid.
func (t *Tokenizer) DecodeFlush(ids []int32, st *DecodeState, skipSpecial bool) string {
	return t.decodeStep(ids, st, skipSpecial, true)
}

func (t *Tokenizer) decodeStep(ids []int32, st *DecodeState, skipSpecial, flush bool) string {
	st.ReadOffset = min(max(st.ReadOffset, 0), len(ids))
	st.PrefixOffset = min(max(st.PrefixOffset, 0), st.ReadOffset)
	if st.ReadOffset == len(ids) {
		return ""
	}
	prefix := t.decode(ids[st.PrefixOffset:st.ReadOffset], skipSpecial, true)
	full := t.decode(ids[st.PrefixOffset:], skipSpecial, true)
	common := commonPrefixLen(prefix, full)
	if len(full) <= common {
		return "" // nothing visible yet (e.g. a skipped special token)
	}
	if !flush && incompleteTail(full) > 0 {
		return ""
	}
	st.PrefixOffset, st.ReadOffset = st.ReadOffset, len(ids)
	return lossyUTF8([]byte(full[common:]))
}

func commonPrefixLen(a, b string) int {
	n := min(len(a), len(b))
	for i := 0; i < n; i++ {
		if a[i] != b[i] {
			return i
		}
	}
	return n
}

func isValidUTF8(b []byte) bool {
	for i := 0; i < len(b); {
		n, ok := validPrefixLen(b[i:])
		if !ok {
			return false
		}
		i += n
	}
	return true
}
