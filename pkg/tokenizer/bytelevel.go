package tokenizer

// byteLevelMap is GPT-2's reversible byte↔character table: printable
// Latin-1 bytes map to themselves, the rest to U+0100.. so that every byte
// has a visible, non-whitespace character (the vocabulary is written in it).
type byteLevelMap struct {
	toRune   [256]rune
	fromRune map[rune]byte
}

func newByteLevelMap() *byteLevelMap {
	m := &byteLevelMap{fromRune: make(map[rune]byte, 256)}
	var used [256]bool
	for b := '!'; b <= '~'; b++ {
		used[b] = true
	}
	for b := '¡'; b <= '¬'; b++ {
		used[b] = true
	}
	for b := '®'; b <= 'ÿ'; b++ {
		used[b] = true
	}
	n := rune(0)
	for b := 0; b < 256; b++ {
		r := rune(b)
		if !used[b] {
			r = 256 + n
			n++
		}
		m.toRune[b] = r
		m.fromRune[r] = byte(b)
	}
	return m
}

// decode maps a byte-level string back to raw bytes; ok is false when a
// character is outside the alphabet (HF then keeps the token's own UTF-8).
func (m *byteLevelMap) decode(s string) ([]byte, bool) {
	out := make([]byte, 0, len(s))
	for _, r := range s {
		b, ok := m.fromRune[r]
		if !ok {
			return nil, false
		}
		out = append(out, b)
	}
	return out, true
}
