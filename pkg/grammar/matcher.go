package grammar

import (
	"fmt"
	"math/bits"
	"slices"
)

// Matcher follows one request through a Grammar. Not safe for concurrent
// use; see the package doc for computing masks off the critical path.
type Matcher struct {
	g    *Grammar
	v    *Vocab
	memo *maskMemo
	cfg  []*stack   // stacks after the accepted bytes
	hist [][]*stack // cfg before each accepted token, for Rollback
	done bool       // an EOS token was accepted
	w    walker
}

// NewMatcher starts matching g's language with v's tokens.
func NewMatcher(g *Grammar, v *Vocab) *Matcher {
	m := &Matcher{g: g, v: v, memo: g.memoFor(v)}
	m.w = walker{g: g, v: v, states: make([]int32, v.maxDepth+2), memo: m.memo}
	m.Reset()
	return m
}

// Reset forgets every accepted token.
func (m *Matcher) Reset() {
	m.cfg = []*stack{mkStack(nil, m.g.root, 0)}
	m.hist = m.hist[:0]
	m.done = false
}

// Err reports a rule of the grammar that could not be built when a
// matcher first reached it (Grammar.Err): the masks since are too narrow,
// so the request should end with this error.
func (m *Matcher) Err() error { return m.g.Err() }

// Accepted is the number of tokens accepted since the start (or Reset).
func (m *Matcher) Accepted() int { return len(m.hist) }

// Done reports whether an EOS token was accepted: nothing may follow.
func (m *Matcher) Done() bool { return m.done }

// IsAccepting reports whether the text so far is complete: EOS is allowed.
func (m *Matcher) IsAccepting() bool {
	if m.done {
		return false
	}
	_, canEnd := m.g.closure(m.cfg, nil)
	return canEnd
}

// Accept advances by one token; a token the grammar does not allow returns
// an error wrapping ErrRejected and leaves the matcher unchanged.
func (m *Matcher) Accept(tok int32) error {
	if m.done {
		return fmt.Errorf("%w: token %d after the end", ErrRejected, tok)
	}
	if slices.Contains(m.v.eos, tok) {
		if !m.IsAccepting() {
			return fmt.Errorf("%w: end of text before the grammar is complete", ErrRejected)
		}
		m.hist = append(m.hist, m.cfg)
		m.done = true
		return nil
	}
	b := m.v.TokenBytes(tok)
	if len(b) == 0 {
		return fmt.Errorf("%w: token %d has no text", ErrRejected, tok)
	}
	cfg, err := m.advance(b)
	if err != nil {
		return fmt.Errorf("token %d %q: %w", tok, b, err)
	}
	m.hist = append(m.hist, m.cfg)
	m.cfg = cfg
	return nil
}

// AcceptBytes advances by raw bytes, as if they were one token (tests and
// forced text use it); on error the matcher is unchanged.
func (m *Matcher) AcceptBytes(b []byte) error {
	if m.done {
		return fmt.Errorf("%w: text after the end", ErrRejected)
	}
	cfg, err := m.advance(b)
	if err != nil {
		return err
	}
	m.hist = append(m.hist, m.cfg)
	m.cfg = cfg
	return nil
}

func (m *Matcher) advance(b []byte) ([]*stack, error) {
	cfg := m.cfg
	var closed []*stack
	for i, c := range b {
		closed, _ = m.g.closure(cfg, closed)
		cfg = m.g.step(closed, c, nil)
		if len(cfg) == 0 {
			return nil, fmt.Errorf("%w: byte %d (%q) of %q", ErrRejected, i, c, b)
		}
	}
	return cfg, nil
}

// Rollback undoes the last n accepted tokens (or AcceptBytes calls).
func (m *Matcher) Rollback(n int) error {
	if n < 0 || n > len(m.hist) {
		return fmt.Errorf("grammar: rollback %d of %d accepted tokens", n, len(m.hist))
	}
	if n == 0 {
		return nil
	}
	m.cfg = m.hist[len(m.hist)-n]
	m.hist = m.hist[:len(m.hist)-n]
	m.done = false
	return nil
}

// ForcedBytes is the text the grammar allows next and nothing else (empty
// when there is a choice, or the text may end here).
func (m *Matcher) ForcedBytes() []byte {
	if m.done {
		return nil
	}
	var out []byte
	cfg := m.cfg
	var closed []*stack
	for len(out) < 256 {
		var canEnd bool
		closed, canEnd = m.g.closure(cfg, closed)
		if canEnd || len(closed) == 0 {
			break
		}
		var only int = -1
		for _, s := range closed {
			d := m.g.rule(s.rule)
			for b := 0; b < 256; b++ {
				if t := d.next(s.state, byte(b)); t < 0 || !m.g.fits(d, t, s.depth) || b == only {
					continue
				}
				if only >= 0 {
					return out
				}
				only = b
			}
		}
		if only < 0 {
			break
		}
		out = append(out, byte(only))
		cfg = m.g.step(closed, byte(only), nil)
	}
	return out
}

// FillMask sets bit i of bits (bits[i/64]>>(i%64)&1) when token i may come
// next; bits must hold Vocab.MaskWords words. EOS ids are set exactly when
// the text may end here. It returns the number of allowed tokens.
func (m *Matcher) FillMask(bits []uint64) int {
	bits = bits[:m.v.MaskWords()]
	clear(bits)
	if m.done {
		return 0
	}
	key := configKey(m.cfg)
	if m.memo.get(key, bits) {
		return popcount(bits)
	}
	m.w.fill(m.cfg, bits)
	if !m.counting() {
		m.memo.put(key, bits)
	}
	return popcount(bits)
}

// counting: some stack stands in a counted or truncated string, a state
// met once per string; its mask is not worth a copy in the memo (what such
// states allow on their own is cached per vocabulary anyway).
func (m *Matcher) counting() bool {
	for _, s := range m.cfg {
		if d := m.g.rule(s.rule); d.counted != nil || d.cut != nil {
			return true
		}
	}
	return false
}

func trailingZeros(x uint64) int { return bits.TrailingZeros64(x) }

func popcount(b []uint64) int {
	n := 0
	for _, w := range b {
		n += bits.OnesCount64(w)
	}
	return n
}
