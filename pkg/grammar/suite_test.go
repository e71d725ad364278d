package grammar

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/lightllm-go/lightllm/pkg/testmodels"
	"github.com/lightllm-go/lightllm/pkg/tokenizer"
)

// search reports whether some serialization of v (any member order,
// canonical scalars, no whitespace) is accepted from m's state, and if so
// leaves m after it and returns the text; otherwise m is unchanged.
func search(m *Matcher, v *jv) (string, bool) {
	var out []byte
	ok := feed(m, v, &out, func() bool { return m.IsAccepting() })
	return string(out), ok
}

// feed writes v through m in every member order until k accepts the
// continuation; on failure everything it accepted is rolled back.
func feed(m *Matcher, v *jv, out *[]byte, k func() bool) bool {
	put := func(s string, then func() bool) bool {
		if m.AcceptBytes([]byte(s)) != nil {
			return false
		}
		*out = append(*out, s...)
		if then() {
			return true
		}
		*out = (*out)[:len(*out)-len(s)]
		_ = m.Rollback(1)
		return false
	}
	switch v.kind {
	case 'a':
		var elems func(i int) bool
		elems = func(i int) bool {
			if i == len(v.arr) {
				return put("]", k)
			}
			sep := ""
			if i > 0 {
				sep = ","
			}
			return put(sep, func() bool { return feed(m, v.arr[i], out, func() bool { return elems(i + 1) }) })
		}
		return put("[", func() bool { return elems(0) })
	case 'o':
		var members func(left []member, first bool) bool
		members = func(left []member, first bool) bool {
			if len(left) == 0 {
				return put("}", k)
			}
			for i, mm := range left {
				rest := slices.Concat(left[:i:i], left[i+1:])
				sep := ","
				if first {
					sep = ""
				}
				if put(sep+quoteJSON(mm.key)+":", func() bool {
					return feed(m, mm.val, out, func() bool { return members(rest, false) })
				}) {
					return true
				}
			}
			return false
		}
		return put("{", func() bool { return members(v.obj, true) })
	}
	return put(canonical(v), k)
}

type suiteGroup struct {
	Description string          `json:"description"`
	Schema      json.RawMessage `json:"schema"`
	Tests       []struct {
		Description string          `json:"description"`
		Data        json.RawMessage `json:"data"`
		Valid       bool            `json:"valid"`
	} `json:"tests"`
}

type suiteStats struct {
	groups, supportedGroups, tests, supportedTests int
	validRejected, invalidAccepted, tokenFailures  int
	refusedBy                                      map[string]int
}

// runSuiteFile runs one test file of the JSON-Schema-Test-Suite: a
// supported schema must accept (some serialization of) every valid
// instance and reject every invalid one; a refused schema must name the
// keyword. With a tokenizer, accepted texts are also forced token by token
// through the mask, and invalid ones must be stopped by it.
func runSuiteFile(t *testing.T, path string, opts Options, v *Vocab, tk *tokenizer.Tokenizer, st *suiteStats, subset bool) {
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var groups []suiteGroup
	if err := json.Unmarshal(data, &groups); err != nil {
		t.Fatal(err)
	}
	bv := byteVocab()
	bits := make([]uint64, 0)
	if v != nil {
		bits = make([]uint64, v.MaskWords())
	}
	for _, gr := range groups {
		st.groups++
		st.tests += len(gr.Tests)
		where := filepath.Base(path) + ": " + gr.Description
		g, err := CompileJSONSchema(gr.Schema, opts)
		if errors.Is(err, ErrUnsatisfiable) {
			for _, tc := range gr.Tests {
				if tc.Valid {
					t.Errorf("%s: %s: valid instance but the schema was found unsatisfiable", where, tc.Description)
					st.validRejected++
				}
			}
			st.supportedGroups++
			st.supportedTests += len(gr.Tests)
			continue
		}
		if err != nil {
			if !errors.Is(err, ErrUnsupported) || !strings.Contains(err.Error(), `keyword "`) {
				t.Errorf("%s: refusal does not name a keyword: %v", where, err)
			}
			kw := err.Error()
			if i := strings.Index(kw, `keyword "`); i >= 0 {
				kw = kw[i+9:]
				kw = kw[:strings.IndexByte(kw, '"')]
			}
			st.refusedBy[kw]++
			continue
		}
		st.supportedGroups++
		st.supportedTests += len(gr.Tests)
		for _, tc := range gr.Tests {
			inst, err := parseJSON(tc.Data)
			if err != nil {
				t.Fatal(err)
			}
			text, ok := search(NewMatcher(g, bv), inst)
			switch {
			case tc.Valid && !ok:
				st.validRejected++
				if subset {
					continue // formats are enforced as subsets: counted, not failed
				}
				t.Errorf("%s: %s: valid instance %s rejected", where, tc.Description, tc.Data)
				continue
			case !tc.Valid && ok:
				st.invalidAccepted++
				t.Errorf("%s: %s: invalid instance %s accepted as %s", where, tc.Description, tc.Data, text)
				continue
			}
			if tk == nil {
				continue
			}
			if !tc.Valid {
				text = canonical(inst)
			}
			if forced := forceTokens(g, v, tk, text, bits); forced != tc.Valid {
				st.tokenFailures++
				t.Errorf("%s: %s: %q forced through the Llama-3 mask: accepted %v, want %v", where, tc.Description, text, forced, tc.Valid)
			}
		}
	}
}

// forceTokens feeds text's tokens through the mask and reports whether all
// of them and then EOS were allowed (and accepted).
func forceTokens(g *Grammar, v *Vocab, tk *tokenizer.Tokenizer, text string, bits []uint64) bool {
	m := NewMatcher(g, v)
	for _, id := range tk.Encode(text, false) {
		m.FillMask(bits)
		if !maskAllows(bits, id) {
			return false
		}
		if err := m.Accept(id); err != nil {
			panic("mask allowed a token Accept refuses: " + err.Error())
		}
	}
	m.FillMask(bits)
	eos := v.EOS()[0]
	return maskAllows(bits, eos) && m.Accept(eos) == nil
}

func TestJSONSchemaTestSuite(t *testing.T) {
	if testing.Short() {
		t.Skip("-short (the -race pass): this Llama-3-vocabulary test runs in the plain go test pass")
	}
	shared, err := sharedDir()
	if err != nil {
		testmodels.Missing(t, fmt.Sprintf("shared fixtures: %v", err), nil)
	}
	root := filepath.Join(shared, "fixtures", "json-schema-test-suite", "tests")
	v := loadLlama3(t)
	tk, err := tokenizer.LoadDir(filepath.Join(shared, "fixtures", "tokenizers", "llama3"))
	if err != nil {
		t.Fatal(err)
	}
	runs := []struct {
		name   string
		glob   string
		opts   Options
		subset bool // valid instances may be refused (formats are enforced as subsets)
	}{
		// Draft 2020-12 treats format as an annotation; its format tests
		// say so. The format-assertion tests run with assertion on. The
		// suite checks the grammar as a validator (no generation bounds);
		// with the bounds (what generation uses) valid instances may be
		// refused, invalid ones still never accepted.
		{"draft2020-12 required", "draft2020-12/*.json", validator(Options{FormatAnnotation: true}), false},
		{"draft2020-12 formats asserted", "draft2020-12/optional/format/{date,date-time,time,duration,uuid,ipv4,ipv6,email,idn-email,hostname,idn-hostname,uri,uri-reference,iri,iri-reference,json-pointer,relative-json-pointer,uri-template,regex}.json", validator(Options{}), true},
		{"draft7 required", "draft7/*.json", validator(Options{FormatAnnotation: true, DefaultDraft: 7}), false},
		{"draft2020-12 required, generation bounds", "draft2020-12/*.json", Options{FormatAnnotation: true, MaxStringLength: 2, MaxItems: 2}, true},
	}
	for _, run := range runs {
		t.Run(run.name, func(t *testing.T) {
			st := &suiteStats{refusedBy: map[string]int{}}
			var files []string
			for _, pat := range expandBraces(run.glob) {
				fs, _ := filepath.Glob(filepath.Join(root, pat))
				files = append(files, fs...)
			}
			if len(files) == 0 {
				t.Fatalf("no test files for %s", run.glob)
			}
			for _, f := range files {
				runSuiteFile(t, f, run.opts, v, tk, st, run.subset)
			}
			t.Logf("%s: %d/%d groups supported, %d/%d tests (%.1f%%); valid rejected %d, invalid accepted %d, token-level failures %d; refused by keyword %v",
				run.name, st.supportedGroups, st.groups, st.supportedTests, st.tests, 100*float64(st.supportedTests)/float64(st.tests),
				st.validRejected, st.invalidAccepted, st.tokenFailures, st.refusedBy)
		})
	}
}

// expandBraces expands one {a,b,c} group.
func expandBraces(p string) []string {
	i, j := strings.IndexByte(p, '{'), strings.IndexByte(p, '}')
	if i < 0 || j < i {
		return []string{p}
	}
	var out []string
	for _, alt := range strings.Split(p[i+1:j], ",") {
		out = append(out, p[:i]+alt+p[j+1:])
	}
	return out
}
