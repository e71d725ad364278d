package grammar

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestMaskBenchCounts(t *testing.T) {
	type test struct {
		Text  string `json:"text"`
		Valid bool   `json:"valid"`
	}
	rec := func(id, schema string, tests ...test) string {
		b, _ := json.Marshal(map[string]any{"id": id, "schema": schema, "tests": tests})
		return string(b)
	}
	cases := []struct {
		name                                          string
		records                                       []string
		schemas, refused, passing, validRej, invalAcc int
	}{
		{"decided right: passing", []string{rec("int", `{"type":"integer"}`, test{"12", true}, test{`"a"`, false}, test{"1.5", false})}, 1, 0, 1, 0, 0},
		{"a prefix of a valid instance is no instance", []string{rec("obj", `{"type":"object","required":["a"]}`, test{`{"a": 1}`, true}, test{`{"a": 1`, false})}, 1, 0, 1, 0, 0},
		{"a valid instance the grammar refuses fails the schema", []string{rec("str", `{"type":"string","maxLength":2}`, test{`"abc"`, true})}, 1, 0, 0, 1, 0},
		{"an invalid instance marked valid-false but allowed fails it", []string{rec("any", `{}`, test{`5`, false})}, 1, 0, 0, 0, 1},
		{"refusals are counted, not failed", []string{rec("ok", `{"type":"null"}`, test{"null", true}), rec("not", `{"not":{"type":"string"}}`, test{"1", true})}, 2, 1, 1, 0, 0},
	}
	v := byteVocab()
	encode := func(s string) []int32 {
		ids := make([]int32, len(s))
		for i := range len(s) {
			ids[i] = int32(s[i])
		}
		return ids
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rep, err := MaskBench(strings.NewReader(strings.Join(tc.records, "\n")), v, encode, Options{})
			if err != nil {
				t.Fatal(err)
			}
			got := []int{rep.Schemas, rep.Refused, rep.Passing, rep.ValidRejected, rep.InvalidAccepted}
			want := []int{tc.schemas, tc.refused, tc.passing, tc.validRej, tc.invalAcc}
			for i := range got {
				if got[i] != want[i] {
					t.Fatalf("schemas/refused/passing/valid rejected/invalid accepted = %v, want %v", got, want)
				}
			}
			if rep.Mask.N == 0 {
				t.Fatal("no mask was timed")
			}
		})
	}
	if _, err := MaskBench(strings.NewReader("{"), v, encode, Options{}); err == nil {
		t.Fatal("a malformed line was accepted")
	}
}
