//go:build cuda

package cuda

/*
#include "shim.h"
*/
import "C"

import (
	"fmt"
	"time"
	"unsafe"

	"github.com/lightllm-go/lightllm/pkg/tensor"
)

// stageBytes bounds the host buffer used to convert weights on upload.
const stageBytes = 64 << 20

// upload converts every weight to the device type and copies it over:
// matrices in the weight type (q|k|v and gate|up stacked into one matrix
// each, so each takes one product), vectors in f32.
func (g *Model) upload(wf *weightFile) error {
	start := time.Now()
	c := g.cfg
	up := uploader{g: g, wf: wf, tmp: make([]float32, max(c.Hidden, c.FFN, c.Heads*c.HeadDim))}
	w := &g.w
	w.neox, w.ropeScale, w.freqScale = wf.neox, wf.ropeScale, wf.freqScale
	var err error
	if w.freqFactor, err = up.vec(wf.freqFactor, "rope_freqs"); err != nil {
		return err
	}
	embed := devMat{[]matPart{{"token_embd.weight", c.Vocab}}, c.Hidden}
	if w.embed, err = up.mat(embed, "embedding"); err != nil {
		return err
	}
	w.output = w.embed
	if !c.TiedEmbeddings {
		if w.output, err = up.mat(devMat{[]matPart{{"output.weight", c.Vocab}}, c.Hidden}, "output"); err != nil {
			return err
		}
	}
	w.matBytes = int64(c.Vocab) * int64(c.Hidden) * int64(g.opt.wt.size())
	outNorm, err := wf.vector("output_norm.weight", c.Hidden, false)
	if err != nil {
		return err
	}
	if w.outNorm, err = up.vec(outNorm, "output_norm"); err != nil {
		return err
	}
	w.layers = make([]devLayer, c.Layers)
	for i := range w.layers {
		ly := &w.layers[i]
		qkv, wo, gu, down := layerMats(c, i)
		for _, m := range []struct {
			dst *uint64
			m   devMat
		}{{&ly.qkv, qkv}, {&ly.wo, wo}, {&ly.gu, gu}, {&ly.down, down}} {
			if *m.dst, err = up.mat(m.m, m.m.parts[0].name); err != nil {
				return err
			}
			w.matBytes += int64(m.m.rows()) * int64(m.m.cols) * int64(g.opt.wt.size())
		}
		hl, err := wf.layerVectors(c, i)
		if err != nil {
			return err
		}
		for _, v := range []struct {
			dst *uint64
			v   []float32
		}{{&ly.attnNorm, hl.attnNorm}, {&ly.ffnNorm, hl.ffnNorm}, {&ly.bias, hl.bias}, {&ly.qNorm, hl.qNorm}, {&ly.kNorm, hl.kNorm}} {
			if *v.dst, err = up.vec(v.v, fmt.Sprintf("layer %d vectors", i)); err != nil {
				return err
			}
		}
	}
	w.uploadSeconds = time.Since(start).Seconds()
	return nil
}

// uploader carries the conversion buffers of one upload.
type uploader struct {
	g     *Model
	wf    *weightFile
	stage []byte
	tmp   []float32
}

// mat uploads a device matrix (its parts stacked by rows).
func (u *uploader) mat(dm devMat, what string) (uint64, error) {
	g, es := u.g, int64(u.g.opt.wt.size())
	rowOut := int64(dm.cols) * es
	p, err := g.alloc(int64(dm.rows())*rowOut, what)
	if err != nil {
		return 0, err
	}
	off := uint64(0)
	for _, part := range dm.parts {
		t, err := u.wf.matrix(part.name, part.rows, dm.cols)
		if err != nil {
			return 0, err
		}
		if err := u.rows(p+off, t, part.rows, dm.cols); err != nil {
			return 0, fmt.Errorf("cuda: uploading %s: %w", part.name, err)
		}
		off += uint64(int64(part.rows) * rowOut)
	}
	g.w.bytes += int64(dm.rows()) * rowOut
	return p, nil
}

// rows copies a [rows x cols] tensor to dst in the weight type: straight
// from the mapped file when the types agree, else converted in chunks.
func (u *uploader) rows(dst uint64, t *hostTensor, rows, cols int) error {
	wt := u.g.opt.wt
	rowOut := cols * wt.size()
	if t.typ == wt.tensorType() {
		return u.g.htod(dst, t.data[:rows*rowOut])
	}
	chunk := max(1, stageBytes/rowOut)
	if need := min(rows, chunk) * rowOut; cap(u.stage) < need {
		u.stage = make([]byte, need)
	}
	for r0 := 0; r0 < rows; r0 += chunk {
		r1 := min(rows, r0+chunk)
		buf := u.stage[:(r1-r0)*rowOut]
		if err := convertRows(buf, t, r0, r1, cols, wt, u.tmp); err != nil {
			return err
		}
		if err := u.g.htod(dst+uint64(r0*rowOut), buf); err != nil {
			return err
		}
	}
	return nil
}

// vec uploads an f32 vector; nil uploads nothing and returns 0.
func (u *uploader) vec(v []float32, what string) (uint64, error) {
	if v == nil {
		return 0, nil
	}
	p, err := u.g.alloc(int64(4*len(v)), what)
	if err != nil {
		return 0, err
	}
	u.g.w.bytes += int64(4 * len(v))
	return p, u.g.htod(p, tensor.F32Bytes(v))
}

// scratch is the activation memory of a forward pass, sized for tok tokens,
// out output rows and meta int32s of batch metadata. In split mode every
// buffer a product reads or writes has twice the rows.
type scratch struct {
	tok, out, meta                           int
	x, xn, qkv, att, proj, gu, act, cos, sin uint64
	xo, logits, ids, metaDev                 uint64
	// Pinned host memory for the transfers.
	hMeta, hLogits, hIDs unsafe.Pointer
}

func (s *scratch) freeHost(l *libs) {
	for _, p := range []*unsafe.Pointer{&s.hMeta, &s.hLogits, &s.hIDs} {
		if *p != nil {
			C.d_host_free(l.L, *p)
			*p = nil
		}
	}
}

func (g *Model) hostAlloc(dst *unsafe.Pointer, n int64, what string) error {
	if *dst != nil {
		C.d_host_free(g.l.L, *dst)
		*dst = nil
	}
	return g.l.check(C.d_host_alloc(g.l.L, dst, C.size_t(max(n, 1))), "cuMemHostAlloc "+what)
}

// ensureScratch grows the scratch to at least tok tokens, out output rows
// and meta metadata entries.
func (g *Model) ensureScratch(tok, out, meta int) error {
	c, s := g.cfg, &g.sc
	S := int64(1)
	if g.opt.Split {
		S = 2
	}
	es := int64(g.opt.wt.size())
	H, qDim, kvDim, F := int64(c.Hidden), int64(c.Heads*c.HeadDim), int64(c.KVHeads*c.HeadDim), int64(c.FFN)
	if tok > s.tok {
		tok = (tok + 255) &^ 255
		T := int64(tok)
		bufs := []struct {
			p *uint64
			n int64
		}{
			{&s.x, T * H * 4}, {&s.xn, S * T * H * es}, {&s.qkv, S * T * (qDim + 2*kvDim) * 4},
			{&s.att, S * T * qDim * es}, {&s.proj, S * T * H * 4}, {&s.gu, S * T * 2 * F * 4},
			{&s.act, S * T * F * es}, {&s.cos, T * int64(c.HeadDim/2) * 4}, {&s.sin, T * int64(c.HeadDim/2) * 4},
		}
		if err := g.realloc(bufs, "activations"); err != nil {
			s.tok = 0
			return err
		}
		s.tok = tok
	}
	if out > s.out {
		O := int64(out)
		bufs := []struct {
			p *uint64
			n int64
		}{{&s.xo, S * O * H * es}, {&s.logits, S * O * int64(c.Vocab) * 4}, {&s.ids, O * 4}}
		if err := g.realloc(bufs, "logits"); err != nil {
			s.out = 0
			return err
		}
		if err := g.hostAlloc(&s.hLogits, O*int64(c.Vocab)*4, "logits"); err != nil {
			s.out = 0
			return err
		}
		if err := g.hostAlloc(&s.hIDs, O*4, "ids"); err != nil {
			s.out = 0
			return err
		}
		s.out = out
	}
	if meta > s.meta {
		meta += meta / 4
		bufs := []struct {
			p *uint64
			n int64
		}{{&s.metaDev, int64(meta) * 4}}
		if err := g.realloc(bufs, "batch metadata"); err != nil {
			s.meta = 0
			return err
		}
		if err := g.hostAlloc(&s.hMeta, int64(meta)*4, "batch metadata"); err != nil {
			s.meta = 0
			return err
		}
		s.meta = meta
	}
	return nil
}

// realloc frees and re-allocates a set of buffers (all freed first, so
// growing does not need old and new at once).
func (g *Model) realloc(bufs []struct {
	p *uint64
	n int64
}, what string) error {
	for _, b := range bufs {
		g.free(*b.p)
		*b.p = 0
	}
	for _, b := range bufs {
		p, err := g.alloc(b.n, what)
		if err != nil {
			return err
		}
		*b.p = p
	}
	return nil
}
