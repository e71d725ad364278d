package tokenizer

import (
	"slices"
	"sort"
)

// mergeTable answers "what do symbols a and b merge into" for BPE. It keeps
// each left id's merges together, sorted by right id: the entries of the
// common left symbols stay in cache, where a hash map of a few hundred
// thousand pairs misses on nearly every probe.
type mergeTable struct {
	start []uint32 // merges of left id a are entries start[a]:start[a+1]
	right []int32
	val   []bpeMerge
}

type mergeBuilder struct {
	seen  map[uint64]struct{}
	items []mergeItem
	maxID int32
}

type mergeItem struct {
	left, right int32
	m           bpeMerge
}

func newMergeBuilder(n int) *mergeBuilder {
	return &mergeBuilder{seen: make(map[uint64]struct{}, n), items: make([]mergeItem, 0, n)}
}

// add records a merge; a pair seen before keeps its first (lowest) rank.
func (b *mergeBuilder) add(left, right int32, m bpeMerge) {
	k := pairKey(left, right)
	if _, dup := b.seen[k]; dup {
		return
	}
	b.seen[k] = struct{}{}
	b.items = append(b.items, mergeItem{left, right, m})
	b.maxID = max(b.maxID, left)
}

func (b *mergeBuilder) build() mergeTable {
	n := int(b.maxID) + 1
	t := mergeTable{start: make([]uint32, n+1), right: make([]int32, len(b.items)), val: make([]bpeMerge, len(b.items))}
	for _, it := range b.items {
		t.start[it.left+1]++
	}
	for i := 1; i <= n; i++ {
		t.start[i] += t.start[i-1]
	}
	next := slices.Clone(t.start[:n])
	for _, it := range b.items {
		p := next[it.left]
		next[it.left]++
		t.right[p], t.val[p] = it.right, it.m
	}
	for a := 0; a < n; a++ {
		lo, hi := t.start[a], t.start[a+1]
		if hi-lo > 1 {
			sort.Sort(mergeRun{t.right[lo:hi], t.val[lo:hi]})
		}
	}
	return t
}

type mergeRun struct {
	right []int32
	val   []bpeMerge
}

func (r mergeRun) Len() int           { return len(r.right) }
func (r mergeRun) Less(i, j int) bool { return r.right[i] < r.right[j] }
func (r mergeRun) Swap(i, j int) {
	r.right[i], r.right[j] = r.right[j], r.right[i]
	r.val[i], r.val[j] = r.val[j], r.val[i]
}

func (t *mergeTable) get(a, b int32) (bpeMerge, bool) {
	if a < 0 || int(a)+1 >= len(t.start) {
		return bpeMerge{}, false
	}
	lo, end := int(t.start[a]), int(t.start[a+1])
	for hi := end; lo < hi; { // lower bound of b
		mid := int(uint(lo+hi) >> 1)
		if t.right[mid] < b {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	if lo < end && t.right[lo] == b {
		return t.val[lo], true
	}
	return bpeMerge{}, false
}
