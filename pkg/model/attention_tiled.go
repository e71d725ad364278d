package model

import (
	"math"

	"github.com/lightllm-go/lightllm/pkg/tensor"
)

// useTiledFA reports whether llama.cpp would run a sequence's attention
// with ggml_compute_forward_flash_attn_ext_tiled: a prompt of at least
// GGML_FA_TILE_Q tokens and a head size that is a whole number of f32
// vectors. Its rounding differs from the one-query path (f32 queries,
// sequential dot products, vectorised exp), so the choice must follow it.
func (m *Model) useTiledFA(seqLen int) bool {
	return seqLen >= tensor.FATile && m.cfg.HeadDim%m.lanes == 0
}

// attnUnit is a run of output rows attention computes together: on the
// tiled path, up to blockRows consecutive tokens of one sequence (their
// query vectors share every key and value tile); otherwise one row.
type attnUnit struct {
	r0, n int32 // rows r0 .. r0+n-1 of attnTask.rows
	tiled bool
}

// blockRows is how many consecutive tokens a tiled unit takes: its query
// vectors (tokens x query heads per KV head) fill whole FABlock-high kernel
// passes, and there are about unitRows of them, so that each key and value
// tile, once in cache, serves that many tokens: with a unit of two tokens
// every unit streamed the whole f32 K/V of the sequence (16 MB per KV head
// at 32k tokens) from memory. The bits do not depend on the unit size
// (every output element is its own chain in ggml's order).
func (m *Model) blockRows() int {
	group := m.cfg.Heads / m.cfg.KVHeads
	a, b := tensor.FABlock, group
	for b != 0 {
		a, b = b, a%b
	}
	base := tensor.FABlock / a
	return base * max(1, unitRows/base)
}

// unitRows is the target token count of a tiled unit.
const unitRows = 32

// blockVectors is the query vectors of a full tiled unit.
func (m *Model) blockVectors() int {
	return m.blockRows() * (m.cfg.Heads / m.cfg.KVHeads)
}

// attnUnits groups rows into units; appended to units (reused scratch).
func (m *Model) attnUnits(b *Batch, kv *KV, rows []int32, units []attnUnit) []attnUnit {
	br := m.blockRows()
	for r := 0; r < len(rows); {
		tok := rows[r]
		si := m.s.tokSeq[tok]
		if !kv.f16 || !m.useTiledFA(b.Seqs[si].Len) {
			units = append(units, attnUnit{r0: int32(r), n: 1})
			r++
			continue
		}
		n := 1
		for n < br && r+n < len(rows) && rows[r+n] == tok+int32(n) && m.s.tokSeq[tok+int32(n)] == si {
			n++
		}
		units = append(units, attnUnit{r0: int32(r), n: int32(n), tiled: true})
		r += n
	}
	return units
}

// RowClass is the rounding class of row i of a sequence chunk of n new
// tokens (engine.RowClasser): a token row's numbers depend on the chunk it
// is computed in only through
//   - the matmul kind: one row, the vector kernels; two or more, the batch
//     kernels, whose per-row result does not depend on the number of rows;
//     with iq4_xs weights chunks of 8 or more tokens are a kind of their own
//     (llama.cpp's IQ panel gemm, tensor.RowPanel8);
//   - with q4_K or q2_K weights, whether the row is among the chunk's last
//     n%4, which llama.cpp's repacked gemm (taking rows in fours) leaves to
//     its gemv (tensor.RowGemm4);
//   - the attention path: tiled from FATile rows on with an f16 cache,
//     whose key tiles are aligned to absolute positions, not to the chunk.
//
// TestChunkClassesRoundAlike checks it.
func (m *Model) RowClass(n, i int) int {
	c := 2
	switch {
	case n <= 1:
		return 1
	case m.kvF16 && m.useTiledFA(n):
		c = 3
	case m.panel8 && n >= 8:
		c = 4
	}
	if m.gemm4 && i >= n-n%4 {
		c += 4
	}
	return c
}

// packTiles stores, for every sequence that takes the tiled path, each
// tile of FATile keys per KV head converted to f32 twice: the keys
// transposed ([HeadDim][FATile], the layout ggml packs for its score
// product) and the values as rows ([FATile][HeadDim]); the tiles are shared
// by all query rows and query heads of the sequence. Past the sequence's
// last key a tile is zero.
func (m *Model) packTiles(b *Batch, top *KV, li int) {
	c, s := &m.cfg, &m.s
	kv, layer := top.at(li)
	local := top.Windowed() && top.isLocal[li]
	window := m.layers[li].window
	hd := c.HeadDim
	tileSize := hd * tensor.FATile
	if len(s.ktOff) < len(b.Seqs) {
		s.ktOff = make([]int, len(b.Seqs)*5/4+4)
	}
	n := 0
	for si, sq := range b.Seqs {
		s.ktOff[si] = -1
		if m.useTiledFA(sq.Len) {
			s.ktOff[si] = n
			n += c.KVHeads * (len(sq.Slots) + tensor.FATile - 1) / tensor.FATile * tileSize
		}
	}
	if n == 0 {
		return
	}
	if len(s.kt) < n {
		s.kt = make([]float32, n*5/4)
		s.vt = make([]float32, n*5/4)
	}
	// Every (sequence, KV head, tile) converts independently: spread them
	// over the pool's threads (at 8k tokens a serial pack was as long as
	// the attention itself, so a second thread bought nothing).
	pt := &m.pack
	pt.jobs = pt.jobs[:0]
	for si, sq := range b.Seqs {
		if s.ktOff[si] < 0 {
			continue
		}
		tiles := (len(sq.Slots) + tensor.FATile - 1) / tensor.FATile
		first := 0 // tiles before every new row's window are never read (blockTiled)
		if window > 0 {
			first = max(0, len(sq.Slots)-sq.Len-window+1) / tensor.FATile
		}
		for g := 0; g < c.KVHeads; g++ {
			for tl := first; tl < tiles; tl++ {
				pt.jobs = append(pt.jobs, packJob{si: int32(si), g: int32(g), tl: int32(tl), tiles: int32(tiles)})
			}
		}
	}
	workers := m.ctx.Pool.Threads()
	for len(pt.rows) < workers {
		pt.rows = append(pt.rows, make([]float32, hd))
	}
	for w := range pt.rows {
		if len(pt.rows[w]) < hd {
			pt.rows[w] = make([]float32, hd)
		}
	}
	pt.m, pt.b, pt.kv, pt.layer, pt.local = m, b, kv, layer, local
	m.ctx.Pool.Run(pt, len(pt.jobs), 4)
	pt.m, pt.b, pt.kv = nil, nil, nil
}

// packJob is one tile of one KV head of one sequence for packTask.
type packJob struct{ si, g, tl, tiles int32 }

// packTask converts the tiles of packTiles' jobs (a tensor.Task).
type packTask struct {
	m     *Model
	b     *Batch
	kv    *KV // the store holding the layer, layer its index there
	layer int
	local bool // the layer reads Seq.Local
	jobs  []packJob
	rows  [][]float32 // per worker: one key row in f32
}

func (pt *packTask) Run(worker, lo, hi int) {
	m, kv := pt.m, pt.kv
	s := &m.s
	hd := m.cfg.HeadDim
	tileSize := hd * tensor.FATile
	row := pt.rows[worker][:hd]
	for _, jb := range pt.jobs[lo:hi] {
		sq := &pt.b.Seqs[jb.si]
		g, tl := int(jb.g), int(jb.tl)
		at := s.ktOff[jb.si] + (g*int(jb.tiles)+tl)*tileSize
		kt, vt := s.kt[at:][:tileSize], s.vt[at:][:tileSize]
		slots := sq.Slots
		if pt.local {
			slots = sq.Local
		}
		keys := slots[tl*tensor.FATile : min((tl+1)*tensor.FATile, len(slots))]
		if len(keys) < tensor.FATile {
			clear(kt)
			clear(vt[len(keys)*hd:])
		}
		for j, slot := range keys {
			if slot < 0 {
				// Freed: before every row's window, so masked (weight 0);
				// zeros keep the masked products finite.
				for d := 0; d < hd; d++ {
					kt[d*tensor.FATile+j] = 0
				}
				clear(vt[j*hd : (j+1)*hd])
				continue
			}
			off := kv.off(pt.layer, slot) + g*hd
			tensor.F16ToF32Row(row, kv.k16[off:off+hd])
			for d, v := range row {
				kt[d*tensor.FATile+j] = v
			}
			tensor.F16ToF32Row(vt[j*hd:(j+1)*hd], kv.v16[off:off+hd])
		}
	}
}

// blockTiled is llama.cpp's tiled flash attention for the rows of one
// unit over an f16 cache, every query head of KV head g at once. For each
// tile of 64 keys: the scores are f32 dot products summed in key-dimension
// order (simd_gemm) then scaled; per query vector the running maximum is
// updated once per tile and the tile's exps come from
// ggml_vec_soft_max_f32 (vectorised exp, float64 sum); the values are
// accumulated in f32 with one fused multiply-add per key of the tile, the
// masked ones (past the vector's position) with weight zero, as ggml does.
// Tiles past the unit's last position are all masked and skipped, and so
// are those before every row's sliding window (t.window); within a tile a
// key before a row's window is masked like one past its position.
func (t *attnTask) blockTiled(worker, g int, u attnUnit) {
	m := t.m
	c := &m.cfg
	hd := c.HeadDim
	group := c.Heads / c.KVHeads
	qDim := c.Heads * hd
	scale, cp := m.kqScale, c.AttnSoftcap
	if cp != 0 {
		scale /= cp // then tanhf and times cap, before the mask (ggml's order)
	}
	const T = tensor.FATile
	nv := int(u.n) * group
	nvp := (nv + tensor.FABlock - 1) / tensor.FABlock * tensor.FABlock
	qs, acc, p := t.bq[worker][:nvp*hd], t.bacc[worker][:nvp*hd], t.bp[worker][:nvp*T]
	S, M, pos := t.bS[worker][:nv], t.bM[worker][:nv], t.bpos[worker][:nv]
	clear(acc)
	clear(qs[nv*hd:])
	tok0 := int(t.rows[u.r0])
	for i := 0; i < int(u.n); i++ {
		tok := tok0 + i
		copy(qs[i*group*hd:(i+1)*group*hd], t.q[tok*qDim+g*group*hd:tok*qDim+(g+1)*group*hd])
		for h := 0; h < group; h++ {
			v := i*group + h
			S[v], M[v], pos[v] = 0, float32(math.Inf(-1)), t.b.Positions[tok]
		}
	}
	si := int(m.s.tokSeq[tok0])
	sq := &t.b.Seqs[si]
	tiles := (len(sq.Slots) + T - 1) / T
	tileSize := hd * T
	base := m.s.ktOff[si] + g*tiles*tileSize
	lastTile := int(pos[nv-1]) / T
	firstTile := 0
	if t.window > 0 {
		firstTile = max(0, int(pos[0])-t.window+1) / T
	}
	for tl := firstTile; tl <= lastTile; tl++ {
		kt, vt := m.s.kt[base+tl*tileSize:][:tileSize], m.s.vt[base+tl*tileSize:][:tileSize]
		for b := 0; b < nvp; b += tensor.FABlock {
			tensor.TileKQBlock(p[b*T:], kt, qs[b*hd:], hd, scale)
		}
		for v := 0; v < nv; v++ {
			kq := p[v*T : (v+1)*T]
			valid := int(pos[v]) - tl*T + 1 // keys 0..valid-1 of the tile are visible
			lo := 0                         // and lo.. of those (sliding window)
			if t.window > 0 {
				lo = max(0, int(pos[v])-t.window+1-tl*T)
			}
			if valid <= 0 || lo >= T {
				clear(kq)
				continue
			}
			if cp != 0 {
				for j, s := range kq {
					kq[j] = tanhf(s) * cp
				}
			}
			for j := valid; j < T; j++ {
				kq[j] = float32(math.Inf(-1))
			}
			for j := 0; j < lo; j++ {
				kq[j] = float32(math.Inf(-1))
			}
			tileMax := tensor.TileMax(kq)
			if tileMax == float32(math.Inf(-1)) {
				clear(kq)
				continue
			}
			Mnew := max(M[v], tileMax)
			if Mnew > M[v] {
				ms := tensor.Expf(M[v] - Mnew)
				a := acc[v*hd : (v+1)*hd]
				for d := range a {
					a[d] *= ms
				}
				S[v] *= ms
			}
			M[v] = Mnew
			S[v] = float32(float64(S[v]) + softMaxTile(kq, Mnew, m.lanes))
			if valid < T {
				clear(kq[valid:])
			}
			clear(kq[:lo])
		}
		clear(p[nv*T : nvp*T])
		for b := 0; b < nvp; b += tensor.FABlock {
			tensor.TileVAccBlock(acc[b*hd:], vt, p[b*T:], hd)
		}
	}
	for i := 0; i < int(u.n); i++ {
		r := int(u.r0) + i
		for h := 0; h < group; h++ {
			v := i*group + h
			if ms := t.sink(g*group+h, M[v], &S[v], true); ms != 1 {
				a := acc[v*hd : (v+1)*hd]
				for d := range a {
					a[d] *= ms
				}
			}
			inv := float32(0)
			if S[v] != 0 {
				inv = 1 / S[v]
			}
			o := t.out[r*qDim+(g*group+h)*hd:][:hd]
			for d := range o {
				o[d] = acc[v*hd+d] * inv
			}
		}
	}
}

// softMaxTile is ggml_vec_soft_max_f32 over a tile of 64 scores: each x
// is replaced by exp(x - max) with ggml's vectorised exp, and the
// horizontal float32 sum of each vector is added in float64.
func softMaxTile(x []float32, mx float32, lanes int) float64 {
	tensor.TileSub(x, mx)
	tensor.VExpGGML(x, x)
	return tensor.TileSum(x, lanes)
}
