package cuda

import (
	"fmt"
	"math"

	"github.com/lightllm-go/lightllm/pkg/model"
)

// plan is one Forward's metadata, checked against the model and the KV pool
// on the host and packed into a single int32 array that is copied to the
// device in one transfer:
//
//	tokens[n] | positions[n] | write slots[n] | output rows[nOut] | tiles[4*nTiles] | slots[...]
//
// The write slot of token t is Slots[pos] of its sequence (where its K/V
// go); slots[] is every sequence's Slots concatenated, indexed by the tiles.
type plan struct {
	n, nOut, nTiles, rows int // rows: new tokens per attention tile
	offPos, offWrite      int
	offOut, offTiles      int
	offSlots              int
	buf                   []int32
	outSeq                []int // batch sequence of each output row
}

// build validates b (the same rules as model.Forward) and fills the plan.
// It reuses the plan's buffers, so steady-state steps do not allocate.
func (p *plan) build(b *model.Batch, vocab, kvSlots, group int) error {
	n := len(b.Tokens)
	if len(b.Positions) != n {
		return fmt.Errorf("forward: %d tokens but %d positions", n, len(b.Positions))
	}
	next, maxLen, nOut, nSlots := 0, 0, 0, 0
	for i, sq := range b.Seqs {
		if sq.Start != next || sq.Len <= 0 || sq.Start+sq.Len > n {
			return fmt.Errorf("forward: seq %d covers tokens [%d,%d) but must start at %d, be non-empty and end by %d",
				i, sq.Start, sq.Start+sq.Len, next, n)
		}
		next = sq.Start + sq.Len
		for t := sq.Start; t < next; t++ {
			if pos := b.Positions[t]; pos < 0 || int(pos) >= len(sq.Slots) {
				return fmt.Errorf("forward: seq %d token %d at position %d outside its %d slots", i, t, pos, len(sq.Slots))
			}
			if tok := b.Tokens[t]; tok < 0 || int(tok) >= vocab {
				return fmt.Errorf("forward: token id %d outside the vocabulary (%d)", tok, vocab)
			}
		}
		if last := b.Positions[next-1]; int(last) != len(sq.Slots)-1 {
			return fmt.Errorf("forward: seq %d: last new token at position %d but %d slots", i, last, len(sq.Slots))
		}
		for _, sl := range sq.Slots {
			if sl < 0 || int(sl) >= kvSlots {
				return fmt.Errorf("forward: seq %d: slot %d outside the KV pool (%d slots)", i, sl, kvSlots)
			}
		}
		if sq.WantLogits {
			nOut++
		}
		maxLen = max(maxLen, sq.Len)
		nSlots += len(sq.Slots)
	}
	if next != n {
		return fmt.Errorf("forward: sequences cover %d of %d tokens", next, n)
	}
	R := rowsPerTile(group, maxLen)
	nTiles := 0
	for _, sq := range b.Seqs {
		nTiles += (sq.Len + R - 1) / R
	}
	total := 3*n + nOut + 4*nTiles + nSlots
	if total > math.MaxInt32 {
		return fmt.Errorf("forward: batch metadata of %d entries is too large", total)
	}
	p.n, p.nOut, p.nTiles, p.rows = n, nOut, nTiles, R
	p.offPos, p.offWrite = n, 2*n
	p.offOut = 3 * n
	p.offTiles = p.offOut + nOut
	p.offSlots = p.offTiles + 4*nTiles
	if cap(p.buf) < total {
		p.buf = make([]int32, total, total+total/4)
	}
	p.buf = p.buf[:total]
	copy(p.buf, b.Tokens)
	copy(p.buf[p.offPos:], b.Positions)
	p.outSeq = p.outSeq[:0]
	out, tile, slotOff := p.offOut, p.offTiles, 0
	for si, sq := range b.Seqs {
		for t := sq.Start; t < sq.Start+sq.Len; t++ {
			p.buf[p.offWrite+t] = sq.Slots[b.Positions[t]]
		}
		if sq.WantLogits {
			p.buf[out] = int32(sq.Start + sq.Len - 1)
			out++
			p.outSeq = append(p.outSeq, si)
		}
		for r0 := 0; r0 < sq.Len; r0 += R {
			rows := min(R, sq.Len-r0)
			ctx := int32(0)
			for t := sq.Start + r0; t < sq.Start+r0+rows; t++ {
				ctx = max(ctx, b.Positions[t]+1)
			}
			p.buf[tile], p.buf[tile+1], p.buf[tile+2], p.buf[tile+3] = int32(sq.Start+r0), int32(rows), int32(slotOff), ctx
			tile += 4
		}
		copy(p.buf[p.offSlots+slotOff:], sq.Slots)
		slotOff += len(sq.Slots)
	}
	return nil
}

// kargs packs kernel arguments for cuLaunchKernel: one 64-bit word per
// parameter, the value in its low bytes (little-endian), so the driver,
// which reads each parameter's own size from its word, sees the right bits
// for pointers, 64-bit and 32-bit parameters alike. types records each
// parameter's kind ('p' pointer, 'l' long long, 'i' int, 'f' float), checked
// against the kernel's signature in kernels.cu.
type kargs struct {
	v     []uint64
	types []byte
}

func (a *kargs) reset() *kargs { a.v, a.types = a.v[:0], a.types[:0]; return a }

func (a *kargs) add(v uint64, t byte) *kargs {
	a.v, a.types = append(a.v, v), append(a.types, t)
	return a
}

// ptr adds a device pointer (0 is a null pointer).
func (a *kargs) ptr(p uint64) *kargs { return a.add(p, 'p') }

// i32 adds an int parameter.
func (a *kargs) i32(x int) *kargs { return a.add(uint64(uint32(int32(x))), 'i') }

// i64 adds a long long parameter.
func (a *kargs) i64(x int64) *kargs { return a.add(uint64(x), 'l') }

// f32 adds a float parameter.
func (a *kargs) f32(x float32) *kargs { return a.add(uint64(math.Float32bits(x)), 'f') }
