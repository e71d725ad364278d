package grammar

import (
	"errors"
	"strings"
	"testing"
)

// matches reports whether the grammar accepts text in full (byte level).
func matches(g *Grammar, v *Vocab, text string) bool {
	m := NewMatcher(g, v)
	return m.AcceptBytes([]byte(text)) == nil && m.IsAccepting()
}

func TestLanguages(t *testing.T) {
	v := byteVocab()
	cases := []struct {
		name   string
		spec   Spec
		accept []string
		reject []string
	}{
		{"regex digits then letters", Spec{Kind: KindRegex, Text: `[0-9]+[a-z]{2}`}, []string{"1ab", "123zz"}, []string{"", "ab", "1a", "1abc"}},
		{"regex anchors at ends are no-ops", Spec{Kind: KindRegex, Text: `^(yes|no)$`}, []string{"yes", "no"}, []string{"yesno", "y"}},
		{"regex unicode class", Spec{Kind: KindRegex, Text: `[α-ω]+`}, []string{"αβγ"}, []string{"abc", "\xce"}},
		{"choice is exact", Spec{Kind: KindChoice, Choices: []string{"red", "green"}}, []string{"red", "green"}, []string{"re", "redgreen", "blue"}},
		{"gbnf recursive parens", Spec{Kind: KindGBNF, Text: "root ::= \"(\" root \")\" | \"x\"\n"}, []string{"x", "(x)", "((x))"}, []string{"()", "(x", "x)"}},
		{"gbnf classes and repeats", Spec{Kind: KindGBNF, Text: "root ::= word (\" \" word){0,2}\nword ::= [a-z]+ # letters\n"}, []string{"a", "ab cd", "a b c"}, []string{"a b c d", "A", "a  b"}},
		{"json object any", Spec{Kind: KindJSONObject}, []string{`{}`, `{"a": [1, {"b": null}]}`, `{"x":"\n"}`}, []string{`[]`, `{"a"}`, `{"a":1,}`, `{"x":"` + "\n" + `"}`}},
		{"schema properties in order, required", Spec{Kind: KindJSONSchema, Text: `{"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"string"}},"required":["b"],"additionalProperties":false}`},
			[]string{`{"b":"x"}`, `{"a":1,"b":""}`, `{ "a" : -5 , "b" : "y" }`}, []string{`{}`, `{"a":1}`, `{"b":"x","a":1}`, `{"b":"x","c":1}`, `{"a":1.5,"b":""}`}},
		{"schema extra properties after the known ones", Spec{Kind: KindJSONSchema, Text: `{"properties":{"a":{"type":"boolean"}}}`},
			[]string{`{"a":true,"z":[1]}`, `{"z":1}`, `1`, `"s"`}, []string{`{"a":1}`, `{"z":1,"a":true}`}},
		{"schema integer bounds", Spec{Kind: KindJSONSchema, Text: `{"type":"integer","minimum":-3,"exclusiveMaximum":120}`},
			[]string{"-3", "0", "119", "7"}, []string{"-4", "120", "1000", "01", "1.0"}},
		{"schema number bounds", Spec{Kind: KindJSONSchema, Text: `{"type":"number","exclusiveMinimum":0,"maximum":10}`},
			[]string{"0.5", "10", "10.000", "3", "9.99"}, []string{"0", "-1", "10.01", "11", "0.000"}},
		{"schema string length and pattern", Spec{Kind: KindJSONSchema, Text: `{"type":"string","minLength":2,"maxLength":4,"pattern":"^[a-z]+$"}`},
			[]string{`"ab"`, `"abcd"`}, []string{`"a"`, `"abcde"`, `"AB"`}},
		{"schema maxLength over a one-byte pattern (cut, not a product)", Spec{Kind: KindJSONSchema, Text: `{"type":"string","maxLength":4,"pattern":"^[a-z:_-]+$"}`},
			[]string{`"a"`, `"ab:-"`}, []string{`""`, `"abcde"`, `"a b"`, `"\u0061"`}},
		{"schema maxLength over a pattern with escapes (a product)", Spec{Kind: KindJSONSchema, Text: `{"type":"string","maxLength":2,"pattern":"^[a\\n]+$"}`},
			[]string{`"a\n"`, `"\n\n"`}, []string{`"a\na"`, `""`}},
		{"schema enum and const", Spec{Kind: KindJSONSchema, Text: `{"enum":["a",1,null,{"k":[true]}]}`},
			[]string{`"a"`, `1`, `null`, `{"k":[true]}`}, []string{`"b"`, `2`, `{"k":[]}`}},
		{"schema array bounds and prefix", Spec{Kind: KindJSONSchema, Text: `{"type":"array","prefixItems":[{"type":"string"}],"items":{"type":"integer"},"minItems":1,"maxItems":3}`},
			[]string{`["a"]`, `["a",1,2]`}, []string{`[]`, `[1]`, `["a",1,2,3]`, `["a","b"]`}},
		{"schema recursive ref", Spec{Kind: KindJSONSchema, Text: `{"$defs":{"node":{"type":"object","properties":{"v":{"type":"integer"},"kids":{"type":"array","items":{"$ref":"#/$defs/node"}}},"required":["v"],"additionalProperties":false}},"$ref":"#/$defs/node"}`},
			[]string{`{"v":1}`, `{"v":1,"kids":[{"v":2,"kids":[]}]}`}, []string{`{"kids":[]}`, `{"v":1,"kids":[{}]}`}},
		{"schema nullable union and anyOf", Spec{Kind: KindJSONSchema, Text: `{"anyOf":[{"type":["string","null"]},{"type":"integer","maximum":3}]}`},
			[]string{`"x"`, `null`, `3`}, []string{`4`, `true`}},
		{"schema format date-time", Spec{Kind: KindJSONSchema, Text: `{"type":"string","format":"date-time"}`},
			[]string{`"2024-02-28T12:30:00Z"`, `"1999-12-31T23:59:59.5+01:00"`}, []string{`"2024-02-30T12:30:00Z"`, `"yesterday"`}},
		{"schema draft 4: boolean exclusive bounds", Spec{Kind: KindJSONSchema, Text: `{"$schema":"http://json-schema.org/draft-04/schema#","type":"integer","minimum":0,"exclusiveMinimum":true,"maximum":9,"exclusiveMaximum":false}`},
			[]string{"1", "9"}, []string{"0", "10", "-1"}},
		{"schema draft 4: id is the base of $ref", Spec{Kind: KindJSONSchema, Text: `{"$schema":"http://json-schema.org/draft-04/schema#","id":"http://example.com/root.json","definitions":{"n":{"id":"#num","type":"integer","maximum":5,"exclusiveMaximum":true}},"properties":{"a":{"$ref":"http://example.com/root.json#num"},"b":{"$ref":"#/definitions/n"}},"additionalProperties":false}`},
			[]string{`{"a":4,"b":0}`, `{}`}, []string{`{"a":5}`, `{"b":"x"}`}},
		{"schema draft 4: enum data is not rewritten", Spec{Kind: KindJSONSchema, Text: `{"$schema":"http://json-schema.org/draft-04/schema#","enum":[{"minimum":1,"exclusiveMinimum":true}]}`},
			[]string{`{"exclusiveMinimum":true,"minimum":1}`}, []string{`{"exclusiveMinimum":1}`}}, // literal objects in canonical (sorted) key order
		{"schema unknown keywords are annotations, even beside enum", Spec{Kind: KindJSONSchema, Text: `{"enum":["a","b"],"x-order":3,"readonly":true}`},
			[]string{`"a"`, `"b"`}, []string{`"c"`}},
		{"schema unknown keywords differing in allOf branches", Spec{Kind: KindJSONSchema, Text: `{"allOf":[{"type":"integer","x-doc":"one"},{"maximum":3,"x-doc":"two"}]}`},
			[]string{"3", "-1"}, []string{"4", `"a"`}},
		{"schema format duration", Spec{Kind: KindJSONSchema, Text: `{"type":"string","format":"duration"}`},
			[]string{`"P1D"`, `"PT1H30M"`, `"P2W"`, `"P1Y2M3DT4H5M6S"`}, []string{`"P"`, `"PT"`, `"1D"`, `"P1H"`, `"P1DT"`}},
		{"schema format ipv6", Spec{Kind: KindJSONSchema, Text: `{"type":"string","format":"ipv6"}`},
			[]string{`"::1"`, `"::"`, `"fe80::1:2"`, `"1:2:3:4:5:6:7:8"`}, []string{`"1:2:3:4:5:6:7:8:9"`, `"1::2::3"`, `"12345::"`, `"g::"`}},
		{"schema format uri", Spec{Kind: KindJSONSchema, Text: `{"type":"string","format":"uri"}`},
			[]string{`"https://example.com/a/b?q=1#f"`, `"urn:isbn:0451450523"`, `"mailto:a@b.c"`, `"http://u:p@h:80/%20"`}, []string{`"/relative/path"`, `"example.com"`, `"http://a b"`, `"http://h/%zz"`, `"1http://x"`}},
		{"schema format uri-reference", Spec{Kind: KindJSONSchema, Text: `{"type":"string","format":"uri-reference"}`},
			[]string{`"/a/b"`, `"../c?d"`, `"#frag"`, `"http://x.y/"`, `""`}, []string{`"a b"`, `"\\x"`, `"%4"`}},
		{"schema format json-pointer", Spec{Kind: KindJSONSchema, Text: `{"type":"string","format":"json-pointer"}`},
			[]string{`""`, `"/a/0"`, `"/~0~1"`}, []string{`"a"`, `"/~2"`, `"/~"`}},
		{"schema format relative-json-pointer", Spec{Kind: KindJSONSchema, Text: `{"type":"string","format":"relative-json-pointer"}`},
			[]string{`"0"`, `"1/a"`, `"2#"`}, []string{`"/a"`, `"01"`, `"-1"`}},
		{"schema format uri-template", Spec{Kind: KindJSONSchema, Text: `{"type":"string","format":"uri-template"}`},
			[]string{`"http://x/{id}"`, `"/a{?q,page:3}{#frag}"`, `"{+path*}/b"`, `"plain"`}, []string{`"http://x/{"`, `"{}"`, `"a}"`, `"{a b}"`, `"{id:0}"`}},
		{"schema format regex (a subset both ECMA-262 and Python compile)", Spec{Kind: KindJSONSchema, Text: `{"type":"string","format":"regex"}`},
			[]string{`"^[a-z0-9_-]+$"`, `"(ab|c)*d{2,}?"`, `"((x)?y)+"`, `"\\d+\\.\\d*"`, `""`}, []string{`"*"`, `"\\"`, `"(a"`, `"a)"`, `"[z-a]"`, `"a**"`, `"[a"`, `"x{3,1}"`}},
		{"schema patternProperties with properties and additionalProperties", Spec{Kind: KindJSONSchema, Text: `{"type":"object","properties":{"x-a":{"type":"integer"},"b":{"type":"boolean"}},"patternProperties":{"^x-":{"maximum":5},"n$":{"type":"string"}},"additionalProperties":{"type":"null"}}`},
			[]string{`{"x-a":5}`, `{"b":true,"x-q":1}`, `{"z":null}`, `{"un":"s"}`, `{"x-n":"s"}`, `{"x-a":1,"b":false,"x-y":2,"zn":"t","q":null}`},
			[]string{`{"x-a":6}`, `{"x-q":6}`, `{"z":1}`, `{"un":1}`, `{"x-n":1}`, `{"x-n":6}`, `{"b":null}`}},
		{"schema patternProperties without additional members", Spec{Kind: KindJSONSchema, Text: `{"patternProperties":{"^[0-9]+$":{"type":"integer"}},"additionalProperties":false,"required":["7"]}`},
			[]string{`{"7":1}`, `{"7":1,"12":3}`}, []string{`{}`, `{"7":"a"}`, `{"7":1,"a":1}`}},
		{"schema patternProperties keys cut at the generation bound", Spec{Kind: KindJSONSchema, Text: `{"properties":{"ab":{"maximum":5}},"patternProperties":{"^a":{"type":"integer"}},"additionalProperties":false}`},
			[]string{`{"ab":3}`, `{"a` + strings.Repeat("b", 127) + `":1}`, `{"aé":2}`}, []string{`{"ab":6}`, `{"ab":"s"}`, `{"a` + strings.Repeat("b", 128) + `":1}`, `{"b":1}`}},
		{"schema maxLength over 1024: the generation bound instead (a subset)", Spec{Kind: KindJSONSchema, Text: `{"type":"string","maxLength":5000,"pattern":"^a"}`},
			[]string{`"abc"`, `"a` + strings.Repeat("b", 127) + `"`}, []string{`"b"`, `"a` + strings.Repeat("b", 128) + `"`}},
		{"schema maxLength beside a format, cut instead of counted", Spec{Kind: KindJSONSchema, Text: `{"type":"string","maxLength":900,"format":"uri"}`},
			[]string{`"http://a/b"`, `"urn:x"`}, []string{`"abc"`, `"http://a b"`}},
		{"schema maxLength no shorter than a format's strings: no counting", Spec{Kind: KindJSONSchema, Text: `{"type":"string","maxLength":1024,"format":"email"}`},
			[]string{`"a@b.c"`, `"ab.cd@e-f.gh"`}, []string{`"ab"`, `"a@@b"`}},
		{"schema maxLength shorter than a format's strings: the property cannot be present", Spec{Kind: KindJSONSchema, Text: `{"type":"object","properties":{"d":{"type":"string","maxLength":9,"format":"date"}}}`},
			[]string{`{}`}, []string{`{"d":"2020-01-01"}`, `{"d":"2020-01-1"}`, `{"d":"`}},
		{"schema maxLength with a fixed-length pattern", Spec{Kind: KindJSONSchema, Text: `{"type":"string","maxLength":3,"pattern":"^(ab|abcd)$"}`},
			[]string{`"ab"`}, []string{`"abcd"`, `"a"`}},
		{"schema minProperties 1", Spec{Kind: KindJSONSchema, Text: `{"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"integer"}},"minProperties":1}`},
			[]string{`{"a":1}`, `{"b":2}`, `{"a":1,"b":2}`, `{"z":null}`}, []string{`{}`, `{ }`}},
		{"schema minProperties 1, closed", Spec{Kind: KindJSONSchema, Text: `{"properties":{"a":{}},"additionalProperties":false,"minProperties":1}`},
			[]string{`{"a":1}`}, []string{`{}`, `{"b":1}`}},
		{"schema enum beside keywords the grammar cannot build: the values that validate", Spec{Kind: KindJSONSchema, Text: `{"enum":["a","bb","ccc",7,8,[1,1],[1,2]],"not":{"const":"bb"},"minLength":2,"multipleOf":4,"uniqueItems":true}`},
			[]string{`"ccc"`, `8`, `[1,2]`}, []string{`"a"`, `"bb"`, `7`, `[1,1]`, `"d"`}},
		{"schema allOf of an enum and a not", Spec{Kind: KindJSONSchema, Text: `{"allOf":[{"enum":[1,2,3]},{"not":{"enum":[2]}}]}`},
			[]string{`1`, `3`}, []string{`2`, `4`}},
		{"schema oneOf of overlapping enums: the values in exactly one", Spec{Kind: KindJSONSchema, Text: `{"oneOf":[{"type":"string","enum":["a","b"]},{"enum":["b","c",1]},{"const":2}]}`},
			[]string{`"a"`, `"c"`, `1`, `2`}, []string{`"b"`, `3`}},
		{"schema oneOf of required lists: exactly one present", Spec{Kind: KindJSONSchema, Text: `{"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"integer"},"c":{}},"oneOf":[{"required":["a"]},{"required":["b"]}]}`},
			[]string{`{"a":1}`, `{"b":2}`, `{"a":1,"c":3}`}, []string{`{}`, `{"a":1,"b":2}`, `{"c":1}`, `{"a":"x"}`}},
		{"schema oneOf of required lists, one containing another", Spec{Kind: KindJSONSchema, Text: `{"oneOf":[{"required":["a"]},{"required":["a","b"]}]}`},
			[]string{`{"a":1}`, `{"a":1,"z":2}`}, []string{`{"a":1,"b":2}`, `{}`, `{"b":1}`, `5`, `"s"`}},
		{"schema allOf merges", Spec{Kind: KindJSONSchema, Text: `{"allOf":[{"type":"object","properties":{"a":{"type":"integer"}},"required":["a"]},{"properties":{"b":{"type":"string"}},"required":["b"]}]}`},
			[]string{`{"a":1,"b":"x"}`}, []string{`{"a":1}`, `{"b":"x"}`}},
		{"schema oneOf with disjoint types", Spec{Kind: KindJSONSchema, Text: `{"oneOf":[{"type":"string"},{"type":"integer"}]}`},
			[]string{`"s"`, `5`}, []string{`true`}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g, err := Compile(tc.spec, Options{})
			if err != nil {
				t.Fatal(err)
			}
			for _, s := range tc.accept {
				if !matches(g, v, s) {
					t.Errorf("rejected %q", s)
				}
			}
			for _, s := range tc.reject {
				if matches(g, v, s) {
					t.Errorf("accepted %q", s)
				}
			}
		})
	}
}

func TestRefusalsNameTheKeyword(t *testing.T) {
	cases := []struct{ schema, keyword string }{
		{`{"not":{"type":"string"}}`, `"not"`},
		{`{"type":"string","pattern":"Red|Blue|Yellow|Gold|Silver|Crystal|Ruby|Sapphire|Emerald|FireRed|LeafGreen|Diamond|Pearl|Platinum|HeartGold|SoulSilver|Black|White|Black 2|White 2|X|Y|Omega Ruby|Alpha Sapphire|Sun|Moon|Ultra Sun|Ultra Moon|Let's Go Pikachu|Let's Go Eevee"}`, `too large to build`},
		{`{"$defs":{"a":{"type":"string"}},"enum":["x",1],"not":{"$ref":"#/$defs/a"}}`, `"not"`},
		{`{"type":"array","uniqueItems":true}`, `"uniqueItems"`},
		{`{"type":"number","multipleOf":3}`, `"multipleOf"`},
		{`{"if":{"type":"string"},"then":{"minLength":1}}`, `"if"`},
		{`{"oneOf":[{"type":"object"},{"required":["a"]}]}`, `"oneOf"`},
		{`{"$ref":"http://example.com/other.json"}`, `"$ref"`},
		{`{"type":"number","minimum":0.5}`, `"minimum"`},
		{`{"type":"object","patternProperties":{"^a":{},"^b":{},"^c":{},"^d":{}}}`, `"patternProperties"`},
		{`{"$schema":"http://json-schema.org/draft-03/schema#"}`, `"$schema"`},
	}
	for _, tc := range cases {
		_, err := CompileJSONSchema([]byte(tc.schema), Options{})
		if !errors.Is(err, ErrUnsupported) || !strings.Contains(err.Error(), tc.keyword) {
			t.Errorf("%s: got %v, want a refusal naming %s", tc.schema, err, tc.keyword)
		}
	}
}

// TestMaskMatchesAccept checks FillMask against trying every token, along
// a few texts, with multi-byte tokens that cross rule boundaries.
func TestMaskMatchesAccept(t *testing.T) {
	v := byteVocab(`{"`, `":`, `",`, `"}`, `": "`, `ab`, `123`, `"a`, ` "`, `}`, `null`, `e+`, `0.`, `"]}`, `":[`)
	cases := []struct{ spec, text string }{
		{`{"type":"object","properties":{"a":{"type":"string"},"n":{"type":["integer","null"]},"l":{"type":"array","items":{"type":"number"}}}}`, `{"a": "ab\"c", "n": null, "l": [1.5, -2e+3, 0]}`},
		{`{"anyOf":[{"type":"string","maxLength":3},{"type":"object","additionalProperties":{"type":"integer"}}]}`, `{"ab": 123, "x": 0}`},
	}
	bits := make([]uint64, v.MaskWords())
	for _, tc := range cases {
		g, err := CompileJSONSchema([]byte(tc.spec), Options{})
		if err != nil {
			t.Fatal(err)
		}
		m := NewMatcher(g, v)
		for i := 0; i <= len(tc.text); i++ {
			m.FillMask(bits)
			for id := int32(0); id < int32(v.Size()); id++ {
				got := maskAllows(bits, id)
				probe := NewMatcher(g, v)
				if err := probe.AcceptBytes([]byte(tc.text[:i])); err != nil {
					t.Fatal(err)
				}
				want := probe.Accept(id) == nil
				if got != want {
					t.Fatalf("%s after %q: token %q mask %v, Accept %v", tc.spec, tc.text[:i], v.TokenBytes(id), got, want)
				}
			}
			if i < len(tc.text) {
				if err := m.AcceptBytes([]byte{tc.text[i]}); err != nil {
					t.Fatal(err)
				}
			}
		}
		if !m.IsAccepting() {
			t.Errorf("%s: %q not complete", tc.spec, tc.text)
		}
	}
}

func TestRollbackAndForced(t *testing.T) {
	v := byteVocab()
	g, err := CompileJSONSchema([]byte(`{"type":"object","properties":{"name":{"type":"string"}},"required":["name"],"additionalProperties":false}`), Options{MaxWhitespace: -1})
	if err != nil {
		t.Fatal(err)
	}
	m := NewMatcher(g, v)
	if got := string(m.ForcedBytes()); got != `{"name":"` {
		t.Fatalf("forced %q", got)
	}
	for _, b := range []byte(`{"name":"x"`) {
		if err := m.Accept(int32(b)); err != nil {
			t.Fatal(err)
		}
	}
	if err := m.Accept('}'); err != nil {
		t.Fatal(err)
	}
	if !m.IsAccepting() {
		t.Fatal("complete object not accepting")
	}
	if err := m.Rollback(2); err != nil {
		t.Fatal(err)
	}
	eos := v.EOS()[0]
	if m.Accept(eos) == nil {
		t.Fatal("EOS accepted inside the string value")
	}
	if err := m.Accept('}'); err != nil || m.IsAccepting() {
		t.Fatalf("} inside the string value: %v, accepting %v", err, m.IsAccepting())
	}
}

// TestKeyExclusionSharedAcrossSchemas: the extra-key automaton is kept per
// Cache by the set of declared names, so two schemas naming the same
// properties in another order share it; each must still exclude exactly
// its names and keep its own member order and types.
func TestKeyExclusionSharedAcrossSchemas(t *testing.T) {
	v := byteVocab()
	cache := NewCache(4)
	cases := []struct {
		schema         string
		accept, reject []string
	}{
		{`{"type":"object","properties":{"a":{"type":"integer"},"bb":{}}}`,
			[]string{`{"a":1,"bb":"x","c":2}`, `{"zz":1}`}, []string{`{"a":"x"}`, `{"c":1,"a":2}`, `{"c":1,"bb":2}`}},
		{`{"type":"object","properties":{"bb":{"type":"string"},"a":{}}}`,
			[]string{`{"bb":"x","a":1,"c":2}`, `{"zz":1}`}, []string{`{"bb":1}`, `{"c":1,"a":2}`, `{"a":1,"bb":"x"}`}},
	}
	for _, tc := range cases {
		g, err := cache.Compile(Spec{Kind: KindJSONSchema, Text: tc.schema}, Options{})
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range tc.accept {
			if !matches(g, v, s) {
				t.Errorf("%s: rejected %s", tc.schema, s)
			}
		}
		for _, s := range tc.reject {
			if matches(g, v, s) {
				t.Errorf("%s: accepted %s", tc.schema, s)
			}
		}
	}
}
