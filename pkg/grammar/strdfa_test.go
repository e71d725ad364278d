package grammar

import (
	"slices"
	"testing"
)

// TestQuotedRepeatIsQuotedOfRepeat: the direct construction has the same
// classes, tables, acceptance, identity and counter as quoting the content.
func TestQuotedRepeatIsQuotedOfRepeat(t *testing.T) {
	char, err := leafDFA(jsonChar(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range []struct{ min, max int }{{0, 0}, {0, 1}, {1, 1}, {0, 7}, {3, 7}, {7, 7}, {2, 128}, {0, 500}} {
		content, err := repeatChar(char, b.min, b.max)
		if err != nil {
			t.Fatal(err)
		}
		want := quoted(content)
		got, err := quotedRepeat(char, b.min, b.max)
		if err != nil {
			t.Fatal(err)
		}
		if got.cls != want.cls || got.ncls != want.ncls || !slices.Equal(got.trans, want.trans) ||
			!slices.Equal(got.accept, want.accept) || got.hash != want.hash || got.leaf != want.leaf ||
			*got.counted != *want.counted || !slices.Equal(got.plain, want.plain) || !slices.Equal(got.hasBytes, want.hasBytes) {
			t.Errorf("{%d,%d}: quotedRepeat differs from quoted(repeatChar)", b.min, b.max)
		}
	}
}
