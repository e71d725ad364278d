package cuda

import (
	"fmt"

	"github.com/lightllm-go/lightllm/pkg/model"
	"github.com/lightllm-go/lightllm/pkg/tensor"
)

// The weights come from the loaded *model.Model through its exported view
// (model.Weights): pkg/model is the one owner of file formats, tensor
// names, layouts and RoPE conventions; this package only stacks and
// converts what it is handed.

// matPart is one source matrix of a device matrix; device matrices stack
// their parts' rows (q|k|v for the fused QKV product, gate|up for the MLP).
type matPart struct {
	name string // for errors
	m    *tensor.Matrix
	rows int
}

// devMat is a device matrix: parts stacked by rows, cols wide.
type devMat struct {
	parts []matPart
	cols  int
}

func (m devMat) rows() int {
	n := 0
	for _, p := range m.parts {
		n += p.rows
	}
	return n
}

// check verifies every part's shape against the configuration.
func (m devMat) check() error {
	for _, p := range m.parts {
		switch {
		case p.m == nil:
			return fmt.Errorf("cuda: model has no %s matrix", p.name)
		case p.m.Rows != p.rows || p.m.Cols != m.cols:
			return fmt.Errorf("cuda: %s is [%d %d], want [%d %d]", p.name, p.m.Rows, p.m.Cols, p.rows, m.cols)
		}
	}
	return nil
}

// layerMats lists layer i's device matrices: QKV, output, gate|up, down.
func layerMats(c model.Config, lw *model.LayerWeights, i int) (qkv, wo, gu, down devMat) {
	p := fmt.Sprintf("layer %d ", i)
	qDim, kvDim := c.Heads*c.HeadDim, c.KVHeads*c.HeadDim
	qkv = devMat{[]matPart{{p + "q", lw.Wq, qDim}, {p + "k", lw.Wk, kvDim}, {p + "v", lw.Wv, kvDim}}, c.Hidden}
	wo = devMat{[]matPart{{p + "attention output", lw.Wo, c.Hidden}}, qDim}
	gu = devMat{[]matPart{{p + "ffn gate", lw.Gate, c.FFN}, {p + "ffn up", lw.Up, c.FFN}}, c.Hidden}
	down = devMat{[]matPart{{p + "ffn down", lw.Down, c.Hidden}}, c.FFN}
	return
}

// hostLayer is a layer's small f32 vectors.
type hostLayer struct {
	attnNorm, ffnNorm []float32
	bias              []float32 // q|k|v biases concatenated (qwen2), nil otherwise
	qNorm, kNorm      []float32 // per-head norms (qwen3), nil otherwise
}

// vecWant is a vector a layer must have and its length.
type vecWant struct {
	name string
	v    []float32
	n    int
}

func layerVectors(c model.Config, lw *model.LayerWeights, i int) (hostLayer, error) {
	qDim, kvDim := c.Heads*c.HeadDim, c.KVHeads*c.HeadDim
	hl := hostLayer{attnNorm: lw.AttnNorm, ffnNorm: lw.FFNNorm}
	want := []vecWant{{"attention norm", lw.AttnNorm, c.Hidden}, {"ffn norm", lw.FFNNorm, c.Hidden}}
	if c.QKVBias {
		want = append(want, vecWant{"q bias", lw.Bq, qDim}, vecWant{"k bias", lw.Bk, kvDim}, vecWant{"v bias", lw.Bv, kvDim})
		hl.bias = append(append(append([]float32(nil), lw.Bq...), lw.Bk...), lw.Bv...)
	}
	if c.QKNorm {
		want = append(want, vecWant{"q norm", lw.QNorm, c.HeadDim}, vecWant{"k norm", lw.KNorm, c.HeadDim})
		hl.qNorm, hl.kNorm = lw.QNorm, lw.KNorm
	}
	for _, w := range want {
		if len(w.v) != w.n {
			return hl, fmt.Errorf("cuda: layer %d %s has %d values, want %d", i, w.name, len(w.v), w.n)
		}
	}
	return hl, nil
}

// convertRows encodes rows [r0, r1) of t (cols wide) as dt into dst, which
// must hold (r1-r0)*cols elements of dt. Same-type rows are copied; other
// types go through f32 (tmp holds one row).
func convertRows(dst []byte, t *tensor.Matrix, r0, r1, cols int, dt dtype, tmp []float32) error {
	rb := t.RowBytes()
	out := cols * dt.size()
	if t.Cols != cols || len(dst) < (r1-r0)*out || len(t.Data) < r1*rb || len(tmp) < cols {
		return fmt.Errorf("cuda: %d x %d %s matrix: conversion buffers too small", t.Rows, t.Cols, t.Type)
	}
	if t.Type == dt.tensorType() {
		copy(dst, t.Data[r0*rb:r1*rb])
		return nil
	}
	row := tmp[:cols]
	for r := r0; r < r1; r++ {
		tensor.Dequantize(t.Type, t.Row(r), row)
		d := dst[(r-r0)*out : (r-r0+1)*out]
		switch dt {
		case dtF32:
			copy(d, tensor.F32Bytes(row))
		case dtF16:
			for i, v := range row {
				h := tensor.F32ToF16(v)
				d[2*i], d[2*i+1] = byte(h), byte(h>>8)
			}
		case dtBF16:
			for i, v := range row {
				h := tensor.F32ToBF16(v)
				d[2*i], d[2*i+1] = byte(h), byte(h>>8)
			}
		}
	}
	return nil
}
