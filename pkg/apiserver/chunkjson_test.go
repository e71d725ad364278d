package apiserver

import (
	"encoding/json"
	"strings"
	"testing"
)

// jsonStrings are texts a token piece or a model name may hold.
var jsonStrings = []string{
	"", "a", " Once upon a time", `say "hi"`, `back\slash`, "line\nbreak", "tab\tcr\r",
	"\b\f", "\x00\x01\x1f\x7f", "<b>&amp;</b>", "é中😀", "\u2028\u2029", "a\u2028b",
	"\xff", "a\xffb", "\xe4\xb8", "\xed\xa0\x80", "\xf4\x90\x80\x80", "\uFFFD", "'/'", "\u0080\u07ff\uffff",
}

func TestAppendJSONString(t *testing.T) {
	for _, s := range jsonStrings {
		want, _ := marshal(s)
		if got := appendJSONString(nil, s); string(got) != string(want) {
			t.Errorf("%q: got %s, marshal %s", s, got, want)
		}
	}
}

func FuzzAppendJSONString(f *testing.F) {
	for _, s := range jsonStrings {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want, _ := marshal(s)
		if got := appendJSONString(nil, s); string(got) != string(want) {
			t.Fatalf("%q: got %s, marshal %s", s, got, want)
		}
	})
}

// TestCompletionChunkJSON: the hand-written chunk is marshal's bytes, and
// the chunks it does not handle are refused.
func TestCompletionChunkJSON(t *testing.T) {
	stop, length, odd := "stop", "length", "a\"b"
	lp := 0.5
	chunk := func(text string, finish *string, usage json.RawMessage) completionResponse {
		return completionResponse{ID: "cmpl-" + text, Object: "text_completion", Created: 1733000000, Model: "m\u2028<>",
			Choices: []completionChoice{{Text: text, Index: 3, FinishReason: finish}}, Usage: usage}
	}
	cases := []struct {
		name string
		c    completionResponse
		ok   bool
	}{
		{"token", chunk(" Once", nil, nil), true},
		{"token, usage null (include_usage)", chunk(" Once", nil, nullJSON), true},
		{"last token, finish reason", chunk("", &length, nil), true},
		{"stop, usage null", chunk("end.", &stop, nullJSON), true},
		{"odd finish reason", chunk("x", &odd, nil), true},
		{"negative created and index", completionResponse{Created: -5, Choices: []completionChoice{{Index: -1}}}, true},
		{"tricky text", chunk("\"\\\n\x00\xff\u2028é", nil, nil), true},
		{"usage object (continuous_usage_stats)", chunk("a", nil, json.RawMessage(`{"prompt_tokens":1}`)), false},
		{"logprobs", completionResponse{Choices: []completionChoice{{Logprobs: &completionLogprobs{TokenLogprobs: []*float64{&lp}}}}}, false},
		{"no choice", completionResponse{Choices: []completionChoice{}}, false},
		{"two choices", completionResponse{Choices: []completionChoice{{}, {}}}, false},
	}
	for _, s := range jsonStrings {
		cases = append(cases, struct {
			name string
			c    completionResponse
			ok   bool
		}{"text " + strings.ToValidUTF8(s, "?"), chunk(s, nil, nullJSON), true})
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, ok := c.c.appendJSON([]byte("prefix"))
			if ok != c.ok {
				t.Fatalf("appendJSON took it: %v, want %v", ok, c.ok)
			}
			if !ok {
				if string(got) != "prefix" {
					t.Fatalf("a refused chunk appended %q", got)
				}
				return
			}
			want, err := marshal(c.c)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != "prefix"+string(want) {
				t.Fatalf("got\n%s\nmarshal\n%s", got[len("prefix"):], want)
			}
		})
	}
}
