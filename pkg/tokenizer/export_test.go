package tokenizer

// Used only by tests (issue 17: kept out of the shipped binaries).

// encode maps raw bytes to the byte-level alphabet.
func (m *byteLevelMap) encode(s string) string {
	out := make([]rune, len(s))
	for i := 0; i < len(s); i++ {
		out[i] = m.toRune[s[i]]
	}
	return string(out)
}
