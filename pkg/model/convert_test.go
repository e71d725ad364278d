package model

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"path/filepath"
	"testing"

	"github.com/lightllm-go/lightllm/pkg/gguf"
	"github.com/lightllm-go/lightllm/pkg/tensor"
)

// TestMixedTypes: tensors of the block types llama.cpp's files mix (here
// q4_K, q6_K, q5_0, q3_K, iq4_xs, q4_1, and gpt-oss's mxfp4), all computed natively, give the
// logits of the same model holding those tensors' exact values in f32.
func TestMixedTypes(t *testing.T) {
	asTensorType := map[gguf.GGMLType]tensor.DType{gguf.Q6_K: tensor.Q6_K, gguf.Q4_K: tensor.Q4_K, gguf.Q5_0: tensor.Q5_0,
		gguf.Q3_K: tensor.Q3_K, gguf.IQ4_XS: tensor.IQ4_XS, gguf.Q4_1: tensor.Q4_1, gguf.MXFP4: tensor.MXFP4}
	dir := t.TempDir()
	o := GenOptions{Arch: "llama", Hidden: 256, Layers: 1, Heads: 4, KVHeads: 2, FFN: 256, Vocab: 300, DType: "f32", Seed: 5}
	base := filepath.Join(dir, "base.gguf")
	if err := GenerateGGUF(base, o); err != nil {
		t.Fatal(err)
	}
	f, err := gguf.Open(base)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r := rand.New(rand.NewPCG(1, 2))
	// Random blocks with small scales so the weights have a sane size.
	blocks := func(typ gguf.GGMLType, n int, fix func(blk []byte)) []byte {
		b := make([]byte, n/int(typ.BlockSize())*int(typ.TypeSize()))
		for i := range b {
			b[i] = byte(r.Uint32())
		}
		for i := 0; i < len(b); i += int(typ.TypeSize()) {
			fix(b[i : i+int(typ.TypeSize())])
		}
		return b
	}
	small := func(v float32) []byte {
		return binary.LittleEndian.AppendUint16(nil, tensor.F32ToF16(v))
	}
	replaced := map[string]struct {
		typ  gguf.GGMLType
		data []byte
	}{
		"blk.0.ffn_up.weight": {gguf.Q6_K, blocks(gguf.Q6_K, 256*256, func(b []byte) { copy(b[208:], small(1e-5)) })},
		"blk.0.attn_output.weight": {gguf.Q4_K, blocks(gguf.Q4_K, 256*256, func(b []byte) {
			copy(b[0:], small(1e-4))
			copy(b[2:], small(1e-4))
		})},
		"blk.0.ffn_gate.weight": {gguf.Q5_0, blocks(gguf.Q5_0, 256*256, func(b []byte) { copy(b[0:], small(3e-3)) })},
		"blk.0.ffn_down.weight": {gguf.Q3_K, blocks(gguf.Q3_K, 256*256, func(b []byte) { copy(b[108:], small(1e-4)) })},
		"blk.0.attn_q.weight":   {gguf.IQ4_XS, blocks(gguf.IQ4_XS, 256*256, func(b []byte) { copy(b[0:], small(1e-5)) })},
		"blk.0.attn_v.weight":   {gguf.MXFP4, blocks(gguf.MXFP4, 128*256, func(b []byte) { b[0] = 117 })},
		"blk.0.attn_k.weight":   {gguf.Q4_1, blocks(gguf.Q4_1, 128*256, func(b []byte) { copy(b[0:], small(1e-3)); copy(b[2:], small(-7e-3)) })},
	}
	write := func(name string, asF32 bool) string {
		w := gguf.NewWriter()
		for _, k := range f.Keys() {
			v, _ := f.Value(k)
			w.Set(k, v)
		}
		for i := range f.Tensors {
			ti := &f.Tensors[i]
			rep, ok := replaced[ti.Name]
			switch {
			case !ok:
				w.AddTensor(ti.Name, ti.Type, ti.Shape, f.TensorData(ti))
			case asF32:
				vals := make([]float32, ti.NumElements())
				tensor.Dequantize(asTensorType[rep.typ], rep.data, vals)
				w.AddTensor(ti.Name, gguf.F32, ti.Shape, tensor.F32Bytes(vals))
			default:
				w.AddTensor(ti.Name, rep.typ, ti.Shape, rep.data)
			}
		}
		p := filepath.Join(dir, name)
		if err := w.WriteFile(p); err != nil {
			t.Fatal(err)
		}
		return p
	}
	load := func(p string) *Model {
		m, err := Load(p, LoadOptions{Threads: 2, NoTokenizer: true})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { m.Close() })
		return m
	}
	conv, ref := load(write("k.gguf", false)), load(write("f32.gguf", true))
	prompt := []int32{1, 5, 77, 200, 13, 42}
	lc, lr := prefillLogits(t, conv, prompt), prefillLogits(t, ref, prompt)
	t.Logf("max difference %g, logit rms %g", maxAbsDiff(lc, lr), rms(lr))
	if d := maxAbsDiff(lc, lr); d > 0.03*rms(lr) || math.IsNaN(d) {
		t.Errorf("converted model differs from f32 reference by %g (rms %g)", d, rms(lr))
	}
}
