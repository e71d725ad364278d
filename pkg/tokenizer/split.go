package tokenizer

import (
	"unicode"
	"unicode/utf8"
)

// The pre-tokenizer regexes of GPT-2, Llama-3 and Qwen2 use a lookahead
// (`\s+(?!\S)`) that Go's regexp cannot express, and running them through a
// backtracking engine costs more than the BPE itself. These hand-written
// scanners reproduce exactly what a leftmost-first regex engine returns for
// those three patterns; any other pattern goes through regexp2.

const (
	patGPT2 = `'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+`
	// Llama-3 (tiktoken cl100k style): digits in groups of up to three.
	patLlama3 = `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`
	// Qwen2/Qwen3: the same with single digits.
	patQwen2 = `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`
	// llama.cpp writes the case-insensitive group out by hand.
	patLlama3CPP = `(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`
	patQwen2CPP  = `(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`
)

const (
	catOther uint8 = iota
	catLetter
	catNumber
	catSpace
)

// category classifies a rune the way \p{L}, \p{N} and \s do (Unicode
// White_Space for \s, as Oniguruma does).
func category(r rune) uint8 {
	if r < utf8.RuneSelf {
		switch {
		case 'a' <= r && r <= 'z', 'A' <= r && r <= 'Z':
			return catLetter
		case '0' <= r && r <= '9':
			return catNumber
		case r == ' ', '\t' <= r && r <= '\r':
			return catSpace
		}
		return catOther
	}
	switch {
	case unicode.IsLetter(r):
		return catLetter
	case unicode.IsNumber(r):
		return catNumber
	case unicode.IsSpace(r):
		return catSpace
	}
	return catOther
}

// cpAt decodes the code point at byte offset i of s: its rune, byte
// length and category. Past the end it returns size 0.
func cpAt(s string, i int) (rune, int, uint8) {
	if i >= len(s) {
		return 0, 0, catOther
	}
	if c := s[i]; c < utf8.RuneSelf {
		return rune(c), 1, category(rune(c))
	}
	r, size := utf8.DecodeRuneInString(s[i:])
	return r, size, category(r)
}

// fastPattern identifies one of the hand-written scanners.
type fastPattern int

const (
	fastNone fastPattern = iota
	fastGPT2
	fastLlama3
	fastQwen2
)

func lookupFastPattern(pattern string) fastPattern {
	switch pattern {
	case patGPT2:
		return fastGPT2
	case patLlama3, patLlama3CPP:
		return fastLlama3
	case patQwen2, patQwen2CPP:
		return fastQwen2
	}
	return fastNone
}

// fastFinder implements matchFinder for the known patterns.
type fastFinder struct{ kind fastPattern }

func (f fastFinder) matches(dst [][2]int, s string) [][2]int {
	f.each(s, func(start, end int) { dst = append(dst, [2]int{start, end}) })
	return dst
}

// each calls fn with every match in order. The three patterns match every
// character, so matches tile s completely.
func (f fastFinder) each(s string, fn func(start, end int)) {
	for i := 0; i < len(s); {
		var j int
		switch f.kind {
		case fastGPT2:
			j = scanGPT2(s, i)
		case fastQwen2:
			j = scanLlama3(s, i, 1)
		default:
			j = scanLlama3(s, i, 3)
		}
		fn(i, j)
		i = j
	}
}

// foldContraction lowers the letters the contraction group can match;
// Oniguruma's case folding also maps U+017F (long s) to 's'.
func foldContraction(r rune) rune {
	if 'A' <= r && r <= 'Z' {
		return r + ('a' - 'A')
	}
	if r == 'ſ' {
		return 's'
	}
	return r
}

// contraction returns the byte length of a 's|'t|'re|'ve|'m|'ll|'d match
// at i, or 0.
func contraction(s string, i int, fold bool) int {
	if s[i] != '\'' {
		return 0
	}
	lower := func(r rune) rune { return r }
	if fold {
		lower = foldContraction
	}
	r1, n1, _ := cpAt(s, i+1)
	if n1 == 0 {
		return 0
	}
	switch lower(r1) {
	case 's', 't', 'm', 'd':
		return 1 + n1
	}
	r2, n2, _ := cpAt(s, i+1+n1)
	if n2 == 0 {
		return 0
	}
	c1, c2 := lower(r1), lower(r2)
	if (c1 == 'r' && c2 == 'e') || (c1 == 'v' && c2 == 'e') || (c1 == 'l' && c2 == 'l') {
		return 1 + n1 + n2
	}
	return 0
}

func isNL(r rune) bool { return r == '\r' || r == '\n' }

// runOf advances from i over code points of category cat.
func runOf(s string, i int, cat uint8) int {
	for i < len(s) {
		_, n, c := cpAt(s, i)
		if c != cat {
			break
		}
		i += n
	}
	return i
}

// scanLlama3 returns the end (byte offset) of the Llama-3 / Qwen2 pattern's
// match at i; maxDigits is 3 (Llama-3) or 1 (Qwen2).
func scanLlama3(s string, i, maxDigits int) int {
	if k := contraction(s, i, true); k > 0 {
		return i + k
	}
	r, n, c := cpAt(s, i)
	_, n1, c1 := cpAt(s, i+n)
	// [^\r\n\p{L}\p{N}]?\p{L}+
	if c == catLetter {
		return runOf(s, i+n, catLetter)
	}
	if !isNL(r) && c != catNumber && c1 == catLetter {
		return runOf(s, i+n+n1, catLetter)
	}
	// \p{N}{1,maxDigits}
	if c == catNumber {
		j := i + n
		for k := 1; k < maxDigits; k++ {
			_, nd, cd := cpAt(s, j)
			if cd != catNumber || nd == 0 {
				break
			}
			j += nd
		}
		return j
	}
	// ' ?[^\s\p{L}\p{N}]+[\r\n]*'
	k := i
	if r == ' ' && n1 > 0 && c1 == catOther {
		k = i + n
	}
	if _, nk, ck := cpAt(s, k); ck == catOther && nk > 0 {
		j := runOf(s, k+nk, catOther)
		for j < len(s) && (s[j] == '\r' || s[j] == '\n') {
			j++
		}
		return j
	}
	// Only whitespace is left: \s*[\r\n]+ | \s+(?!\S) | \s+
	j, lastNL, last := i, -1, i
	for j < len(s) {
		rj, nj, cj := cpAt(s, j)
		if cj != catSpace {
			break
		}
		if isNL(rj) {
			lastNL = j + nj
		}
		last = j
		j += nj
	}
	if lastNL > 0 {
		return lastNL
	}
	if last > i && j < len(s) {
		return last // leave the last space to prefix the next word
	}
	return j
}

// scanGPT2 returns the end of the GPT-2 pattern's match at i.
func scanGPT2(s string, i int) int {
	if k := contraction(s, i, false); k > 0 {
		return i + k
	}
	r, n, c := cpAt(s, i)
	k, cat := i, c
	if r == ' ' {
		if _, n1, c1 := cpAt(s, i+n); n1 > 0 && c1 != catSpace {
			k, cat = i+n, c1
		}
	}
	if cat != catSpace {
		// ' ?\p{L}+', ' ?\p{N}+' and ' ?[^\s\p{L}\p{N}]+' each take a run of one class.
		_, nk, _ := cpAt(s, k)
		return runOf(s, k+nk, cat)
	}
	j, last := i, i
	for j < len(s) {
		_, nj, cj := cpAt(s, j)
		if cj != catSpace {
			break
		}
		last = j
		j += nj
	}
	if last > i && j < len(s) {
		return last
	}
	return j
}
