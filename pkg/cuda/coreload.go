package cuda

import (
	"fmt"

	"github.com/lightllm-go/lightllm/pkg/model"
	"github.com/lightllm-go/lightllm/pkg/tensor"
)

// stageBytes bounds the host buffer used to convert weights on upload.
const stageBytes = 64 << 20

// loadWeights converts every weight to the device type and copies it over:
// matrices in the weight type (q|k|v and gate|up stacked into one matrix
// each, so each is one product), vectors in f32.
func (c *core) loadWeights(mw model.Weights) error {
	cfg := c.cfg
	up := uploader{c: c, tmp: make([]float32, max(cfg.Hidden, cfg.FFN, cfg.Heads*cfg.HeadDim))}
	w := &c.w
	w.neox, w.ropeScale, w.freqScale = mw.RopeNeox, mw.RopeScale, mw.FreqScale
	es := int64(c.opt.wt.size())
	var err error
	if mw.FreqFactor != nil && len(mw.FreqFactor) != cfg.HeadDim/2 {
		return fmt.Errorf("cuda: %d RoPE frequency factors, want %d", len(mw.FreqFactor), cfg.HeadDim/2)
	}
	if w.freqFactor, err = up.vec(mw.FreqFactor, "rope_freqs"); err != nil {
		return err
	}
	if w.embed, err = up.mat(devMat{[]matPart{{"token embedding", mw.Embed, cfg.Vocab}}, cfg.Hidden}, "embedding"); err != nil {
		return err
	}
	w.output = w.embed
	if !cfg.TiedEmbeddings {
		if w.output, err = up.mat(devMat{[]matPart{{"output", mw.Output, cfg.Vocab}}, cfg.Hidden}, "output"); err != nil {
			return err
		}
	}
	w.matBytes = int64(cfg.Vocab) * int64(cfg.Hidden) * es
	if len(mw.OutNorm) != cfg.Hidden {
		return fmt.Errorf("cuda: output norm has %d values, want %d", len(mw.OutNorm), cfg.Hidden)
	}
	if w.outNorm, err = up.vec(mw.OutNorm, "output_norm"); err != nil {
		return err
	}
	if len(mw.Layers) != cfg.Layers {
		return fmt.Errorf("cuda: %d layers of weights, want %d", len(mw.Layers), cfg.Layers)
	}
	w.layers = make([]devLayer, cfg.Layers)
	for i := range w.layers {
		ly := &w.layers[i]
		qkv, wo, gu, down := layerMats(cfg, &mw.Layers[i], i)
		for _, m := range []struct {
			dst *uint64
			m   devMat
		}{{&ly.qkv, qkv}, {&ly.wo, wo}, {&ly.gu, gu}, {&ly.down, down}} {
			if *m.dst, err = up.mat(m.m, m.m.parts[0].name); err != nil {
				return err
			}
			w.matBytes += int64(m.m.rows()) * int64(m.m.cols) * es
		}
		hl, err := layerVectors(cfg, &mw.Layers[i], i)
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
	return nil
}

// uploader carries the conversion buffers of one upload.
type uploader struct {
	c     *core
	stage []byte
	tmp   []float32
}

// mat uploads a device matrix (its parts stacked by rows).
func (u *uploader) mat(dm devMat, what string) (uint64, error) {
	if err := dm.check(); err != nil {
		return 0, err
	}
	rowOut := int64(dm.cols) * int64(u.c.opt.wt.size())
	p, err := u.c.dev.alloc(int64(dm.rows())*rowOut, what)
	if err != nil {
		return 0, err
	}
	u.c.w.bytes += int64(dm.rows()) * rowOut
	off := uint64(0)
	for _, part := range dm.parts {
		if err := u.rows(p+off, part.m, part.rows, dm.cols); err != nil {
			return 0, fmt.Errorf("cuda: uploading %s: %w", part.name, err)
		}
		off += uint64(int64(part.rows) * rowOut)
	}
	return p, nil
}

// rows copies a [rows x cols] matrix to dst in the weight type: straight
// from the model's bytes when the types agree, else converted in chunks.
func (u *uploader) rows(dst uint64, t *tensor.Matrix, rows, cols int) error {
	wt := u.c.opt.wt
	rowOut := cols * wt.size()
	if t.Type == wt.tensorType() {
		return u.c.dev.write(dst, t.Data[:rows*rowOut])
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
		if err := u.c.dev.write(dst+uint64(r0*rowOut), buf); err != nil {
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
	p, err := u.c.dev.alloc(int64(4*len(v)), what)
	if err != nil {
		return 0, err
	}
	u.c.w.bytes += int64(4 * len(v))
	return p, u.c.dev.write(p, tensor.F32Bytes(v))
}
