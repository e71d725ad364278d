package tokenizer

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/dlclark/regexp2"
)

// matchFinder reports the [start,end) byte ranges of successive
// non-overlapping matches of a pattern in s.
type matchFinder interface {
	matches(dst [][2]int, s string) [][2]int
}

// regexFinder runs patterns the fast scanners do not know (Oniguruma and
// .NET share the syntax the HF files use: \p{..}, lookarounds, (?i:..)).
type regexFinder struct{ re *regexp2.Regexp }

func newRegexFinder(pattern string) (matchFinder, error) {
	if k := lookupFastPattern(pattern); k != fastNone {
		return fastFinder{kind: k}, nil
	}
	re, err := regexp2.Compile(pattern, regexp2.None)
	if err != nil {
		return nil, fmt.Errorf("compile pre-tokenizer regex %q: %w", pattern, err)
	}
	return regexFinder{re: re}, nil
}

func (f regexFinder) matches(dst [][2]int, s string) [][2]int {
	// regexp2 reports rune indexes; keep each rune's byte offset to map back.
	runes := make([]rune, 0, len(s))
	offs := make([]int, 0, len(s)+1)
	for i, r := range s {
		runes = append(runes, r)
		offs = append(offs, i)
	}
	offs = append(offs, len(s))
	m, err := f.re.FindRunesMatch(runes)
	for err == nil && m != nil {
		if m.Length > 0 {
			dst = append(dst, [2]int{offs[m.Index], offs[m.Index+m.Length]})
		}
		m, err = f.re.FindNextMatch(m)
	}
	return dst
}

type literalFinder struct{ lit string }

func (f literalFinder) matches(dst [][2]int, s string) [][2]int {
	if f.lit == "" {
		return dst
	}
	for off := 0; ; {
		i := strings.Index(s[off:], f.lit)
		if i < 0 {
			return dst
		}
		dst = append(dst, [2]int{off + i, off + i + len(f.lit)})
		off += i + len(f.lit)
	}
}

// splitBehavior is HF's SplitDelimiterBehavior.
type splitBehavior int

const (
	splitRemoved splitBehavior = iota
	splitIsolated
	splitMergedWithPrevious
	splitMergedWithNext
	splitContiguous
)

func parseSplitBehavior(s string) (splitBehavior, error) {
	switch strings.ToLower(s) {
	case "removed":
		return splitRemoved, nil
	case "isolated":
		return splitIsolated, nil
	case "mergedwithprevious", "merged_with_previous":
		return splitMergedWithPrevious, nil
	case "mergedwithnext", "merged_with_next":
		return splitMergedWithNext, nil
	case "contiguous":
		return splitContiguous, nil
	}
	return 0, fmt.Errorf("unknown split behavior %q", s)
}

// applySplit cuts s at the matches of f and keeps the delimiters as
// behavior says (HF NormalizedString::split); empty pieces are dropped.
func applySplit(dst []string, s string, f matchFinder, behavior splitBehavior, invert bool) []string {
	if s == "" {
		return dst
	}
	type span struct {
		start, end int
		match      bool
	}
	var spans []span
	prev := 0
	for _, m := range f.matches(nil, s) {
		if m[0] > prev {
			spans = append(spans, span{prev, m[0], invert})
		}
		spans = append(spans, span{m[0], m[1], !invert})
		prev = m[1]
	}
	if prev < len(s) {
		spans = append(spans, span{prev, len(s), invert})
	}
	switch behavior {
	case splitIsolated:
		for _, sp := range spans {
			dst = append(dst, s[sp.start:sp.end])
		}
	case splitRemoved:
		for _, sp := range spans {
			if !sp.match {
				dst = append(dst, s[sp.start:sp.end])
			}
		}
	case splitMergedWithPrevious:
		start, open := 0, false
		for _, sp := range spans {
			if sp.match && open {
				dst = append(dst, s[start:sp.end])
				open = false
				continue
			}
			if open {
				dst = append(dst, s[start:sp.start])
			}
			if sp.match {
				dst = append(dst, s[sp.start:sp.end])
				open = false
			} else {
				start, open = sp.start, true
			}
		}
		if open {
			dst = append(dst, s[start:])
		}
	case splitMergedWithNext:
		start, open := 0, false
		for _, sp := range spans {
			if sp.match {
				if open {
					dst = append(dst, s[start:sp.start])
				}
				start, open = sp.start, true
				continue
			}
			if !open {
				start = sp.start
			}
			dst = append(dst, s[start:sp.end])
			open = false
		}
		if open {
			dst = append(dst, s[start:])
		}
	case splitContiguous:
		start, inMatch := 0, false
		for i, sp := range spans {
			if sp.match && inMatch {
				continue
			}
			if i > 0 {
				dst = append(dst, s[start:sp.start])
			}
			start, inMatch = sp.start, sp.match
		}
		dst = append(dst, s[start:])
	}
	return dst
}

// preTokenizer cuts one normalized segment into the words the model encodes.
// first says whether the segment starts the input (Metaspace "first").
type preTokenizer interface {
	split(dst []string, s string, first bool) []string
}

type seqPreTokenizer []preTokenizer

func (p seqPreTokenizer) split(dst []string, s string, first bool) []string {
	cur := []string{s}
	for _, pt := range p {
		var next []string
		for i, piece := range cur {
			next = pt.split(next, piece, first && i == 0)
		}
		cur = next
	}
	return append(dst, cur...)
}

type splitPreTokenizer struct {
	finder   matchFinder
	behavior splitBehavior
	invert   bool
}

func (p splitPreTokenizer) split(dst []string, s string, _ bool) []string {
	if f, ok := p.finder.(fastFinder); ok && p.behavior == splitIsolated && !p.invert {
		// The fast patterns tile the text: every match is a piece.
		f.each(s, func(start, end int) { dst = append(dst, s[start:end]) })
		return dst
	}
	return applySplit(dst, s, p.finder, p.behavior, p.invert)
}

// byteLevelPreTokenizer only splits (with the GPT-2 regex) and adds the
// prefix space; the byte→character mapping is folded into the BPE model.
type byteLevelPreTokenizer struct {
	addPrefixSpace bool
	useRegex       bool
}

func (p byteLevelPreTokenizer) split(dst []string, s string, _ bool) []string {
	if p.addPrefixSpace && !strings.HasPrefix(s, " ") {
		s = " " + s
	}
	if !p.useRegex {
		if s != "" {
			dst = append(dst, s)
		}
		return dst
	}
	return applySplit(dst, s, fastFinder{kind: fastGPT2}, splitIsolated, false)
}

// metaspacePreTokenizer replaces spaces by the replacement character and
// optionally splits before each one (HF Metaspace).
type metaspacePreTokenizer struct {
	replacement string
	prepend     string // "always", "first" or "never"
	splitWords  bool
}

func (p metaspacePreTokenizer) split(dst []string, s string, first bool) []string {
	s = strings.ReplaceAll(s, " ", p.replacement)
	if (p.prepend == "always" || (p.prepend == "first" && first)) && !strings.HasPrefix(s, p.replacement) {
		s = p.replacement + s
	}
	if !p.splitWords {
		if s != "" {
			dst = append(dst, s)
		}
		return dst
	}
	return applySplit(dst, s, literalFinder{p.replacement}, splitMergedWithNext, false)
}

// digitsPreTokenizer isolates digits, one by one or in runs.
type digitsPreTokenizer struct{ individual bool }

func (p digitsPreTokenizer) split(dst []string, s string, _ bool) []string {
	return applySplit(dst, s, digitFinder(p), splitIsolated, false)
}

type digitFinder struct{ individual bool }

func (f digitFinder) matches(dst [][2]int, s string) [][2]int {
	start := -1
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		isDigit := category(r) == catNumber
		switch {
		case isDigit && f.individual:
			dst = append(dst, [2]int{i, i + size})
		case isDigit && start < 0:
			start = i
		case !isDigit && start >= 0:
			dst = append(dst, [2]int{start, i})
			start = -1
		}
		i += size
	}
	if start >= 0 {
		dst = append(dst, [2]int{start, len(s)})
	}
	return dst
}

// whitespaceSplitPreTokenizer splits on whitespace and drops it.
type whitespaceSplitPreTokenizer struct{}

func (whitespaceSplitPreTokenizer) split(dst []string, s string, _ bool) []string {
	return append(dst, strings.Fields(s)...)
}
