package grammar

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/lightllm-go/lightllm/pkg/testmodels"
)

// suiteSchemas is every schema of the JSON-Schema-Test-Suite's draft
// 2020-12 and draft 7 files (with the options their run uses) and of the
// corpus: unproductive rules, left recursion and refusals among them.
func suiteSchemas(t *testing.T) (schemas [][]byte, opts []Options) {
	t.Helper()
	shared, err := sharedDir()
	if err != nil {
		testmodels.Missing(t, fmt.Sprintf("shared fixtures: %v", err), nil)
	}
	root := filepath.Join(shared, "fixtures", "json-schema-test-suite", "tests")
	for _, run := range []struct {
		glob string
		opts Options
	}{
		{"draft2020-12/*.json", validator(Options{FormatAnnotation: true})},
		{"draft7/*.json", validator(Options{FormatAnnotation: true, DefaultDraft: 7})},
		{"draft2020-12/*.json", Options{FormatAnnotation: true, MaxStringLength: 2, MaxItems: 2}},
	} {
		files, _ := filepath.Glob(filepath.Join(root, run.glob))
		if len(files) == 0 {
			t.Fatalf("no test files for %s", run.glob)
		}
		for _, f := range files {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			var groups []suiteGroup
			if err := json.Unmarshal(data, &groups); err != nil {
				t.Fatal(err)
			}
			for _, g := range groups {
				schemas = append(schemas, g.Schema)
				opts = append(opts, run.opts)
			}
		}
	}
	corpus, err := LoadBenchCorpus("testdata/schemas")
	if err != nil {
		t.Fatal(err)
	}
	for _, sc := range corpus {
		schemas = append(schemas, sc.Schema)
		opts = append(opts, Options{})
	}
	return schemas, opts
}

// TestDeferredRulesMatchEager: a JSON Schema compile defers the rules that
// call others to their first use; every schema must compile or be refused
// exactly as with every rule built at compile time, and each deferred
// rule, once built, must be the automaton compile would have built.
func TestDeferredRulesMatchEager(t *testing.T) {
	if testing.Short() {
		t.Skip("-short (the -race pass): TestConcurrentMatchers covers the deferred rules under -race")
	}
	schemas, opts := suiteSchemas(t)
	deferred := 0
	for i, schema := range schemas {
		eagerOpts := opts[i]
		eagerOpts.eagerRules = true
		want, werr := CompileJSONSchema(schema, eagerOpts)
		got, gerr := CompileJSONSchema(schema, opts[i])
		if (werr == nil) != (gerr == nil) || (werr != nil && werr.Error() != gerr.Error()) {
			t.Fatalf("schema %d %s: compile error %v, with every rule built at compile time %v", i, schema, gerr, werr)
		}
		if werr != nil {
			continue
		}
		if len(got.rules) != len(want.rules) {
			t.Fatalf("schema %d: %d rules, want %d", i, len(got.rules), len(want.rules))
		}
		for r := range got.rules {
			if got.rules[r].Load() == nil {
				deferred++
			}
			g, w := got.rule(int32(r)), want.rule(int32(r))
			if !reflect.DeepEqual(g, w) {
				t.Fatalf("schema %d %s: rule %s built on first use differs from compile's", i, schema, got.names[r])
			}
		}
		if err := got.Err(); err != nil {
			t.Fatalf("schema %d: %v", i, err)
		}
	}
	if deferred == 0 {
		t.Fatal("no rule was deferred")
	}
	t.Logf("%d schemas, %d rules deferred", len(schemas), deferred)
}

// TestDeferredRuleFailureIsReported: a deferred rule that cannot be built
// matches nothing and Err says which.
func TestDeferredRuleFailureIsReported(t *testing.T) {
	var b builder
	b.deferCalls = true
	root, inner := b.rule("root"), b.rule("inner")
	b.define(root, alt(lit("a"), seq(lit("b"), call(inner))))
	b.define(inner, seq(lit("c"), call(root)))
	g, err := b.build(root, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if g.rules[inner].Load() != nil {
		t.Fatal("inner was built at compile time")
	}
	// What a determinize failure leaves: the body now builds something
	// over the cap.
	g.bodies[inner] = func(n *nfa, from, to int32) {
		cur := from
		for range maxDFAStates + 1 {
			next := n.state()
			lit("x")(n, cur, next)
			cur = next
		}
		n.eps[cur] = append(n.eps[cur], to)
	}
	m := NewMatcher(g, byteVocab())
	if err := m.AcceptBytes([]byte("b")); err != nil {
		t.Fatal(err)
	}
	if err := m.AcceptBytes([]byte("c")); err == nil {
		t.Fatal("a rule that failed to build accepted a byte")
	}
	if err := g.Err(); err == nil || !strings.Contains(err.Error(), "rule inner: automaton over") {
		t.Fatalf("Err() = %v, want rule inner's failure", err)
	}
}

// referenceDeterminize is the textbook subset construction: sorted state
// sets keyed by their text, classes from reps, calls per sorted rule.
func referenceDeterminize(n *nfa, start, final int32) *dfa {
	d, reps := classedDFA(n)
	closure := func(seed []int32) []int32 {
		seen := map[int32]bool{}
		stack := slices.Clone(seed)
		var out []int32
		for len(stack) > 0 {
			s := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			if seen[s] {
				continue
			}
			seen[s] = true
			out = append(out, s)
			stack = append(stack, n.eps[s]...)
		}
		slices.Sort(out)
		return out
	}
	ids := map[string]int32{}
	var queue [][]int32
	add := func(set []int32) int32 {
		k := fmt.Sprint(set)
		if id, ok := ids[k]; ok {
			return id
		}
		id := int32(len(queue))
		ids[k] = id
		queue = append(queue, set)
		d.accept = append(d.accept, slices.Contains(set, final))
		d.calls = append(d.calls, nil)
		d.trans = append(d.trans, make([]int16, d.ncls)...)
		return id
	}
	add(closure([]int32{start}))
	for q := 0; q < len(queue); q++ {
		set := queue[q]
		for c, rb := range reps {
			var seed []int32
			for _, s := range set {
				for _, e := range n.bytes[s] {
					if e.set.has(rb) {
						seed = append(seed, e.to)
					}
				}
			}
			if len(seed) == 0 {
				d.trans[q*d.ncls+c] = -1
				continue
			}
			d.trans[q*d.ncls+c] = int16(add(closure(seed)))
		}
		var rules []int32
		for _, s := range set {
			for _, e := range n.calls[s] {
				rules = append(rules, e.rule)
			}
		}
		slices.Sort(rules)
		for _, r := range slices.Compact(rules) {
			var seed []int32
			for _, s := range set {
				for _, e := range n.calls[s] {
					if e.rule == r {
						seed = append(seed, e.to)
					}
				}
			}
			d.calls[q] = append(d.calls[q], callEdge{r, add(closure(seed))})
		}
	}
	return d
}

// TestDeterminizeMatchesReference: random NFAs (byte ranges, epsilons,
// calls, loops) determinize to the reference construction's tables, state
// numbering included.
func TestDeterminizeMatchesReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(18, 1))
	for trial := range 500 {
		n := &nfa{}
		size := 2 + rng.IntN(30)
		for range size {
			n.state()
		}
		for range rng.IntN(4 * size) {
			from, to := int32(rng.IntN(size)), int32(rng.IntN(size))
			switch rng.IntN(4) {
			case 0:
				n.eps[from] = append(n.eps[from], to)
			case 1:
				n.calls[from] = append(n.calls[from], callEdge{int32(rng.IntN(3)), to})
			default:
				lo := byte(rng.IntN(8)) + 'a'
				n.bytes[from] = append(n.bytes[from], byteEdge{rangeSet(lo, lo+byte(rng.IntN(3))), to})
			}
		}
		got, err := determinize(n, 0, 1)
		if err != nil {
			t.Fatalf("trial %d: %v", trial, err)
		}
		want := referenceDeterminize(n, 0, 1)
		if !slices.Equal(got.trans, want.trans) || !slices.Equal(got.accept, want.accept) || got.cls != want.cls || got.ncls != want.ncls {
			t.Fatalf("trial %d: tables differ from the reference construction", trial)
		}
		for q := range want.calls {
			if !slices.Equal(got.calls[q], want.calls[q]) {
				t.Fatalf("trial %d: state %d calls %v, want %v", trial, q, got.calls[q], want.calls[q])
			}
		}
	}
}

// TestStringsMatchingNothingAreNoDeadEnds: a string type whose texts are
// all longer than a bound matches nothing, so a grammar never offers its
// opening quote (the generation bound, 128 characters, is not applied to a
// pattern whose every text is longer; maxLength is).
func TestStringsMatchingNothingAreNoDeadEnds(t *testing.T) {
	cases := []struct {
		name, schema string
		unsat        bool
	}{
		{"pattern longer than the generation bound: unbounded", `{"type":"string","pattern":"^a{200,}$"}`, false},
		{"required property of such a pattern", `{"type":"object","properties":{"x":{"type":"string","pattern":"^a{200,}$"}},"required":["x"]}`, false},
		{"maxLength below a format's length", `{"type":"string","maxLength":9,"format":"date"}`, true},
		{"required property below a format's length", `{"type":"object","properties":{"d":{"type":"string","maxLength":9,"format":"date"}},"required":["d"]}`, true},
		{"optional property below a format's length", `{"type":"object","properties":{"d":{"type":"string","maxLength":9,"format":"date"}}}`, false},
	}
	v := byteVocab()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g, err := CompileJSONSchema([]byte(tc.schema), Options{})
			if tc.unsat {
				if !errors.Is(err, ErrUnsatisfiable) {
					t.Fatalf("got %v, want ErrUnsatisfiable", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			m := NewMatcher(g, v)
			bits := make([]uint64, v.MaskWords())
			var text []byte
			for range 300 {
				if m.Done() {
					break
				}
				if m.FillMask(bits) == 0 {
					t.Fatalf("dead end after %q", text)
				}
				tok := nthSet(bits, 0) // the lowest byte: as long as the grammar lets it run
				if err := m.Accept(tok); err != nil {
					t.Fatal(err)
				}
				text = append(text, v.TokenBytes(tok)...)
			}
		})
	}
}
