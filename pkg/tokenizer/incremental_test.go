package tokenizer

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func fixtureTokenizers(t *testing.T) map[string]*Tokenizer {
	t.Helper()
	out := map[string]*Tokenizer{}
	for _, name := range []string{"llama3", "qwen3", "mistral"} {
		out[name] = loadFixture(t, name)
	}
	return out
}

// streamDecode feeds ids one at a time, as the detokenizer sees them, and
// returns the pieces (flush included).
func streamDecode(tk *Tokenizer, ids []int32, st DecodeState, skip bool) []string {
	var pieces []string
	for i := st.ReadOffset; i < len(ids); i++ {
		pieces = append(pieces, tk.DecodeIncremental(ids[:i+1], &st, skip))
	}
	return append(pieces, tk.DecodeFlush(ids, &st, skip))
}

func TestDecodeIncremental(t *testing.T) {
	tks := fixtureTokenizers(t)
	texts := []string{
		"你好，世界！今天天气很好。我们一起去北京大学吧。",
		"日本語のテキスト、カタカナとひらがな。한국어 문장입니다.",
		"emoji 😀😃😄 👍🏽 👨‍👩‍👧‍👦 🏳️‍🌈 🇺🇸🇯🇵 ❤️ ✨🎉",
		"😀😀😀😀😀😀😀😀😀😀",
		"𝔘𝔫𝔦𝔠𝔬𝔡𝔢 math 𝑥² ∑∫∂ ≠ ≤ ≥ → ⇒",
		" leading space, then text\nand lines\n\n",
		"混合English和中文mixed文本123数字🧑‍💻",
	}
	for name, tk := range tks {
		for _, text := range texts {
			ids := tk.Encode(text, false)
			full := tk.Decode(ids, false)
			// From the first token, and after prompts of several lengths
			// (the prefix window then starts inside the prompt, possibly
			// inside a character).
			for _, promptLen := range []int{0, 1, 3, len(ids) / 2, len(ids) - 1} {
				if promptLen < 0 || promptLen >= len(ids) {
					continue
				}
				st := NewDecodeState(promptLen)
				if promptLen == 0 {
					st = DecodeState{}
				}
				want := full
				if promptLen > 0 {
					prompt := tk.Decode(ids[:promptLen], false)
					if !strings.HasPrefix(full, prompt) {
						// The cut falls inside a character, which a prompt
						// encoded from text never does.
						continue
					}
					want = full[len(prompt):]
				}
				pieces := streamDecode(tk, ids, st, false)
				for i, p := range pieces {
					if strings.ContainsRune(p, utf8.RuneError) {
						t.Errorf("%s %q prompt %d: piece %d = %q has U+FFFD", name, text, promptLen, i, p)
					}
				}
				got := strings.Join(pieces, "")
				if got != want {
					t.Errorf("%s %q prompt %d: pieces join to %q, want %q", name, text, promptLen, got, want)
				}
			}
		}
	}
}

func TestDecodeIncrementalHoldsSplitCharacter(t *testing.T) {
	tk := fixtureTokenizers(t)["mistral"]
	// Spell "你" as byte-fallback tokens <0xE4><0xBD><0xA0>, fed one by one.
	var ids []int32
	for _, b := range []byte("你") {
		id, ok := tk.TokenID("<0x" + hex2(b) + ">")
		if !ok {
			t.Fatalf("no byte token for %x", b)
		}
		ids = append(ids, id)
	}
	st := DecodeState{}
	for i := 0; i < 2; i++ {
		if got := tk.DecodeIncremental(ids[:i+1], &st, false); got != "" {
			t.Fatalf("after %d of 3 bytes: emitted %q, want nothing", i+1, got)
		}
	}
	if got := tk.DecodeIncremental(ids, &st, false); got != "你" {
		t.Fatalf("after all bytes: %q, want 你", got)
	}
	// A sequence that stops inside a character: held, then flushed as U+FFFD.
	st = DecodeState{}
	if got := tk.DecodeIncremental(ids[:2], &st, false); got != "" {
		t.Fatalf("partial: emitted %q", got)
	}
	if got := tk.DecodeFlush(ids[:2], &st, false); got != "\uFFFD" {
		t.Fatalf("flush: %q, want one U+FFFD", got)
	}
}

func hex2(b byte) string {
	const digits = "0123456789ABCDEF"
	return string([]byte{digits[b>>4], digits[b&15]})
}
