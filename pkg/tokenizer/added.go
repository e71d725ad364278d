package tokenizer

import (
	"unicode"
	"unicode/utf8"
)

// addedToken is an entry of HF's added_tokens (or a GGUF control /
// user-defined token): matched in the text before the model sees it.
type addedToken struct {
	id         int32
	content    string
	special    bool
	lstrip     bool
	rstrip     bool
	normalized bool
	singleWord bool
}

// addedMatcher finds added tokens leftmost-longest, as HF's Aho-Corasick
// matcher (MatchKind::LeftmostLongest) does.
type addedMatcher struct {
	tokens []addedToken
	nodes  []trieNode
	first  [256]bool
}

type trieNode struct {
	children map[byte]int32
	tok      int32 // index into tokens, -1 when no token ends here
}

func newAddedMatcher(tokens []addedToken) *addedMatcher {
	m := &addedMatcher{tokens: tokens, nodes: []trieNode{{tok: -1}}}
	for i, t := range tokens {
		if t.content == "" {
			continue
		}
		m.first[t.content[0]] = true
		n := int32(0)
		for j := 0; j < len(t.content); j++ {
			c := t.content[j]
			child, ok := m.nodes[n].children[c]
			if !ok {
				child = int32(len(m.nodes))
				m.nodes = append(m.nodes, trieNode{tok: -1})
				if m.nodes[n].children == nil {
					m.nodes[n].children = make(map[byte]int32)
				}
				m.nodes[n].children[c] = child
			}
			n = child
		}
		if m.nodes[n].tok < 0 {
			m.nodes[n].tok = int32(i)
		}
	}
	return m
}

// longestAt returns the token index and end of the longest token starting
// at i, or -1.
func (m *addedMatcher) longestAt(s string, i int) (int32, int) {
	best, bestEnd := int32(-1), 0
	n := int32(0)
	for j := i; j < len(s); j++ {
		child, ok := m.nodes[n].children[s[j]]
		if !ok {
			break
		}
		n = child
		if t := m.nodes[n].tok; t >= 0 {
			best, bestEnd = t, j+1
		}
	}
	return best, bestEnd
}

// segment is a piece of input: either text (id < 0) or an added token.
type segment struct {
	text string
	id   int32
}

// split cuts s into text and added-token segments, honouring single_word,
// lstrip and rstrip the way HF's AddedVocabulary::find_matches does.
func (m *addedMatcher) split(dst []segment, s string) []segment {
	if m == nil || len(m.tokens) == 0 || s == "" {
		return append(dst, segment{text: s, id: -1})
	}
	startOffset := 0
	for i := 0; i < len(s); {
		if !m.first[s[i]] {
			i++
			continue
		}
		ti, stop := m.longestAt(s, i)
		if ti < 0 {
			i++
			continue
		}
		tok := &m.tokens[ti]
		start := i
		i = stop // the matcher resumes after the raw match either way
		if tok.singleWord {
			startSpace := start == 0 || !endsWithWord(s[:start])
			stopSpace := stop == len(s) || !startsWithWord(s[stop:])
			if !startSpace || !stopSpace {
				continue
			}
		}
		if tok.lstrip {
			start = max(spaceLeftmostAtEnd(s[:start]), startOffset)
		}
		if tok.rstrip {
			stop += spaceRightmostAtStart(s[stop:])
			i = stop
		}
		if start > startOffset {
			dst = append(dst, segment{text: s[startOffset:start], id: -1})
		}
		dst = append(dst, segment{text: s[start:stop], id: tok.id})
		startOffset = stop
	}
	if startOffset < len(s) {
		dst = append(dst, segment{text: s[startOffset:], id: -1})
	}
	return dst
}

func isAlnum(r rune) bool { return unicode.IsLetter(r) || unicode.IsNumber(r) }

func endsWithWord(s string) bool {
	r, _ := utf8.DecodeLastRuneInString(s)
	return s != "" && isAlnum(r)
}

func startsWithWord(s string) bool {
	r, _ := utf8.DecodeRuneInString(s)
	return s != "" && isAlnum(r)
}

// spaceLeftmostAtEnd is the offset where the trailing whitespace of s starts.
func spaceLeftmostAtEnd(s string) int {
	i := len(s)
	for i > 0 {
		r, size := utf8.DecodeLastRuneInString(s[:i])
		if !unicode.IsSpace(r) {
			break
		}
		i -= size
	}
	return i
}

// spaceRightmostAtStart is the length of the leading whitespace of s.
func spaceRightmostAtStart(s string) int {
	i := 0
	for i < len(s) {
		r, size := utf8.DecodeRuneInString(s[i:])
		if !unicode.IsSpace(r) {
			break
		}
		i += size
	}
	return i
}
