package tokenizer

import (
	"hash/maphash"
	"math/bits"
)

// strIndex is a read-only map from strings to ids held in flat arrays.
// A vocabulary kept as a Go map[string]int32 (or a []string) costs the
// garbage collector one pointer per token on every cycle: Llama 3's
// tokenizer took about 8 ms of marking per cycle that way, on every
// process holding it (apiserver, detokenizer, infer). Here the keys are
// one string and the rest is pointer-free.
type strIndex struct {
	keys  strList
	val   []int32
	slots []uint32 // open addressing by hash: key index + 1, 0 when empty
	shift uint     // slot of a hash: hash >> shift
	seed  maphash.Seed
}

// newStrIndex freezes m.
func newStrIndex(m map[string]int32) *strIndex {
	keys := make([]string, 0, len(m))
	val := make([]int32, 0, len(m))
	for k, v := range m {
		keys = append(keys, k)
		val = append(val, v)
	}
	// At most half full, so a miss ends after a probe or two.
	logSlots := max(4, bits.Len(uint(2*len(keys))))
	x := &strIndex{keys: newStrList(keys), val: val, slots: make([]uint32, 1<<logSlots),
		shift: uint(64 - logSlots), seed: maphash.MakeSeed()}
	mask := uint64(len(x.slots) - 1)
	for i, k := range keys {
		s := maphash.String(x.seed, k) >> x.shift
		for x.slots[s] != 0 {
			s = (s + 1) & mask
		}
		x.slots[s] = uint32(i + 1)
	}
	return x
}

// get is the id of s.
func (x *strIndex) get(s string) (int32, bool) {
	mask := uint64(len(x.slots) - 1)
	for h := maphash.String(x.seed, s) >> x.shift; ; h = (h + 1) & mask {
		e := x.slots[h]
		if e == 0 {
			return 0, false
		}
		if x.keys.at(int(e-1)) == s {
			return x.val[e-1], true
		}
	}
}

// each calls f for every key and its id, in no particular order.
func (x *strIndex) each(f func(s string, id int32)) {
	for i, v := range x.val {
		f(x.keys.at(i), v)
	}
}

// strList is a read-only []string held as one string and offsets, for the
// same reason as strIndex.
type strList struct {
	s   string
	off []uint32 // entry i is s[off[i]:off[i+1]]
}

func newStrList(list []string) strList {
	n := 0
	for _, s := range list {
		n += len(s)
	}
	b := make([]byte, 0, n)
	off := make([]uint32, 1, len(list)+1)
	for _, s := range list {
		b = append(b, s...)
		off = append(off, uint32(len(b)))
	}
	return strList{s: string(b), off: off}
}

func (l strList) at(i int) string { return l.s[l.off[i]:l.off[i+1]] }

func (l strList) len() int { return len(l.off) - 1 }
