package grammar

import (
	"sync"
	"testing"
)

// TestConcurrentMatchers drives matchers of one grammar from several
// goroutines (the server computes masks on workers): the shared caches in
// Vocab and Grammar must give every goroutine the masks a lone matcher gets.
func TestConcurrentMatchers(t *testing.T) {
	v := byteVocab(`{"`, `":`, `",`, `"}`, `ab`, ` "`)
	schema := []byte(`{"type":"object","properties":{"a":{"type":"string","maxLength":5},"b":{"type":"array","items":{"type":"integer"}}}}`)
	ref, err := CompileJSONSchema(schema, Options{})
	if err != nil {
		t.Fatal(err)
	}
	text := `{"a": "abcd", "b": [1, 22, 333], "z": {"q": null}}`
	want := masksAlong(NewMatcher(ref, NewVocab(allTokens(v), v.eos)), text)
	// A grammar no matcher has used yet: its deferred rules are built by
	// whichever goroutine reaches them first.
	g, err := CompileJSONSchema(schema, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan string, 8)
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got := masksAlong(NewMatcher(g, v), text)
			for i := range want {
				if got[i] != want[i] {
					errs <- "mask differs at byte " + string(rune('0'+i%10))
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}

// masksAlong returns the allowed-token counts and the first mask word at
// every byte of text.
func masksAlong(m *Matcher, text string) []uint64 {
	bits := make([]uint64, m.v.MaskWords())
	var out []uint64
	for i := 0; i <= len(text); i++ {
		n := m.FillMask(bits)
		out = append(out, uint64(n), bits[0], bits[len(bits)-1])
		if i < len(text) {
			if err := m.AcceptBytes([]byte{text[i]}); err != nil {
				panic(err)
			}
		}
	}
	return out
}
