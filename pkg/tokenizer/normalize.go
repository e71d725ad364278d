package tokenizer

import (
	"strings"
	"unicode"

	"golang.org/x/text/unicode/norm"
)

// normalizer rewrites one text segment (between added tokens) before
// pre-tokenization, as HF normalizers do.
type normalizer interface {
	normalize(s string) string
}

type seqNormalizer []normalizer

func (n seqNormalizer) normalize(s string) string {
	for _, x := range n {
		s = x.normalize(s)
	}
	return s
}

type unicodeNormalizer struct{ form norm.Form }

func (n unicodeNormalizer) normalize(s string) string { return n.form.String(s) }

// prependNormalizer adds its text in front of non-empty segments only.
type prependNormalizer struct{ prefix string }

func (n prependNormalizer) normalize(s string) string {
	if s == "" {
		return s
	}
	return n.prefix + s
}

type replaceNormalizer struct {
	finder  matchFinder
	content string
}

func (n replaceNormalizer) normalize(s string) string {
	if lit, ok := n.finder.(literalFinder); ok {
		return strings.ReplaceAll(s, lit.lit, n.content)
	}
	var b strings.Builder
	prev := 0
	for _, m := range n.finder.matches(nil, s) {
		b.WriteString(s[prev:m[0]])
		b.WriteString(n.content)
		prev = m[1]
	}
	b.WriteString(s[prev:])
	return b.String()
}

type lowercaseNormalizer struct{}

func (lowercaseNormalizer) normalize(s string) string { return strings.ToLower(s) }

type stripNormalizer struct{ left, right bool }

func (n stripNormalizer) normalize(s string) string {
	if n.left {
		s = strings.TrimLeftFunc(s, unicode.IsSpace)
	}
	if n.right {
		s = strings.TrimRightFunc(s, unicode.IsSpace)
	}
	return s
}
