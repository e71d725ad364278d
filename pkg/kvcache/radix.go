package kvcache

import (
	"container/heap"
	"fmt"
)

// Radix is the prompt cache (LightLLM's RadixCache, from SGLang): a radix
// tree over token ids whose nodes own the KV slots of those tokens, so a new
// request whose prompt shares a prefix with an earlier one reuses that KV.
//
// Ownership: the tree holds one pool reference on every slot it stores. A
// request that matched a prefix locks the path to its node (Match ... Unlock)
// and uses the tree's slots without owning them; its own, newer slots stay
// private until it is released with Insert. Only unlocked leaves are evicted,
// least recently used first, and eviction frees their slots to the pool.
// Radix is not safe for concurrent use.
//
// A windowed tree (NewWindowedRadix) also stores, per token, the slot of its
// sliding-window layers' K/V in a second pool, or -1 where that slot was
// freed (it fell out of every window): a hit can resume at position q only
// where the local slots of the window before q are still held (the engine
// checks that).
type Radix struct {
	pool   *Pool
	lpool  *Pool // local slots; nil when not windowed
	ltotal int   // local slots the tree holds
	root   *Node
	clock  uint64
	total  int // tokens stored in the tree
	locked int // tokens in nodes with lock > 0
}

// Node is a tree node: an edge of tokens from its parent, with their slots.
type Node struct {
	key      []int32
	slots    []int32
	local    []int32 // windowed tree: local slot of each token, -1 when freed
	parent   *Node
	children map[int32]*Node // by first token of the child's key
	lock     int             // requests using this node (directly or through a descendant)
	lastUsed uint64
	depth    int // tokens from the root to the end of this node
}

// PrefixLen is the number of tokens from the root to the end of n.
func (n *Node) PrefixLen() int { return n.depth }

// NewRadix returns an empty tree over pool's slots.
func NewRadix(pool *Pool) *Radix {
	return &Radix{pool: pool, root: &Node{children: map[int32]*Node{}}}
}

// NewWindowedRadix returns an empty tree over pool's slots and lpool's
// local slots.
func NewWindowedRadix(pool, lpool *Pool) *Radix {
	t := NewRadix(pool)
	t.lpool = lpool
	return t
}

// LocalTokens is the number of local slots the tree holds.
func (t *Radix) LocalTokens() int { return t.ltotal }

// TotalTokens is the number of tokens (= slots) the tree holds.
func (t *Radix) TotalTokens() int { return t.total }

// EvictableTokens is the number of tokens in unlocked nodes: what Evict can
// free. The router counts these as available (LightLLM's
// tree_total_tokens_num - refed_tokens_num).
func (t *Radix) EvictableTokens() int { return t.total - t.locked }

// Match finds the longest cached prefix of tokens, appends its slots to dst
// and locks the path so it cannot be evicted until Unlock(node). A match that
// ends inside an edge splits it, so only the matched part is locked. With no
// match it returns the root (locking nothing) and dst unchanged.
func (t *Radix) Match(tokens []int32, dst []int32) (*Node, []int32) {
	n, dst, _ := t.MatchLocal(tokens, dst, nil)
	return n, dst
}

// MatchLocal is Match that also appends the match's local slots to ldst
// (windowed tree; -1 for freed ones).
func (t *Radix) MatchLocal(tokens, dst, ldst []int32) (*Node, []int32, []int32) {
	t.clock++
	n := t.root
	for len(tokens) > 0 {
		c := n.children[tokens[0]]
		if c == nil {
			break
		}
		k := commonPrefix(c.key, tokens)
		if k < len(c.key) {
			c = t.split(c, k)
		}
		c.lastUsed = t.clock
		dst = append(dst, c.slots...)
		if t.lpool != nil {
			ldst = append(ldst, c.local...)
		}
		tokens = tokens[k:]
		n = c
	}
	t.Lock(n)
	return n, dst, ldst
}

// Lock adds one lock to n and its ancestors.
func (t *Radix) Lock(n *Node) {
	for ; n != t.root; n = n.parent {
		if n.lock == 0 {
			t.locked += len(n.key)
		}
		n.lock++
	}
}

// Unlock releases one lock taken by Match or Lock.
func (t *Radix) Unlock(n *Node) error {
	for m := n; m != t.root; m = m.parent {
		if m.lock <= 0 {
			return fmt.Errorf("kvcache: radix unlock of an unlocked node (depth %d)", m.depth)
		}
	}
	for ; n != t.root; n = n.parent {
		n.lock--
		if n.lock == 0 {
			t.locked -= len(n.key)
		}
	}
	return nil
}

// Insert stores tokens with their slots (len(slots) == len(tokens)) and
// returns how many leading tokens were already in the tree. The tree takes
// over the caller's reference on slots[prefix:]; for slots[:prefix] it keeps
// its own, so the caller must free whichever of those it owns (the ones it
// did not get from Match).
func (t *Radix) Insert(tokens, slots []int32) (prefix int, err error) {
	return t.InsertLocal(tokens, slots, nil)
}

// InsertLocal is Insert for a windowed tree: local (len(tokens)) holds the
// tokens' local slots, -1 for freed ones; the tree takes over the caller's
// references on local[prefix:] as on slots[prefix:].
func (t *Radix) InsertLocal(tokens, slots, local []int32) (prefix int, err error) {
	if len(tokens) != len(slots) {
		return 0, fmt.Errorf("kvcache: radix insert of %d tokens with %d slots", len(tokens), len(slots))
	}
	if (t.lpool != nil) != (local != nil) || (local != nil && len(local) != len(tokens)) {
		return 0, fmt.Errorf("kvcache: radix insert of %d tokens with %d local slots (windowed tree: %v)",
			len(tokens), len(local), t.lpool != nil)
	}
	t.clock++
	n := t.root
	for len(tokens) > 0 {
		c := n.children[tokens[0]]
		if c == nil {
			leaf := &Node{
				key:      append([]int32(nil), tokens...),
				slots:    append([]int32(nil), slots...),
				parent:   n,
				children: map[int32]*Node{},
				lastUsed: t.clock,
				depth:    n.depth + len(tokens),
			}
			if local != nil {
				leaf.local = append([]int32(nil), local...)
				t.ltotal += held(local)
			}
			n.children[tokens[0]] = leaf
			t.total += len(tokens)
			return prefix, nil
		}
		k := commonPrefix(c.key, tokens)
		if k < len(c.key) {
			c = t.split(c, k)
		}
		c.lastUsed = t.clock
		prefix += k
		tokens, slots = tokens[k:], slots[k:]
		if local != nil {
			local = local[k:]
		}
		n = c
	}
	return prefix, nil
}

// split cuts c after k tokens: a new node takes c's first k tokens and
// becomes c's parent. Locks are copied, so a lock held through c still
// covers the whole path.
func (t *Radix) split(c *Node, k int) *Node {
	top := &Node{
		key:      c.key[:k:k],
		slots:    c.slots[:k:k],
		parent:   c.parent,
		children: map[int32]*Node{c.key[k]: c},
		lock:     c.lock,
		lastUsed: c.lastUsed,
		depth:    c.depth - len(c.key) + k,
	}
	if c.local != nil {
		top.local, c.local = c.local[:k:k], c.local[k:]
	}
	c.parent.children[c.key[0]] = top
	c.key, c.slots, c.parent = c.key[k:], c.slots[k:], top
	return top
}

// Evict frees at least n tokens of unlocked leaves, least recently used
// first (a parent left childless and unlocked becomes a candidate), and
// returns how many it freed: less than n when nothing more is evictable.
func (t *Radix) Evict(n int) (int, error) {
	if n <= 0 {
		return 0, nil
	}
	var h lruHeap
	t.walk(t.root, func(m *Node) {
		if m != t.root && len(m.children) == 0 && m.lock == 0 {
			h = append(h, m)
		}
	})
	heap.Init(&h)
	freed := 0
	for freed < n && h.Len() > 0 {
		m := heap.Pop(&h).(*Node)
		if err := t.pool.Free(m.slots); err != nil {
			return freed, fmt.Errorf("kvcache: radix evict: %w", err)
		}
		if m.local != nil {
			n, err := t.lpool.FreeHeld(m.local)
			t.ltotal -= n
			if err != nil {
				return freed, fmt.Errorf("kvcache: radix evict: local slots: %w", err)
			}
		}
		freed += len(m.key)
		t.total -= len(m.key)
		p := m.parent
		delete(p.children, m.key[0])
		if p != t.root && len(p.children) == 0 && p.lock == 0 {
			heap.Push(&h, p)
		}
	}
	return freed, nil
}

func (t *Radix) walk(n *Node, f func(*Node)) {
	f(n)
	for _, c := range n.children {
		t.walk(c, f)
	}
}

// held counts the slots of a local list that are held (not -1).
func held(local []int32) int {
	n := 0
	for _, s := range local {
		if s >= 0 {
			n++
		}
	}
	return n
}

func commonPrefix(a, b []int32) int {
	n := min(len(a), len(b))
	for i := 0; i < n; i++ {
		if a[i] != b[i] {
			return i
		}
	}
	return n
}

// lruHeap orders eviction candidates by last use, oldest first.
type lruHeap []*Node

func (h lruHeap) Len() int           { return len(h) }
func (h lruHeap) Less(i, j int) bool { return h[i].lastUsed < h[j].lastUsed }
func (h lruHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *lruHeap) Push(x any)        { *h = append(*h, x.(*Node)) }
func (h *lruHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}
