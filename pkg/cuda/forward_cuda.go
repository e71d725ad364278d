//go:build cuda

package cuda

/*
#include "shim.h"
*/
import "C"

import (
	"fmt"
	"math"
	"runtime"
	"unsafe"

	"github.com/lightllm-go/lightllm/pkg/model"
)

// Forward runs one step, as (*model.Model).Forward: it writes the new
// tokens' K/V into the device pool and fills logits[i] (len >= Vocab) for
// every Seqs[i] with WantLogits. kv must be the handle of the latest NewKV.
func (g *Model) Forward(b *model.Batch, kv *model.KV, logits [][]float32) error {
	return g.forward(b, kv, logits, nil)
}

// ForwardArgmax is Forward for greedy decoding: ids[i] receives the argmax
// token of Seqs[i] (WantLogits), computed on the device, so only the ids
// cross to the host.
func (g *Model) ForwardArgmax(b *model.Batch, kv *model.KV, ids []int32) error {
	if ids == nil {
		ids = []int32{} // non-nil selects the argmax path
	}
	return g.forward(b, kv, nil, ids)
}

func (g *Model) forward(b *model.Batch, kv *model.KV, logits [][]float32, ids []int32) error {
	c := g.cfg
	switch {
	case g.closed:
		return fmt.Errorf("cuda: forward on a closed model")
	case b == nil:
		return fmt.Errorf("forward: nil batch")
	case kv == nil || kv != g.kv.handle:
		return fmt.Errorf("forward: KV store was not made by this model's latest NewKV")
	case g.kv.err != nil:
		return g.kv.err
	}
	p := &g.pl
	if err := p.build(b, c.Vocab, g.kv.slots, c.Heads/c.KVHeads); err != nil {
		return err
	}
	for _, si := range p.outSeq {
		if ids != nil {
			if si >= len(ids) {
				return fmt.Errorf("forward: seq %d wants a token but ids has %d entries", si, len(ids))
			}
		} else if si >= len(logits) || len(logits[si]) < c.Vocab {
			return fmt.Errorf("forward: seq %d wants logits but logits[%d] is missing or shorter than %d", si, si, c.Vocab)
		}
	}
	if p.n == 0 {
		return nil
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := g.enter(); err != nil {
		return err
	}
	if err := g.ensureScratch(p.n, p.nOut, len(p.buf)); err != nil {
		return err
	}
	if err := g.run(p); err != nil {
		return err
	}
	if p.nOut == 0 {
		return g.l.check(C.d_sync(g.l.L, g.stream), "forward")
	}
	if ids != nil {
		return g.finishArgmax(p, ids)
	}
	return g.finishLogits(p, logits)
}

// run uploads the plan and enqueues the whole forward pass on the stream,
// up to the logits of the output rows (in sc.logits).
func (g *Model) run(p *plan) error {
	c, s, w := g.cfg, &g.sc, &g.w
	l := g.l
	meta := unsafe.Slice((*int32)(s.hMeta), len(p.buf))
	copy(meta, p.buf)
	if err := l.check(C.d_htod_async(l.L, C.CUdeviceptr(s.metaDev), s.hMeta, C.size_t(4*len(p.buf)), g.stream), "upload batch"); err != nil {
		return err
	}
	at := func(off int) uint64 { return s.metaDev + uint64(4*off) }
	tokens, pos, wslot := at(0), at(p.offPos), at(p.offWrite)
	outRows, tiles, slots := at(p.offOut), at(p.offTiles), at(p.offSlots)

	n, H, hd := int64(p.n), int64(c.Hidden), c.HeadDim
	qDim, kvDim := int64(c.Heads*hd), int64(c.KVHeads*hd)
	qkvDim, F := qDim+2*kvDim, int64(c.FFN)
	// In split mode every product runs over twice the rows (values, then
	// remainders) and lo(width) is where the remainder rows start.
	rows, split := p.n, int64(0)
	if g.opt.Split {
		rows, split = 2*p.n, n
	}
	lo := func(width int64) int64 { return split * width }
	a := &g.args
	if err := g.launch(g.k.embed, p.n, 1, 256, 0, a.reset().ptr(s.x).ptr(w.embed).ptr(tokens).i32(c.Hidden)); err != nil {
		return err
	}
	if err := g.launch(g.k.ropeTable, (p.n+127)/128, 1, 128, 0, a.reset().ptr(s.cos).ptr(s.sin).ptr(pos).i32(p.n).
		i32(hd/2).f32(w.ropeScale).f32(w.freqScale).ptr(w.freqFactor)); err != nil {
		return err
	}
	group := c.Heads / c.KVHeads
	attnBlock := 32 * p.rows * group
	attnSmem := attnSharedBytes(hd, g.opt.kvt, p.rows*group)
	postWarps := min(4, c.Heads+2*c.KVHeads)
	scale := 1 / float32(math.Sqrt(float64(hd)))
	neox := 0
	if w.neox {
		neox = 1
	}
	swTotal := n * F
	swGrid := int(min((swTotal+255)/256, 65535))
	for li := range w.layers {
		ly := &w.layers[li]
		layerOff := int64(li) * int64(g.kv.slots) * kvDim
		delta := uint64(0) // the previous layer's FFN output joins the residual here
		if li > 0 {
			delta = s.proj
		}
		if err := g.launch(g.k.norm, p.n, 1, 256, 0, a.reset().ptr(s.x).ptr(delta).i64(lo(H)).ptr(ly.attnNorm).
			ptr(s.xn).i64(lo(H)).ptr(0).i32(c.Hidden).f32(c.RMSEps)); err != nil {
			return fmt.Errorf("cuda: layer %d: attention norm: %w", li, err)
		}
		if err := g.gemm(ly.qkv, int(qkvDim), c.Hidden, s.xn, rows, s.qkv); err != nil {
			return fmt.Errorf("cuda: layer %d: QKV: %w", li, err)
		}
		if err := g.launch(g.k.qkvPost, p.n, 1, 32*postWarps, postWarps*hd*4, a.reset().ptr(s.qkv).i64(lo(qkvDim)).
			ptr(ly.bias).ptr(ly.qNorm).ptr(ly.kNorm).ptr(s.cos).ptr(s.sin).ptr(wslot).ptr(g.kv.k).ptr(g.kv.v).
			i64(layerOff).i32(c.Heads).i32(c.KVHeads).i32(hd).i32(neox).f32(c.RMSEps)); err != nil {
			return fmt.Errorf("cuda: layer %d: q/k/v: %w", li, err)
		}
		if err := g.launch(g.k.attn, p.nTiles, c.KVHeads, attnBlock, attnSmem, a.reset().ptr(s.att).i64(lo(qDim)).
			ptr(s.qkv).ptr(g.kv.k).ptr(g.kv.v).i64(layerOff).ptr(slots).ptr(tiles).ptr(pos).
			i32(c.Heads).i32(c.KVHeads).i32(hd).i32(p.rows).f32(scale)); err != nil {
			return fmt.Errorf("cuda: layer %d: attention: %w", li, err)
		}
		if err := g.gemm(ly.wo, c.Hidden, int(qDim), s.att, rows, s.proj); err != nil {
			return fmt.Errorf("cuda: layer %d: attention output: %w", li, err)
		}
		if err := g.launch(g.k.norm, p.n, 1, 256, 0, a.reset().ptr(s.x).ptr(s.proj).i64(lo(H)).ptr(ly.ffnNorm).
			ptr(s.xn).i64(lo(H)).ptr(0).i32(c.Hidden).f32(c.RMSEps)); err != nil {
			return fmt.Errorf("cuda: layer %d: FFN norm: %w", li, err)
		}
		if err := g.gemm(ly.gu, 2*c.FFN, c.Hidden, s.xn, rows, s.gu); err != nil {
			return fmt.Errorf("cuda: layer %d: gate/up: %w", li, err)
		}
		if err := g.launch(g.k.swiglu, swGrid, 1, 256, 0, a.reset().ptr(s.act).i64(lo(F)).ptr(s.gu).i64(lo(2*F)).
			i32(c.FFN).i64(swTotal)); err != nil {
			return fmt.Errorf("cuda: layer %d: SwiGLU: %w", li, err)
		}
		if err := g.gemm(ly.down, c.Hidden, c.FFN, s.act, rows, s.proj); err != nil {
			return fmt.Errorf("cuda: layer %d: down: %w", li, err)
		}
	}
	if p.nOut == 0 {
		return nil
	}
	// Final norm over the output rows only (the last FFN output joins their
	// residual here), then the LM head.
	nOut := int64(p.nOut)
	outLo, outRowsGEMM := int64(0), p.nOut
	if g.opt.Split {
		outLo, outRowsGEMM = nOut*H, 2*p.nOut
	}
	if err := g.launch(g.k.norm, p.nOut, 1, 256, 0, a.reset().ptr(s.x).ptr(s.proj).i64(lo(H)).ptr(w.outNorm).
		ptr(s.xo).i64(outLo).ptr(outRows).i32(c.Hidden).f32(c.RMSEps)); err != nil {
		return err
	}
	if err := g.gemm(w.output, c.Vocab, c.Hidden, s.xo, outRowsGEMM, s.logits); err != nil {
		return fmt.Errorf("cuda: LM head: %w", err)
	}
	if g.opt.Split {
		total := nOut * int64(c.Vocab)
		grid := int(min((total+255)/256, 65535))
		if err := g.launch(g.k.fold, grid, 1, 256, 0, a.reset().ptr(s.logits).i64(total).i64(total)); err != nil {
			return err
		}
	}
	return nil
}

func (g *Model) finishLogits(p *plan, logits [][]float32) error {
	V := g.cfg.Vocab
	s, l := &g.sc, g.l
	n := p.nOut * V
	if err := l.check(C.d_dtoh_async(l.L, s.hLogits, C.CUdeviceptr(s.logits), C.size_t(4*n), g.stream), "download logits"); err != nil {
		return err
	}
	if err := l.check(C.d_sync(l.L, g.stream), "forward"); err != nil {
		return err
	}
	host := unsafe.Slice((*float32)(s.hLogits), n)
	for j, si := range p.outSeq {
		copy(logits[si][:V], host[j*V:(j+1)*V])
	}
	return nil
}

func (g *Model) finishArgmax(p *plan, ids []int32) error {
	s, l := &g.sc, g.l
	if err := g.launch(g.k.argmax, p.nOut, 1, 1024, 0, g.args.reset().ptr(s.ids).ptr(s.logits).i32(g.cfg.Vocab)); err != nil {
		return err
	}
	if err := l.check(C.d_dtoh_async(l.L, s.hIDs, C.CUdeviceptr(s.ids), C.size_t(4*p.nOut), g.stream), "download ids"); err != nil {
		return err
	}
	if err := l.check(C.d_sync(l.L, g.stream), "forward"); err != nil {
		return err
	}
	host := unsafe.Slice((*int32)(s.hIDs), p.nOut)
	for j, si := range p.outSeq {
		ids[si] = host[j]
	}
	return nil
}

// launch enqueues a kernel on the model's stream.
func (g *Model) launch(f C.CUfunction, gx, gy, block, smem int, a *kargs) error {
	if gx <= 0 || gy <= 0 {
		return nil
	}
	return g.l.check(C.d_launch(g.l.L, f, C.uint(gx), C.uint(gy), C.uint(block), C.uint(smem), g.stream,
		(*C.uint64_t)(unsafe.Pointer(&a.v[0])), C.int(len(a.v))), "cuLaunchKernel")
}

// gemm computes Y[rows x out] = X[rows x in] * W[out x in]^T with X and W in
// the weight type and Y in f32.
func (g *Model) gemm(W uint64, out, in int, X uint64, rows int, Y uint64) error {
	wt := g.opt.wt.blas()
	return blasCheck(C.b_gemm(g.l.L, g.blas, C.int(out), C.int(rows), C.int(in), C.CUdeviceptr(W), wt,
		C.CUdeviceptr(X), wt, C.CUdeviceptr(Y), dtF32.blas()), "GemmEx")
}
