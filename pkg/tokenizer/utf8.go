package tokenizer

import (
	"strings"
	"unicode/utf8"
)

// seqInfo returns how many bytes the sequence led by b needs and the valid
// range of its second byte (Unicode Table 3-7); need == 0 for bytes that
// cannot start a sequence.
func seqInfo(b byte) (need int, lo, hi byte) {
	switch {
	case b < 0x80:
		return 1, 0, 0
	case b >= 0xC2 && b <= 0xDF:
		return 2, 0x80, 0xBF
	case b == 0xE0:
		return 3, 0xA0, 0xBF
	case b >= 0xE1 && b <= 0xEC, b == 0xEE, b == 0xEF:
		return 3, 0x80, 0xBF
	case b == 0xED:
		return 3, 0x80, 0x9F
	case b == 0xF0:
		return 4, 0x90, 0xBF
	case b >= 0xF1 && b <= 0xF3:
		return 4, 0x80, 0xBF
	case b == 0xF4:
		return 4, 0x80, 0x8F
	}
	return 0, 0, 0
}

// validPrefixLen is the length of the longest prefix of b (at most one
// sequence) that is a valid start of a UTF-8 sequence: the "maximal
// subpart" the Unicode standard replaces with one U+FFFD.
func validPrefixLen(b []byte) (n int, complete bool) {
	need, lo, hi := seqInfo(b[0])
	if need == 0 {
		return 1, false
	}
	n = 1
	for n < need && n < len(b) {
		c := b[n]
		if n == 1 && (c < lo || c > hi) || n > 1 && (c < 0x80 || c > 0xBF) {
			break
		}
		n++
	}
	return n, n == need
}

// lossyUTF8 converts bytes to a string as Rust's String::from_utf8_lossy
// does (one U+FFFD per maximal invalid subpart), which is what HF decoders
// return; Go's own conversion would replace byte by byte.
func lossyUTF8(b []byte) string {
	if utf8.Valid(b) {
		return string(b)
	}
	var sb strings.Builder
	sb.Grow(len(b) + 8)
	for i := 0; i < len(b); {
		n, ok := validPrefixLen(b[i:])
		if ok {
			sb.Write(b[i : i+n])
		} else {
			sb.WriteRune(utf8.RuneError)
		}
		i += n
	}
	return sb.String()
}

// incompleteTail is the number of trailing bytes of s that start a valid
// UTF-8 sequence not finished yet (more bytes could still complete it).
func incompleteTail(s string) int {
	for k := 1; k <= 3 && k <= len(s); k++ {
		i := len(s) - k
		if need, _, _ := seqInfo(s[i]); need > 1 {
			n, complete := validPrefixLen([]byte(s[i:]))
			if !complete && n == k {
				return k
			}
			return 0
		} else if need == 1 {
			return 0
		}
	}
	return 0
}
