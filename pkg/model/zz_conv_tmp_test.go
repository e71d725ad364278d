package model

import (
	"fmt"
	"os"
	"testing"

	"github.com/lightllm-go/lightllm/pkg/gguf"
	"github.com/lightllm-go/lightllm/pkg/tensor"
)

func TestTmpConvert(t *testing.T) {
	if os.Getenv("CONV_OUT") == "" {
		t.Skip()
	}
	f, err := gguf.Open("/work/shared/models/stories260K/stories260K-f32.gguf")
	if err != nil {
		t.Fatal(err)
	}
	for _, ty := range []struct {
		name string
		dt   tensor.DType
		g    gguf.GGMLType
		ft   uint32
	}{{"f16", tensor.F16, gguf.F16, 1}, {"q8_0", tensor.Q8_0, gguf.Q8_0, 7}, {"q4_0", tensor.Q4_0, gguf.Q4_0, 2}} {
		w := gguf.NewWriter()
		for _, k := range f.Keys() {
			v, _ := f.Value(k)
			w.Set(k, v)
		}
		w.Set("general.file_type", ty.ft)
		for i := range f.Tensors {
			ti := &f.Tensors[i]
			data := f.TensorData(ti)
			if len(ti.Shape) == 2 && (ty.dt == tensor.F16 || ti.Shape[0]%32 == 0) {
				vals := make([]float32, ti.NumElements())
				tensor.Dequantize(tensor.F32, data, vals)
				var enc []byte
				cols := int(ti.Shape[0])
				for r := 0; r < len(vals)/cols; r++ {
					b, err := tensor.Quantize(ty.dt, vals[r*cols:(r+1)*cols])
					if err != nil {
						t.Fatal(err)
					}
					enc = append(enc, b...)
				}
				w.AddTensor(ti.Name, ty.g, ti.Shape, enc)
			} else {
				w.AddTensor(ti.Name, ti.Type, ti.Shape, data)
			}
		}
		out := fmt.Sprintf("%s/stories260K-%s.gguf", os.Getenv("CONV_OUT"), ty.name)
		if err := w.WriteFile(out); err != nil {
			t.Fatal(err)
		}
		t.Log("wrote", out)
	}
}
