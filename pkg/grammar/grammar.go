package grammar

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"sync"
	"sync/atomic"
)

// Options tune compilation.
type Options struct {
	// MaxWhitespace bounds the whitespace allowed between two JSON tokens
	// (so a sampled model cannot pad forever): 0 means DefaultMaxWhitespace,
	// a negative value allows none (compact JSON only).
	MaxWhitespace int
	// MaxDepth bounds the nesting of recursive rules ($ref recursion, nested
	// GBNF rules): 0 means DefaultMaxDepth.
	MaxDepth int
	// FormatAnnotation treats "format" as an annotation, as draft 2020-12
	// does by default; otherwise the formats listed in the package doc are
	// enforced (what generation wants).
	FormatAnnotation bool
	// DefaultDraft is the JSON Schema draft of a schema without $schema:
	// 0 means 2020-12, 7 means draft 7.
	DefaultDraft int
	// MaxStringLength bounds, for generation, the characters of a JSON
	// string whose schema sets no maxLength (a string with minLength above
	// it may reach minLength; a format bounds its strings itself): 0 means
	// DefaultMaxStringLength, a negative value means no bound (what a
	// validator wants). Why: a sampled model picks the closing quote among
	// tens of thousands of string tokens, so an unbounded string can run
	// until max_tokens. Everything the bounded grammar accepts is still
	// valid against the schema; only longer strings are no longer generated.
	MaxStringLength int
	// MaxItems bounds, likewise, the items of an array whose schema sets
	// no maxItems (at least minItems and the prefixItems): 0 means
	// DefaultMaxItems, negative means no bound.
	MaxItems int

	leaves *leafDFAs // set by Cache.Compile: automata shared across compiles
	// eagerRules builds every rule at compile time (tests compare the
	// deferred rules with it).
	eagerRules bool
}

const (
	DefaultMaxWhitespace   = 2
	DefaultMaxDepth        = 64
	DefaultMaxStringLength = 128
	DefaultMaxItems        = 8
)

// stringBound is the generation bound on strings without maxLength, -1 none.
func (o Options) stringBound() int { return genBound(o.MaxStringLength, DefaultMaxStringLength) }

// itemsBound is the generation bound on arrays without maxItems, -1 none.
func (o Options) itemsBound() int { return genBound(o.MaxItems, DefaultMaxItems) }

func genBound(v, def int) int {
	switch {
	case v < 0:
		return -1
	case v == 0:
		return def
	}
	return v
}

func (o Options) whitespace() int {
	switch {
	case o.MaxWhitespace < 0:
		return 0
	case o.MaxWhitespace == 0:
		return DefaultMaxWhitespace
	}
	return o.MaxWhitespace
}

func (o Options) depth() int {
	if o.MaxDepth <= 0 {
		return DefaultMaxDepth
	}
	return o.MaxDepth
}

// Grammar is a compiled constraint, safe for concurrent use: its language
// is fixed at compile time, though a JSON Schema's rules that call others
// (and its strings' generation-bound cuts) are built when a Matcher first
// reaches them (lazy.go).
type Grammar struct {
	rules    []atomic.Pointer[dfa] // nil while deferred (see lazy.go): use rule
	names    []string
	root     int32
	maxDepth int32
	need     []int32 // per rule: the frames its shortest text takes (depth.go)

	mu     sync.Mutex
	tables map[*Vocab]*maskMemo

	// Deferred rules: their bodies (nil once built, guarded by lazyMu),
	// what building one needs, and the first failure to build one (read
	// without the lock: a build in progress must not stall Err).
	lazyMu     sync.Mutex
	bodies     []frag
	later      map[int32]func() (*dfa, error) // deferred leaves (builder.deferDFA)
	productive []bool
	leaves     *leafDFAs
	err        atomic.Pointer[error]
}

// Rules is the number of rules, a measure of the grammar's size.
func (g *Grammar) Rules() int { return len(g.rules) }

// builder collects rule bodies; rules may refer to each other (and
// themselves) by id before they are defined.
type builder struct {
	names  []string
	bodies []frag
	pre    map[int32]*dfa // rules given as finished call-free DFAs
	// deferCalls: rules that call others are determinized on first use,
	// and leaves given to deferDFA built then (JSON Schema compiles; see
	// lazy.go).
	deferCalls bool
	later      map[int32]func() (*dfa, error) // deferDFA's builds
}

// deferDFA makes rule id the call-free automaton build returns, built on
// first use when the builder defers (at compile time otherwise, where an
// error is the compile's). The caller must know that build cannot fail,
// and that its automaton matches something and never the empty text (a
// quoted string): compile decides which rules are productive and nullable
// without building it.
func (b *builder) deferDFA(id int32, build func() (*dfa, error)) error {
	if !b.deferCalls {
		d, err := build()
		if err != nil {
			return err
		}
		b.defineDFA(id, d)
		return nil
	}
	if b.later == nil {
		b.later = map[int32]func() (*dfa, error){}
	}
	b.later[id] = build
	b.bodies[id] = func(*nfa, int32, int32) {}
	return nil
}

// defineDFA makes rule id the (finished, call-free) automaton d.
func (b *builder) defineDFA(id int32, d *dfa) {
	if b.pre == nil {
		b.pre = map[int32]*dfa{}
	}
	b.pre[id] = d
	b.bodies[id] = func(*nfa, int32, int32) {}
}

// leafDFAs shares the automata of call-free rules between the rules of a
// grammar and between grammars compiled through one Cache: every JSON
// string, integer or date rule is built once. Safe for concurrent use.
type leafDFAs struct {
	mu    sync.Mutex
	m     map[[32]byte]*dfa
	named map[string]*dfa // fixed automata (a JSON character, a JSON string)
	// nfas holds emptied nfas: compile after compile reuses their state
	// and edge lists (regrowing them was a sixth of the bytes a corpus
	// compile allocates). determinize keeps nothing of an nfa.
	nfas sync.Pool
}

// nfa returns an empty nfa, reused where l has one.
func (l *leafDFAs) nfa() *nfa {
	if l != nil {
		if n, ok := l.nfas.Get().(*nfa); ok {
			n.reset()
			return n
		}
	}
	return &nfa{}
}

// release returns n to l's pool; n must not be used afterwards.
func (l *leafDFAs) release(n *nfa) {
	if l != nil {
		l.nfas.Put(n)
	}
}

// fixed returns the automaton called name, building it once.
func (l *leafDFAs) fixed(name string, build func() (*dfa, error)) (*dfa, error) {
	l.mu.Lock()
	d, ok := l.named[name]
	l.mu.Unlock()
	if ok {
		return d, nil
	}
	d, err := build()
	if err != nil {
		return nil, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.named == nil {
		l.named = map[string]*dfa{}
	}
	l.named[name] = d
	return d, nil
}

const leafDFAsMax = 4096

// derived returns what build makes from leaf automata, once per Cache: key
// is derivedHash of the operation and its inputs (each leaf's hash names its
// tables, so equal keys build equal automata). The automata of strings with
// a format, pattern or length are the same in many schemas; building them
// again was most of a first compile (issue 18's time to first mask).
func (l *leafDFAs) derived(key [32]byte, build func() (*dfa, error)) (*dfa, error) {
	if d := l.get(key); d != nil {
		return d, nil
	}
	d, err := build()
	if err != nil {
		return nil, err
	}
	l.put(key, d)
	return d, nil
}

func (l *leafDFAs) get(k [32]byte) *dfa {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.m[k]
}

func (l *leafDFAs) put(k [32]byte, d *dfa) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.m == nil {
		l.m = map[[32]byte]*dfa{}
	}
	if len(l.m) >= leafDFAsMax {
		clear(l.m) // crude bound; entries are cheap to rebuild
	}
	l.m[k] = d
}

func (b *builder) rule(name string) int32 {
	b.names = append(b.names, name)
	b.bodies = append(b.bodies, nil)
	return int32(len(b.names) - 1)
}

func (b *builder) define(id int32, f frag) { b.bodies[id] = f }

// build determinizes every rule (or, with deferCalls, every rule but the
// root that calls others, on first use) and checks the grammar is usable:
// it produces something, and no rule calls itself before consuming a byte
// (left recursion would make the matcher's closure infinite).
func (b *builder) build(root int32, opts Options) (*Grammar, error) {
	g := &Grammar{root: root, names: b.names, maxDepth: int32(opts.depth()), tables: map[*Vocab]*maskMemo{}}
	leaves := opts.leaves
	if leaves == nil {
		leaves = &leafDFAs{}
	}
	nr := len(b.bodies)
	g.rules = make([]atomic.Pointer[dfa], nr)
	built := make([]*dfa, nr)        // every rule not deferred
	graphs := make([]*ruleGraph, nr) // the deferred ones
	shared := make([]bool, nr)       // built complete by an earlier compile
	// One nfa for every rule, emptied between them: determinize keeps
	// nothing of it, and regrowing its tables rule by rule was a sixth of
	// a first compile's allocation.
	n := leaves.nfa()
	defer leaves.release(n)
	for i, body := range b.bodies {
		if body == nil {
			return nil, fmt.Errorf("rule %s is not defined", b.names[i])
		}
		if d, ok := b.pre[int32(i)]; ok {
			built[i] = d
			shared[i] = true
			continue
		}
		if _, ok := b.later[int32(i)]; ok {
			continue // a leaf: productive, not nullable, calls nothing
		}
		n.reset()
		s, f := n.state(), n.state()
		body(n, s, f)
		key, isLeaf := n.leafKey(s, f)
		if isLeaf {
			if d := leaves.get(key); d != nil {
				built[i] = d
				shared[i] = true
				continue
			}
		} else if b.deferCalls && int32(i) != root && n.size() <= maxDFAStates {
			graphs[i] = graphOf(n, s, f)
			continue
		}
		d, err := determinize(n, s, f)
		if err != nil {
			return nil, fmt.Errorf("rule %s: %w", b.names[i], err)
		}
		if isLeaf {
			d.trim(nil)
			d.finish()
			leaves.put(key, d)
			shared[i] = true
		}
		built[i] = d
	}
	productive := make([]bool, nr)
	for changed := true; changed; {
		changed = false
		for r := range nr {
			if productive[r] {
				continue
			}
			var p bool
			switch d := built[r]; {
			case b.later[int32(r)] != nil:
				p = true
			case graphs[r] != nil:
				p = graphs[r].canReachAccept(productive, false)
			case shared[r]:
				p = d.states() > 0 && (d.accept[0] || d.hasBytes[0]) // trimmed: a live start state can finish
			default:
				p = d.canReachAccept(productive, false)
			}
			if p {
				productive[r] = true
				changed = true
			}
		}
	}
	if !productive[root] {
		return nil, fmt.Errorf("%w: the grammar matches nothing", ErrUnsatisfiable)
	}
	for r, d := range built {
		if d == nil || shared[r] {
			continue
		}
		if productive[r] {
			d.trim(productive)
		}
		d.finish()
	}
	if err := checkLeftRecursion(built, graphs, productive, b.names); err != nil {
		return nil, err
	}
	g.need = ruleNeeds(nr, func(r int, ok []bool) bool {
		switch d := built[r]; {
		case !productive[r]:
			return false
		case b.later[int32(r)] != nil || shared[r]:
			return true // calls nothing, and completes (productive)
		case graphs[r] != nil:
			return graphs[r].canReachAccept(ok, false)
		default:
			return d.canReachAccept(ok, false)
		}
	})
	if g.need[root] > g.maxDepth { // productive, so finite
		return nil, fmt.Errorf("%w: its shortest text nests %d rules deep, over MaxDepth %d", ErrUnsatisfiable, g.need[root], g.maxDepth)
	}
	for r, d := range built {
		if d != nil {
			if !shared[r] {
				d.setNeed(g.need)
			}
			g.rules[r].Store(d)
		}
	}
	if b.deferCalls {
		g.bodies, g.later, g.productive, g.leaves = b.bodies, b.later, productive, leaves
	}
	return g, nil
}

// canReachAccept: from the start, through bytes (unless nullOnly) and calls
// of rules marked in ok.
func (d *dfa) canReachAccept(ok []bool, nullOnly bool) bool {
	seen := make([]bool, d.states())
	work := []int32{0}
	seen[0] = true
	for len(work) > 0 {
		q := work[len(work)-1]
		work = work[:len(work)-1]
		if d.accept[q] {
			return true
		}
		visit := func(t int32) {
			if t >= 0 && !seen[t] {
				seen[t] = true
				work = append(work, t)
			}
		}
		if !nullOnly {
			for c := 0; c < d.ncls; c++ {
				visit(int32(d.trans[int(q)*d.ncls+c]))
			}
		}
		for _, e := range d.callsAt(q) {
			if ok[e.rule] {
				visit(e.to)
			}
		}
	}
	return false
}

// checkLeftRecursion refuses a grammar whose rules can call themselves
// before consuming a byte. Built rules are read from their trimmed DFAs,
// deferred ones from their NFAs (ruleGraph), with the same results.
func checkLeftRecursion(built []*dfa, graphs []*ruleGraph, productive []bool, names []string) error {
	nr := len(built)
	nullable := make([]bool, nr)
	for changed := true; changed; {
		changed = false
		for r := range nr {
			if nullable[r] {
				continue
			}
			var ok bool
			switch g, d := graphs[r], built[r]; {
			case g != nil:
				ok = g.canReachAccept(nullable, true)
			case d != nil:
				ok = d.canReachAccept(nullable, true)
			} // neither: a deferred leaf, never empty
			if ok {
				nullable[r] = true
				changed = true
			}
		}
	}
	// first[r]: rules r may call before consuming a byte.
	first := make([][]int32, nr)
	for r, d := range built {
		if g := graphs[r]; g != nil {
			first[r] = g.firstCalls(nullable, productive, productive[r])
			continue
		}
		if d == nil {
			continue // a deferred leaf calls nothing
		}
		seen := make([]bool, d.states())
		work := []int32{0}
		seen[0] = true
		for len(work) > 0 {
			q := work[len(work)-1]
			work = work[:len(work)-1]
			for _, e := range d.callsAt(q) {
				first[r] = append(first[r], e.rule)
				if nullable[e.rule] && !seen[e.to] {
					seen[e.to] = true
					work = append(work, e.to)
				}
			}
		}
	}
	const (
		white = iota
		grey
		black
	)
	color := make([]int, nr)
	var visit func(r int32) error
	visit = func(r int32) error {
		color[r] = grey
		for _, c := range first[r] {
			switch color[c] {
			case grey:
				return fmt.Errorf("%w: left recursion through rule %s", ErrUnsupported, names[c])
			case white:
				if err := visit(c); err != nil {
					return err
				}
			}
		}
		color[r] = black
		return nil
	}
	for r := range nr {
		if color[r] == white {
			if err := visit(int32(r)); err != nil {
				return err
			}
		}
	}
	return nil
}

// Kind says what a Spec's text is.
type Kind string

const (
	KindJSONSchema Kind = "json_schema" // Text: a JSON Schema document
	KindJSONObject Kind = "json_object" // any JSON object; Text unused
	KindRegex      Kind = "regex"       // Text: a regular expression (Go RE2 syntax), matched in full
	KindGBNF       Kind = "gbnf"        // Text: a GBNF grammar (llama.cpp), start rule "root"
	KindChoice     Kind = "choice"      // Choices: the output is exactly one of them
)

// Spec is a constraint as requests carry it.
type Spec struct {
	Kind    Kind
	Text    string
	Choices []string
}

// Key is a hash of the spec and options: equal keys compile to equal grammars.
func (s Spec) Key(opts Options) string {
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%d\x00%d\x00%v\x00%d\x00%d\x00%d\x00", s.Kind, opts.whitespace(), opts.depth(), opts.FormatAnnotation, opts.DefaultDraft,
		opts.stringBound(), opts.itemsBound())
	text := s.Text
	if s.Kind == KindJSONSchema {
		text = compactJSON(text)
	}
	fmt.Fprintf(h, "%d:%s", len(text), text)
	for _, c := range s.Choices {
		fmt.Fprintf(h, "%d:%s", len(c), c)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// Compile compiles a spec.
func Compile(s Spec, opts Options) (*Grammar, error) {
	switch s.Kind {
	case KindJSONSchema:
		return CompileJSONSchema([]byte(s.Text), opts)
	case KindJSONObject:
		return JSONObject(opts), nil
	case KindRegex:
		return compileRegex(s.Text, opts)
	case KindGBNF:
		return CompileGBNF(s.Text, opts)
	case KindChoice:
		return choice(s.Choices, opts)
	}
	return nil, fmt.Errorf("%w: grammar kind %q", ErrUnsupported, s.Kind)
}

// Cache shares compiled grammars between requests, keyed by Spec.Key; it
// holds at most max grammars and drops the least recently used. Safe for
// concurrent use. Errors are not cached.
type Cache struct {
	leaves leafDFAs
	mu     sync.Mutex
	max    int
	tick   uint64
	items  map[string]*cacheItem
}

type cacheItem struct {
	g    *Grammar
	used uint64
}

// NewCache holds up to n grammars (at least 1).
func NewCache(n int) *Cache { return &Cache{max: max(n, 1), items: map[string]*cacheItem{}} }

// Compile returns the cached grammar of s or compiles it.
func (c *Cache) Compile(s Spec, opts Options) (*Grammar, error) {
	key := s.Key(opts)
	c.mu.Lock()
	if it, ok := c.items[key]; ok {
		c.tick++
		it.used = c.tick
		c.mu.Unlock()
		return it.g, nil
	}
	c.mu.Unlock()
	opts.leaves = &c.leaves
	g, err := Compile(s, opts) // outside the lock: compiles may be slow
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if it, ok := c.items[key]; ok {
		return it.g, nil
	}
	if len(c.items) >= c.max {
		var oldK string
		var oldT uint64 = ^uint64(0)
		for k, it := range c.items {
			if it.used < oldT {
				oldK, oldT = k, it.used
			}
		}
		delete(c.items, oldK)
	}
	c.tick++
	c.items[key] = &cacheItem{g: g, used: c.tick}
	return g, nil
}

// Len is the number of cached grammars.
func (c *Cache) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.items)
}
