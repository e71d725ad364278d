package grammar

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"math"
	"math/bits"
	"slices"
	"unsafe"
)

// dfa is one rule: a deterministic automaton over bytes whose states may
// also call rules. State 0 is the start.
type dfa struct {
	trans    []int16 // state*ncls+cls[byte] → state, -1 dead (see maxDFAStates)
	cls      [256]uint8
	ncls     int
	accept   []bool
	calls    [][]callEdge // per state; nil when no state calls anything (callsAt)
	plain    []bool       // no calls and not accepting: a byte step is all there is
	hasBytes []bool       // some byte leads on
	leaf     bool         // no state calls anything
	hash     [32]byte     // identity of (trans, accept) for leaf rules, keys Vocab caches
	counted  *charCounter // set on quoted counted strings (see quoted)
	cut      *cutInfo     // set on truncated content and its quoted form
	excl     *exclInfo    // set on a string automaton minus literal keys
	// needAt: per state, the frames the rest of the rule's text takes
	// (depth.go); nil for a leaf, which needs 1 everywhere.
	needAt []int32
}

// charCounter describes a quoted string of min to max characters built by
// repeatChar: content state i*nc+c (state +1 in the quoted automaton) has
// written i characters and stands at state c of the character automaton.
// What follows depends only on c, max-i and min-i (when positive), so such
// states of every bound share their masks (see Vocab.leaf).
type charCounter struct {
	char         [32]byte // hash of the character automaton
	nc, min, max int
}

// countedLang is the language key of state q of a counted string, or false
// when q is not a counting state.
func (d *dfa) countedLang(q int32) ([32]byte, bool) {
	k := d.counted
	if k == nil {
		return [32]byte{}, false
	}
	j := int(q) - 1
	if j < 0 || j >= (k.max+1)*k.nc {
		return [32]byte{}, false
	}
	i := j / k.nc
	buf := append([]byte("counted\x00"), k.char[:]...)
	buf = binary.LittleEndian.AppendUint32(buf, uint32(j%k.nc))
	buf = binary.LittleEndian.AppendUint32(buf, uint32(k.max-i))
	buf = binary.LittleEndian.AppendUint32(buf, uint32(max(k.min-i, 0)))
	return sha256.Sum256(buf), true
}

func (d *dfa) states() int { return len(d.accept) }

// next is the state after byte b from q (-1: dead).
func (d *dfa) next(q int32, b byte) int32 { return int32(d.trans[int(q)*d.ncls+int(d.cls[b])]) }

// maxDFAStates bounds one rule's automaton; beyond it a schema is refused.
// Transition tables hold int16 states: half the bytes of int32, and a
// bounded string's table (hundreds of layers of the character automaton)
// was a third of a corpus compile's allocation. A quoted automaton adds
// two states to its content's, so that must still fit.
const maxDFAStates = 1 << 14

var _ [math.MaxInt16 - (maxDFAStates + 2)]struct{} // compile-time: states fit in int16

// determinize builds the DFA of n with accepting NFA state final.
// maxDeterminizeWork bounds the subset construction. An unanchored
// alternation of many words (a pattern "Red|Blue|...|Let's Go Eevee"
// searched anywhere in a string) reached maxDFAStates only after up to
// 14 s of closures over sets of hundreds of NFA states; with this bound
// it is refused in ~1.2 s. Unicode property classes are the largest that
// compile: "\p{Letter}" searched anywhere visits ~4e7 states (0.7 s).
const maxDeterminizeWork = 1 << 26

// classedDFA is an empty automaton with n's byte classes (bytes no edge of
// n tells apart behave alike) and one byte of each class.
func classedDFA(n *nfa) (*dfa, []byte) {
	var sets []byteSet
	for _, es := range n.bytes {
		for _, e := range es {
			sets = append(sets, e.set)
		}
	}
	classOf, reps := byteClasses(sets)
	d := &dfa{ncls: len(reps)}
	for b := range classOf {
		d.cls[b] = uint8(classOf[b])
	}
	return d, reps
}

func determinize(n *nfa, start, final int32) (*dfa, error) {
	d, reps := classedDFA(n)
	// Per NFA state, the targets of its byte edges by class.
	type classEdge struct {
		class int32
		to    int32
	}
	// One flat list, state s's edges at byClass[from[s]:from[s+1]]: a list
	// per state was a tenth of a compile's allocations.
	var byClass []classEdge
	from := make([]int32, n.size()+1)
	for s, es := range n.bytes {
		for _, e := range es {
			for c, rb := range reps {
				if e.set.has(rb) {
					byClass = append(byClass, classEdge{int32(c), e.to})
				}
			}
		}
		from[s+1] = int32(len(byClass))
	}

	var found stateSets
	stamp := make([]uint32, n.size())
	var gen uint32
	var stack []int32
	// closure's result lives in out until add keeps a copy: most
	// closures name a state already found, and allocating each was a
	// tenth of a first compile. Its members stay stamped gen until the
	// next closure, which is how add compares it with the sets found:
	// sets are kept in the order the closure met their states, not
	// sorted (sorting each closure was a sixth of a compile), and hashed
	// independently of order.
	var out []int32
	work := 0 // NFA states visited by all closures: bounds the time spent
	closure := func(seed []int32) []int32 {
		gen++
		stack = append(stack[:0], seed...)
		out = out[:0]
		for len(stack) > 0 {
			s := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			if stamp[s] == gen {
				continue
			}
			stamp[s] = gen
			out = append(out, s)
			stack = append(stack, n.eps[s]...)
		}
		work += len(out)
		return out
	}
	// add is the id of set, the last closure's result.
	add := func(set []int32) (int32, error) {
		if work > maxDeterminizeWork {
			return 0, fmt.Errorf("automaton too large to build (its subset construction visits over %d NFA states)", maxDeterminizeWork)
		}
		h := hashMembers(set)
		id, ok := found.findStamped(len(set), h, stamp, gen)
		if ok {
			return id, nil
		}
		if id >= maxDFAStates {
			return 0, fmt.Errorf("automaton over %d states", maxDFAStates)
		}
		found.insert(set, h)
		d.accept = append(d.accept, stamp[final] == gen)
		d.calls = append(d.calls, nil)
		d.trans = append(d.trans, make([]int16, d.ncls)...)
		return id, nil
	}
	if _, err := add(closure([]int32{start})); err != nil {
		return nil, err
	}
	seeds := make([][]int32, len(reps))
	row := make([]int16, len(reps))
	var seed []int32
	for q := 0; q < found.len(); q++ {
		// Still valid while add appends to the arena: appending never
		// writes below the arena's length.
		set := found.set(q)
		for c := range seeds {
			seeds[c] = seeds[c][:0]
		}
		for _, s := range set {
			for _, e := range byClass[from[s]:from[s+1]] {
				seeds[e.class] = append(seeds[e.class], e.to)
			}
		}
		for c := range reps {
			if len(seeds[c]) == 0 {
				row[c] = -1
				continue
			}
			id, err := add(closure(seeds[c]))
			if err != nil {
				return nil, err
			}
			row[c] = int16(id)
		}
		copy(d.trans[q*d.ncls:], row)
		var rules []int32
		for _, s := range set {
			for _, e := range n.calls[s] {
				if !slices.Contains(rules, e.rule) {
					rules = append(rules, e.rule)
				}
			}
		}
		slices.Sort(rules)
		for _, r := range rules {
			seed = seed[:0]
			for _, s := range set {
				for _, e := range n.calls[s] {
					if e.rule == r {
						seed = append(seed, e.to)
					}
				}
			}
			id, err := add(closure(seed))
			if err != nil {
				return nil, err
			}
			d.calls[q] = append(d.calls[q], callEdge{r, id})
		}
	}
	return d, nil
}

// stateSets interns the NFA state sets of a subset construction, each
// once in a flat arena and found again through an open-addressing table
// of hashes. A map keyed by the set's bytes allocated a string per DFA
// state and a copy per queued set: a sixth of determinize.
type stateSets struct {
	arena []int32  // the sets back to back
	start []int32  // set i is arena[start[i]:start[i+1]]
	hash  []uint64 // of each set, for growing the table
	slots []int32  // set id + 1, 0 when empty
}

func (t *stateSets) len() int { return len(t.hash) }

func (t *stateSets) set(i int) []int32 { return t.arena[t.start[i]:t.start[i+1]] }

func hashSet(set []int32) uint64 {
	h := uint64(len(set)) * 0x9E3779B97F4A7C15
	for _, s := range set {
		h = (h ^ uint64(uint32(s))) * 0xBF58476D1CE4E5B9
		h ^= h >> 31
	}
	return h
}

// hashMembers hashes a set of states independently of their order.
func hashMembers(set []int32) uint64 {
	h := uint64(len(set)) * 0x9E3779B97F4A7C15
	for _, s := range set {
		x := uint64(uint32(s)) * 0xBF58476D1CE4E5B9
		x ^= x >> 31
		x *= 0x94D049BB133111EB
		h += x ^ x>>29
	}
	return h
}

// findStamped is the id of the set of size members, hashed h by
// hashMembers, whose members are the states stamped gen; or the id it
// would get.
func (t *stateSets) findStamped(size int, h uint64, stamp []uint32, gen uint32) (int32, bool) {
	if len(t.slots) > 0 {
		mask := uint64(len(t.slots) - 1)
	probe:
		for i := h & mask; ; i = (i + 1) & mask {
			e := t.slots[i]
			if e == 0 {
				break
			}
			if t.hash[e-1] != h {
				continue
			}
			set := t.set(int(e - 1))
			if len(set) != size {
				continue
			}
			for _, s := range set {
				if stamp[s] != gen {
					continue probe
				}
			}
			return e - 1, true
		}
	}
	return int32(t.len()), false
}

// find is the id of set, or the id it would get and its hash.
func (t *stateSets) find(set []int32) (int32, uint64, bool) {
	h := hashSet(set)
	if len(t.slots) > 0 {
		mask := uint64(len(t.slots) - 1)
		for i := h & mask; ; i = (i + 1) & mask {
			e := t.slots[i]
			if e == 0 {
				break
			}
			if t.hash[e-1] == h && slices.Equal(t.set(int(e-1)), set) {
				return e - 1, h, true
			}
		}
	}
	return int32(t.len()), h, false
}

// insert adds set, absent, with its hash h.
func (t *stateSets) insert(set []int32, h uint64) {
	if len(t.start) == 0 {
		t.start = append(t.start, 0)
	}
	t.arena = append(t.arena, set...)
	t.start = append(t.start, int32(len(t.arena)))
	t.hash = append(t.hash, h)
	if 2*t.len() > len(t.slots) { // at most half full
		t.slots = make([]int32, 1<<max(6, bits.Len(uint(4*t.len())))) // a power of two: the mask
		for id, h := range t.hash {
			t.place(int32(id), h)
		}
		return
	}
	t.place(int32(t.len()-1), h)
}

func (t *stateSets) place(id int32, h uint64) {
	mask := uint64(len(t.slots) - 1)
	i := h & mask
	for t.slots[i] != 0 {
		i = (i + 1) & mask
	}
	t.slots[i] = id + 1
}

// byteClasses partitions 0..255 so that every set is a union of classes;
// reps holds one byte of each class, and classes are numbered by their
// first byte. Refinement on the classes as bit sets: each set splits every
// class it cuts into the part inside and the part outside, four words
// each. A set already applied cuts nothing, so repeats cost a pass over
// the classes and need no sorting out (the byte-by-byte refinement behind
// a sort was a third of determinize).
func byteClasses(sets []byteSet) (classOf [256]int, reps []byte) {
	var buf [256]byteSet
	classes := append(buf[:0], byteSet{^uint64(0), ^uint64(0), ^uint64(0), ^uint64(0)})
	for i, s := range sets {
		if i > 0 && s == sets[i-1] {
			continue // runs of one set are common: a key spells the same letters
		}
		for k, n := 0, len(classes); k < n; k++ {
			c := classes[k]
			in := byteSet{c[0] & s[0], c[1] & s[1], c[2] & s[2], c[3] & s[3]}
			if in == c || in == (byteSet{}) {
				continue
			}
			classes[k] = in
			classes = append(classes, byteSet{c[0] &^ s[0], c[1] &^ s[1], c[2] &^ s[2], c[3] &^ s[3]})
		}
	}
	// Number by first byte: walk the bytes, a class's id is given when
	// its first byte comes up.
	var id [256]int // class index → id+1
	reps = make([]byte, 0, len(classes))
	for k, c := range classes {
		for w, x := range c {
			for x != 0 {
				b := w*64 + bits.TrailingZeros64(x)
				x &= x - 1
				classOf[b] = k
			}
		}
	}
	for b := 0; b < 256; b++ {
		k := classOf[b]
		if id[k] == 0 {
			reps = append(reps, byte(b))
			id[k] = len(reps)
		}
		classOf[b] = id[k] - 1
	}
	return classOf, reps
}

// finish computes the derived fields once trimming is done.
func (d *dfa) finish() {
	d.flags()
	if d.leaf {
		d.hashTables()
	}
}

// finishAs is finish for an automaton built deterministically from parts
// with known hashes: tag and those hashes identify it (equal ids, equal
// tables), so hashing its tables — a third of a large schema's compile —
// is skipped.
func (d *dfa) finishAs(tag string, parts ...[]byte) {
	d.flags()
	d.hashAs(tag, parts...)
}

// hashAs sets a leaf's hash as finishAs does, flags already computed.
func (d *dfa) hashAs(tag string, parts ...[]byte) {
	if d.leaf {
		d.hash = derivedHash(tag, parts...)
	}
}

// derivedHash identifies what is built deterministically from tag and parts
// (hashes of leaf automata, parameters).
func derivedHash(tag string, parts ...[]byte) [32]byte {
	h := sha256.New()
	h.Write([]byte("derived\x00" + tag + "\x00"))
	for _, p := range parts {
		h.Write(binary.LittleEndian.AppendUint32(nil, uint32(len(p))))
		h.Write(p)
	}
	var k [32]byte
	copy(k[:], h.Sum(nil))
	return k
}

// callsAt is state q's call edges. A call-free automaton built as a table
// (strings with length bounds: thousands of states) leaves calls nil rather
// than hold an empty slice header per state, a third of its bytes.
func (d *dfa) callsAt(q int32) []callEdge {
	if d.calls == nil {
		return nil
	}
	return d.calls[q]
}

// flags computes leaf, plain and hasBytes.
func (d *dfa) flags() {
	d.leaf = true
	d.plain = make([]bool, d.states())
	d.hasBytes = make([]bool, d.states())
	for q := range d.plain {
		for c := 0; c < d.ncls && !d.hasBytes[q]; c++ {
			d.hasBytes[q] = d.trans[q*d.ncls+c] >= 0
		}
		calls := d.callsAt(int32(q))
		d.plain[q] = !d.accept[q] && len(calls) == 0
		if len(calls) > 0 {
			d.leaf = false
		}
	}
}

// hashTables sets hash from the tables.
func (d *dfa) hashTables() {
	// The hash only keys in-process caches, so native byte order is fine.
	h := sha256.New()
	h.Write(d.cls[:])
	if len(d.trans) > 0 {
		h.Write(unsafe.Slice((*byte)(unsafe.Pointer(&d.trans[0])), 2*len(d.trans)))
	}
	for _, a := range d.accept {
		if a {
			h.Write([]byte{1})
		} else {
			h.Write([]byte{0})
		}
	}
	copy(d.hash[:], h.Sum(nil))
}

// trim removes states from which no accepting state can be reached, given
// which rules can produce anything at all; it reports whether the start
// survives.
func (d *dfa) trim(productive []bool) bool {
	n := d.states()
	// Reverse edges, then a backward search from the accepting states. The
	// edges of target t are rev[start[t]:start[t+1]], counted and then
	// filled: a list per state was an eighth of a compile's allocations.
	edges := func(visit func(q, t int32)) {
		for q := 0; q < n; q++ {
			last := int16(-2)
			for c := 0; c < d.ncls; c++ {
				if t := d.trans[q*d.ncls+c]; t >= 0 && t != last {
					visit(int32(q), int32(t))
					last = t
				}
			}
			for _, e := range d.callsAt(int32(q)) {
				if productive[e.rule] {
					visit(int32(q), e.to)
				}
			}
		}
	}
	start := make([]int32, n+1)
	edges(func(_, t int32) { start[t+1]++ })
	for t := range n {
		start[t+1] += start[t]
	}
	rev := make([]int32, start[n])
	next := slices.Clone(start[:n])
	edges(func(q, t int32) {
		rev[next[t]] = q
		next[t]++
	})
	live := make([]bool, n)
	var work []int32
	for q := 0; q < n; q++ {
		if d.accept[q] {
			live[q] = true
			work = append(work, int32(q))
		}
	}
	for len(work) > 0 {
		t := work[len(work)-1]
		work = work[:len(work)-1]
		for _, q := range rev[start[t]:start[t+1]] {
			if !live[q] {
				live[q] = true
				work = append(work, q)
			}
		}
	}
	for q := 0; q < n; q++ {
		for c := 0; c < d.ncls; c++ {
			if t := d.trans[q*d.ncls+c]; t >= 0 && !live[t] {
				d.trans[q*d.ncls+c] = -1
			}
		}
		if d.calls != nil {
			calls := d.calls[q][:0]
			for _, e := range d.calls[q] {
				if productive[e.rule] && live[e.to] {
					calls = append(calls, e)
				}
			}
			d.calls[q] = calls
		}
		if !live[q] {
			d.accept[q] = false
			for c := 0; c < d.ncls; c++ {
				d.trans[q*d.ncls+c] = -1
			}
			if d.calls != nil {
				d.calls[q] = nil
			}
		}
	}
	return live[0]
}
