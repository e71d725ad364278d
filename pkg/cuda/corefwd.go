package cuda

import (
	"fmt"
	"math"

	"github.com/lightllm-go/lightllm/pkg/model"
)

// forward validates the batch and runs it: logits[i] for every Seqs[i]
// with WantLogits, or, when ids is non-nil, the argmax token in ids[i].
func (c *core) forward(b *model.Batch, kv *model.KV, logits [][]float32, ids []int32) error {
	cfg := c.cfg
	switch {
	case b == nil:
		return fmt.Errorf("forward: nil batch")
	case kv == nil || kv != c.kv.handle:
		return fmt.Errorf("forward: KV store was not made by this model's latest NewKV")
	case c.kv.err != nil:
		return c.kv.err
	}
	p := &c.pl
	if err := p.build(b, cfg.Vocab, c.kv.slots, cfg.Heads/cfg.KVHeads); err != nil {
		return err
	}
	for _, si := range p.outSeq {
		if ids != nil {
			if si >= len(ids) {
				return fmt.Errorf("forward: seq %d wants a token but ids has %d entries", si, len(ids))
			}
		} else if si >= len(logits) || len(logits[si]) < cfg.Vocab {
			return fmt.Errorf("forward: seq %d wants logits but logits[%d] is missing or shorter than %d", si, si, cfg.Vocab)
		}
	}
	if p.n == 0 {
		return nil
	}
	if err := c.ensureScratch(p.n, p.nOut, len(p.buf)); err != nil {
		return err
	}
	if err := c.run(p); err != nil {
		return err
	}
	if p.nOut == 0 {
		return c.dev.sync()
	}
	if ids != nil {
		if err := c.dev.launch(kArgmax, p.nOut, 1, 1024, 0, c.args.reset().ptr(c.sc.ids).ptr(c.sc.logits).i32(cfg.Vocab)); err != nil {
			return err
		}
		if cap(c.idsHost) < p.nOut {
			c.idsHost = make([]int32, p.nOut)
		}
		host := c.idsHost[:p.nOut]
		if err := c.dev.readI32(host, c.sc.ids); err != nil {
			return err
		}
		for j, si := range p.outSeq {
			ids[si] = host[j]
		}
		return nil
	}
	V := cfg.Vocab
	if cap(c.logitsHost) < p.nOut*V {
		c.logitsHost = make([]float32, p.nOut*V)
	}
	host := c.logitsHost[:p.nOut*V]
	if err := c.dev.readF32(host, c.sc.logits); err != nil {
		return err
	}
	for j, si := range p.outSeq {
		copy(logits[si][:V], host[j*V:(j+1)*V])
	}
	return nil
}

// run uploads the plan and queues the whole forward pass, up to the logits
// of the output rows (in sc.logits).
func (c *core) run(p *plan) error {
	cfg, s, w, d := c.cfg, &c.sc, &c.w, c.dev
	if err := d.upload(s.metaDev, p.buf); err != nil {
		return fmt.Errorf("cuda: batch metadata: %w", err)
	}
	at := func(off int) uint64 { return s.metaDev + uint64(4*off) }
	tokens, pos, wslot := at(0), at(p.offPos), at(p.offWrite)
	outRows, tiles, slots := at(p.offOut), at(p.offTiles), at(p.offSlots)

	n, H, hd := int64(p.n), int64(cfg.Hidden), cfg.HeadDim
	qDim, kvDim := int64(cfg.Heads*hd), int64(cfg.KVHeads*hd)
	qkvDim, F := qDim+2*kvDim, int64(cfg.FFN)
	wt := c.opt.wt
	// In split mode every product runs over twice the rows (values, then
	// remainders) and lo(width) is where the remainder rows start.
	rows, split := p.n, int64(0)
	if c.opt.Split {
		rows, split = 2*p.n, n
	}
	lo := func(width int64) int64 { return split * width }
	a := &c.args
	if err := d.launch(kEmbed, p.n, 1, 256, 0, a.reset().ptr(s.x).ptr(w.embed).ptr(tokens).i32(cfg.Hidden)); err != nil {
		return fmt.Errorf("cuda: embedding: %w", err)
	}
	if err := d.launch(kRopeTable, (p.n+127)/128, 1, 128, 0, a.reset().ptr(s.cos).ptr(s.sin).ptr(pos).i32(p.n).
		i32(hd/2).f32(w.ropeScale).f32(w.freqScale).ptr(w.freqFactor)); err != nil {
		return fmt.Errorf("cuda: RoPE table: %w", err)
	}
	group := cfg.Heads / cfg.KVHeads
	attnBlock := 32 * p.rows * group
	attnSmem := attnSharedBytes(hd, c.opt.kvt, p.rows*group)
	postWarps := min(4, cfg.Heads+2*cfg.KVHeads)
	scale := 1 / float32(math.Sqrt(float64(hd)))
	neox := 0
	if w.neox {
		neox = 1
	}
	swTotal := n * F
	swGrid := int(min((swTotal+255)/256, 65535))
	for li := range w.layers {
		ly := &w.layers[li]
		layerOff := int64(li) * int64(c.kv.slots) * kvDim
		delta := uint64(0) // the previous layer's FFN output joins the residual here
		if li > 0 {
			delta = s.proj
		}
		if err := d.launch(kNorm, p.n, 1, 256, 0, a.reset().ptr(s.x).ptr(delta).i64(lo(H)).ptr(ly.attnNorm).
			ptr(s.xn).i64(lo(H)).ptr(0).i32(cfg.Hidden).f32(cfg.RMSEps)); err != nil {
			return fmt.Errorf("cuda: layer %d: attention norm: %w", li, err)
		}
		if err := d.gemm(wt, ly.qkv, int(qkvDim), cfg.Hidden, s.xn, rows, s.qkv); err != nil {
			return fmt.Errorf("cuda: layer %d: QKV: %w", li, err)
		}
		if err := d.launch(kQKVPost, p.n, 1, 32*postWarps, postWarps*hd*4, a.reset().ptr(s.qkv).i64(lo(qkvDim)).
			ptr(ly.bias).ptr(ly.qNorm).ptr(ly.kNorm).ptr(s.cos).ptr(s.sin).ptr(wslot).ptr(c.kv.k).ptr(c.kv.v).
			i64(layerOff).i32(cfg.Heads).i32(cfg.KVHeads).i32(hd).i32(neox).f32(cfg.RMSEps)); err != nil {
			return fmt.Errorf("cuda: layer %d: q/k/v: %w", li, err)
		}
		if err := d.launch(kAttn, p.nTiles, cfg.KVHeads, attnBlock, attnSmem, a.reset().ptr(s.att).i64(lo(qDim)).
			ptr(s.qkv).ptr(c.kv.k).ptr(c.kv.v).i64(layerOff).ptr(slots).ptr(tiles).ptr(pos).
			i32(cfg.Heads).i32(cfg.KVHeads).i32(hd).i32(p.rows).f32(scale)); err != nil {
			return fmt.Errorf("cuda: layer %d: attention: %w", li, err)
		}
		if err := d.gemm(wt, ly.wo, cfg.Hidden, int(qDim), s.att, rows, s.proj); err != nil {
			return fmt.Errorf("cuda: layer %d: attention output: %w", li, err)
		}
		if err := d.launch(kNorm, p.n, 1, 256, 0, a.reset().ptr(s.x).ptr(s.proj).i64(lo(H)).ptr(ly.ffnNorm).
			ptr(s.xn).i64(lo(H)).ptr(0).i32(cfg.Hidden).f32(cfg.RMSEps)); err != nil {
			return fmt.Errorf("cuda: layer %d: FFN norm: %w", li, err)
		}
		if err := d.gemm(wt, ly.gu, 2*cfg.FFN, cfg.Hidden, s.xn, rows, s.gu); err != nil {
			return fmt.Errorf("cuda: layer %d: gate/up: %w", li, err)
		}
		if err := d.launch(kSwiGLU, swGrid, 1, 256, 0, a.reset().ptr(s.act).i64(lo(F)).ptr(s.gu).i64(lo(2*F)).
			i32(cfg.FFN).i64(swTotal)); err != nil {
			return fmt.Errorf("cuda: layer %d: SwiGLU: %w", li, err)
		}
		if err := d.gemm(wt, ly.down, cfg.Hidden, cfg.FFN, s.act, rows, s.proj); err != nil {
			return fmt.Errorf("cuda: layer %d: down: %w", li, err)
		}
	}
	if p.nOut == 0 {
		return nil
	}
	// Final norm over the output rows only (the last FFN output joins their
	// residual here), then the LM head.
	nOut := int64(p.nOut)
	outLo, outRows2 := int64(0), p.nOut
	if c.opt.Split {
		outLo, outRows2 = nOut*H, 2*p.nOut
	}
	if err := d.launch(kNorm, p.nOut, 1, 256, 0, a.reset().ptr(s.x).ptr(s.proj).i64(lo(H)).ptr(w.outNorm).
		ptr(s.xo).i64(outLo).ptr(outRows).i32(cfg.Hidden).f32(cfg.RMSEps)); err != nil {
		return fmt.Errorf("cuda: output norm: %w", err)
	}
	if err := d.gemm(wt, w.output, cfg.Vocab, cfg.Hidden, s.xo, outRows2, s.logits); err != nil {
		return fmt.Errorf("cuda: LM head: %w", err)
	}
	if c.opt.Split {
		total := nOut * int64(cfg.Vocab)
		grid := int(min((total+255)/256, 65535))
		if err := d.launch(kFold, grid, 1, 256, 0, a.reset().ptr(s.logits).i64(total).i64(total)); err != nil {
			return fmt.Errorf("cuda: logits: %w", err)
		}
	}
	return nil
}
