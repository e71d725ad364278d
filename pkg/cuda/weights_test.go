package cuda

import (
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/lightllm-go/lightllm/pkg/model"
	"github.com/lightllm-go/lightllm/pkg/tensor"
	"github.com/lightllm-go/lightllm/pkg/testmodels"
)

// modelsDir is the shared test models directory: LIGHTLLM_TEST_MODELS, else
// ../shared/models from the repository root.
func modelsDir() string {
	if d := os.Getenv("LIGHTLLM_TEST_MODELS"); d != "" {
		return d
	}
	return filepath.Join("..", "..", "..", "shared", "models")
}

func storiesPath(t *testing.T, name string) string {
	t.Helper()
	p := filepath.Join(modelsDir(), "stories260K", name)
	if _, err := os.Stat(p); err != nil {
		testmodels.Missing(t, fmt.Sprintf("test model missing (%v): set LIGHTLLM_TEST_MODELS or provide ../shared/models", err), nil)
	}
	return p
}

func loadCPU(t *testing.T, path string) *model.Model {
	t.Helper()
	m, err := model.Load(path, model.LoadOptions{Threads: 1, NoTokenizer: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}

// TestWeightsMatchLayouts takes stories260K's weights from the model's view
// of its GGUF and HF forms: every device matrix and vector resolves with
// the right shape, the RoPE layout is the one of the stored q/k rows, and
// the two forms hold the same values once the GGUF's adjacent-pair q/k rows
// are mapped back to HF's rotate-half order.
func TestWeightsMatchLayouts(t *testing.T) {
	views := map[string]model.Weights{}
	var cfg model.Config
	for name, p := range map[string]string{"gguf": storiesPath(t, "stories260K-f32.gguf"), "hf": storiesPath(t, "hf")} {
		m := loadCPU(t, p)
		cfg = m.Config()
		w := m.Weights()
		views[name] = w
		if want := name == "hf"; w.RopeNeox != want {
			t.Errorf("%s: neox = %v, want %v", name, w.RopeNeox, want)
		}
		if w.FreqScale != 1 || w.FreqFactor != nil {
			t.Errorf("%s: unexpected RoPE scaling %v %v", name, w.FreqScale, w.FreqFactor)
		}
		for i := 0; i < cfg.Layers; i++ {
			qkv, wo, gu, down := layerMats(cfg, &w.Layers[i], i)
			for _, dm := range []devMat{qkv, wo, gu, down} {
				if err := dm.check(); err != nil {
					t.Errorf("%s: %v", name, err)
				}
			}
			if _, err := layerVectors(cfg, &w.Layers[i], i); err != nil {
				t.Errorf("%s: %v", name, err)
			}
		}
	}
	// GGUF q row r holds HF row ggufRow(r): heads keep their place, pairs
	// (2i, 2i+1) come from (i, i+hd/2).
	hd := cfg.HeadDim
	gq, hq := views["gguf"].Layers[0].Wq, views["hf"].Layers[0].Wq
	for r := 0; r < cfg.Heads*hd; r++ {
		h, j := r/hd, r%hd
		hr := h*hd + (j%2)*(hd/2) + j/2
		if string(gq.Row(r)) != string(hq.Row(hr)) {
			t.Fatalf("GGUF q row %d differs from HF row %d", r, hr)
		}
	}
	if string(views["gguf"].Embed.Data) != string(views["hf"].Embed.Data) {
		t.Error("embeddings differ between the GGUF and HF files")
	}
	w := views["gguf"]
	bad := devMat{[]matPart{{"q", w.Layers[0].Wq, 3}}, 3}
	if err := bad.check(); err == nil {
		t.Error("wrong shape accepted")
	}
	if err := (devMat{[]matPart{{"absent", nil, 3}}, 3}).check(); err == nil {
		t.Error("missing matrix accepted")
	}
	short := w.Layers[0]
	short.AttnNorm = short.AttnNorm[:1]
	if _, err := layerVectors(cfg, &short, 0); err == nil {
		t.Error("short norm accepted")
	}
}

func TestConvertRows(t *testing.T) {
	vals := []float32{0, 1, -2.5, 3.14159, 1e-3, -65504, 1e-8, 70000}
	cols := len(vals)
	f32, err := tensor.NewMatrix(tensor.F32, 2, cols, append(tensor.F32Bytes(vals), tensor.F32Bytes(vals)...))
	if err != nil {
		t.Fatal(err)
	}
	tmp := make([]float32, cols)
	for _, dt := range []dtype{dtF32, dtF16, dtBF16} {
		dst := make([]byte, 2*cols*dt.size())
		if err := convertRows(dst, f32, 0, 2, cols, dt, tmp); err != nil {
			t.Fatal(err)
		}
		for i, v := range append(vals, vals...) {
			var got float32
			switch dt {
			case dtF32:
				got = math.Float32frombits(binary.LittleEndian.Uint32(dst[4*i:]))
			case dtF16:
				if h := binary.LittleEndian.Uint16(dst[2*i:]); h != tensor.F32ToF16(v) {
					t.Errorf("f16 value %d: %#x, want %#x", i, h, tensor.F32ToF16(v))
				}
				continue
			case dtBF16:
				if h := binary.LittleEndian.Uint16(dst[2*i:]); h != tensor.F32ToBF16(v) {
					t.Errorf("bf16 value %d: %#x, want %#x", i, h, tensor.F32ToBF16(v))
				}
				continue
			}
			if got != v {
				t.Errorf("f32 value %d: %v, want %v", i, got, v)
			}
		}
	}
	// Quantized rows go through Dequantize; row 1 alone lands at dst[0].
	src := make([]float32, 2*32)
	for i := range src {
		src[i] = float32(i%7) - 3
	}
	q, err := tensor.Quantize(tensor.Q8_0, src)
	if err != nil {
		t.Fatal(err)
	}
	q8, err := tensor.NewMatrix(tensor.Q8_0, 2, 32, q)
	if err != nil {
		t.Fatal(err)
	}
	dst := make([]byte, 32*4)
	if err := convertRows(dst, q8, 1, 2, 32, dtF32, make([]float32, 32)); err != nil {
		t.Fatal(err)
	}
	want := make([]float32, 32)
	tensor.Dequantize(tensor.Q8_0, q[34:], want)
	for i := range want {
		if got := math.Float32frombits(binary.LittleEndian.Uint32(dst[4*i:])); got != want[i] {
			t.Fatalf("q8_0 value %d: %v, want %v", i, got, want[i])
		}
	}
	if err := convertRows(make([]byte, 4), q8, 0, 2, 32, dtF16, make([]float32, 32)); err == nil {
		t.Error("short destination accepted")
	}
}

func TestLlama3FreqFactors(t *testing.T) {
	rs := &model.RopeScaling{Type: "llama3", Factor: 8, LowFreqFactor: 1, HighFreqFactor: 4, OriginalMaxPos: 8192}
	ff := model.Llama3FreqFactors(rs, 500000, 128)
	if len(ff) != 64 || ff[0] != 1 || ff[63] != 8 {
		t.Fatalf("factors %v", ff)
	}
	for i := 1; i < len(ff); i++ {
		if ff[i] < ff[i-1] {
			t.Fatalf("factors not monotonic at %d: %v", i, ff)
		}
	}
}
