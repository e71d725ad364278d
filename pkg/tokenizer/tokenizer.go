// Package tokenizer is a pure-Go implementation of the tokenizers LLMs ship
// with: Hugging Face tokenizer.json (byte-level BPE as in Llama-3 and Qwen,
// SentencePiece-style BPE with byte fallback as in Llama-2 and Mistral) and
// the vocabularies embedded in GGUF files (llama.cpp's "llama" SentencePiece
// and "gpt2" BPE). It encodes as the reference implementations do, token for
// token, decodes, and decodes incrementally for streaming.
//
// A Tokenizer is immutable after loading and safe for concurrent use.
package tokenizer

import (
	"strings"
	"sync"
	"unicode/utf8"
)

// Tokenizer encodes text to token ids and back.
type Tokenizer struct {
	vocab   strList // id → token as the vocabulary writes it (byte-level / ▁ form, or added content)
	known   []bool  // id is assigned
	special []bool  // id is a special token (skipped by skipSpecial)
	byID    *strIndex

	added     *addedMatcher // matched in the raw text
	addedNorm *addedMatcher // matched in normalized text
	norm      normalizer    // nil: none
	pre       preTokenizer  // nil: the whole segment is one word
	bpe       *bpeModel     // exactly one of bpe and spm is set
	spm       *spmModel
	dec       decoderStep // nil: tokens joined by spaces (HF default)
	bl        *byteLevelMap

	prefixIDs, suffixIDs []int32 // what addSpecial adds around the text
	bos, eos, unk, pad   int32
	chatTemplate         string

	splitMeta bool       // cut un-pre-tokenized text before each "▁" that follows another character
	cache     *wordCache // ids of short words already encoded
	scratch   sync.Pool  // *encodeScratch
}

type encodeScratch struct {
	segs  []segment
	segs2 []segment
	words []string
	bpe   bpeScratch
}

func (t *Tokenizer) getScratch() *encodeScratch {
	if sc, ok := t.scratch.Get().(*encodeScratch); ok {
		return sc
	}
	return &encodeScratch{}
}

// Encode tokenizes text. Added and special tokens written in the text are
// recognised (as HF does by default). addSpecial adds what the tokenizer's
// configuration puts around a sequence (typically BOS), like HF's
// add_special_tokens.
func (t *Tokenizer) Encode(text string, addSpecial bool) []int32 {
	out := make([]int32, 0, len(text)/3+4)
	if addSpecial {
		out = append(out, t.prefixIDs...)
	}
	sc := t.getScratch()
	sc.segs = t.added.split(sc.segs[:0], text)
	for i, sg := range sc.segs {
		if sg.id >= 0 {
			out = append(out, sg.id)
			continue
		}
		s := sg.text
		if t.norm != nil {
			s = t.norm.normalize(s)
		}
		sc.segs2 = t.addedNorm.split(sc.segs2[:0], s)
		for j, sub := range sc.segs2 {
			if sub.id >= 0 {
				out = append(out, sub.id)
				continue
			}
			out = t.encodeSegment(out, sub.text, i == 0 && j == 0, sc)
		}
	}
	// Drop references into text so a pooled scratch does not keep it alive.
	clear(sc.segs)
	clear(sc.segs2)
	clear(sc.words)
	t.scratch.Put(sc)
	if addSpecial {
		out = append(out, t.suffixIDs...)
	}
	return out
}

// encodeSegment pre-tokenizes one normalized segment and runs the model on
// each word.
func (t *Tokenizer) encodeSegment(out []int32, s string, first bool, sc *encodeScratch) []int32 {
	if s == "" {
		return out
	}
	if t.pre == nil {
		// Byte positions only equal character boundaries in valid UTF-8.
		if !t.splitMeta || !utf8.ValidString(s) {
			return t.encodeWord(out, s, sc)
		}
		for len(s) > 0 {
			n := nextMetaBoundary(s)
			out = t.encodeWord(out, s[:n], sc)
			s = s[n:]
		}
		return out
	}
	sc.words = t.pre.split(sc.words[:0], s, first)
	for _, w := range sc.words {
		out = t.encodeWord(out, w, sc)
	}
	return out
}

// encodeWord runs the model on one word, through the word cache.
func (t *Tokenizer) encodeWord(out []int32, w string, sc *encodeScratch) []int32 {
	cacheable := t.cache != nil && len(w) <= cacheMaxWordLen
	if cacheable {
		if ids, ok := t.cache.get(w); ok {
			return append(out, ids...)
		}
	}
	n := len(out)
	if t.spm != nil {
		out = t.spm.encode(out, w)
	} else {
		out = t.bpe.encode(out, w, &sc.bpe)
	}
	if cacheable {
		t.cache.put(w, out[n:])
	}
	return out
}

// metaBoundaryAt reports whether s[i:] starts with "▁" that follows a
// character other than "▁".
func metaBoundaryAt(s string, i int) bool {
	return i > 0 && s[i] == metaspace[0] && strings.HasPrefix(s[i:], metaspace) &&
		!(i >= len(metaspace) && s[i-len(metaspace):i] == metaspace)
}

// nextMetaBoundary is the length of the first piece of s when s is cut at
// every metaBoundaryAt.
func nextMetaBoundary(s string) int {
	for i := 1; i < len(s); i++ {
		if metaBoundaryAt(s, i) {
			return i
		}
	}
	return len(s)
}

const metaspace = "▁"

// metaSplitSafe reports whether no model token (added tokens are matched
// before the model runs) contains a metaBoundaryAt. Then no merge can join
// across such a point, so cutting the text there changes nothing but the
// cost: merging one long word is superlinear, and short words hit the cache.
func metaSplitSafe(tokens []string, added []bool) bool {
	for id, tok := range tokens {
		if added != nil && added[id] {
			continue
		}
		for i := 1; i < len(tok); i++ {
			if metaBoundaryAt(tok, i) {
				return false
			}
		}
	}
	return true
}

// VocabSize is the number of ids (highest id + 1), added tokens included.
func (t *Tokenizer) VocabSize() int { return t.vocab.len() }

// BOS is the beginning-of-sequence id, -1 when the tokenizer has none.
func (t *Tokenizer) BOS() int32 { return t.bos }

// EOS is the end-of-sequence id, -1 when the tokenizer has none.
func (t *Tokenizer) EOS() int32 { return t.eos }

// UNK is the unknown-token id, -1 when none.
func (t *Tokenizer) UNK() int32 { return t.unk }

// PAD is the padding id, -1 when none.
func (t *Tokenizer) PAD() int32 { return t.pad }

// IsSpecial reports whether id is a special token (control tokens, BOS/EOS…).
func (t *Tokenizer) IsSpecial(id int32) bool {
	return id >= 0 && int(id) < len(t.special) && t.special[id]
}

// ChatTemplate is the Jinja chat template shipped with the tokenizer, "" when none.
func (t *Tokenizer) ChatTemplate() string { return t.chatTemplate }

// TokenID looks up the id of a token by its vocabulary text (or added
// token content); ok is false when absent.
func (t *Tokenizer) TokenID(token string) (int32, bool) {
	id, ok := t.byID.get(token)
	return id, ok
}

// Token is the vocabulary text of id ("" when unknown).
func (t *Tokenizer) Token(id int32) string {
	if id < 0 || int(id) >= t.vocab.len() {
		return ""
	}
	return t.vocab.at(int(id))
}

// TokenBytes is the raw bytes id stands for: byte-level characters and
// <0xXX> byte tokens resolved, ▁ turned back into a space. nil for unknown ids.
func (t *Tokenizer) TokenBytes(id int32) []byte {
	if id < 0 || int(id) >= t.vocab.len() || !t.known[id] {
		return nil
	}
	s := t.vocab.at(int(id))
	if t.bl != nil {
		if b, ok := t.bl.decode(s); ok {
			return b
		}
		return []byte(s)
	}
	if b, ok := parseByteToken(s); ok {
		return []byte{b}
	}
	return []byte(strings.ReplaceAll(s, metaspace, " "))
}
