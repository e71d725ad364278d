package gguf

import (
	"bytes"
	"errors"
	"fmt"
	"github.com/lightllm-go/lightllm/pkg/testmodels"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// modelsDir finds the shared test models (../shared/models from the repo
// root, or LIGHTLLM_TEST_MODELS).
func modelsDir(t testing.TB) string {
	t.Helper()
	if d := os.Getenv("LIGHTLLM_TEST_MODELS"); d != "" {
		return d
	}
	d, err := filepath.Abs("../../../shared/models")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(d); err != nil {
		testmodels.Missing(t, fmt.Sprintf("shared test models not found at %s (set LIGHTLLM_TEST_MODELS): %v", d, err), nil)
	}
	return d
}

func TestOpenStories260KVersions(t *testing.T) {
	dir := filepath.Join(modelsDir(t), "stories260K")
	v3, err := Open(filepath.Join(dir, "stories260K-f32.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	defer v3.Close()
	v1, err := Open(filepath.Join(dir, "tinyllamas-stories-260k-f32.ggufv1.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	defer v1.Close()
	if v3.Version != 3 || v1.Version != 1 {
		t.Fatalf("versions %d, %d; want 3, 1", v3.Version, v1.Version)
	}
	checks := []struct {
		key  string
		want uint64
	}{{"llama.embedding_length", 64}, {"llama.block_count", 5}, {"llama.feed_forward_length", 172},
		{"llama.attention.head_count", 8}, {"llama.attention.head_count_kv", 4}, {"tokenizer.ggml.bos_token_id", 1}}
	for _, f := range []*File{v3, v1} {
		for _, c := range checks {
			if got, ok := f.Uint(c.key); !ok || got != c.want {
				t.Errorf("v%d %s = %d, %v; want %d", f.Version, c.key, got, ok, c.want)
			}
		}
		if a, _ := f.String("general.architecture"); a != "llama" {
			t.Errorf("v%d architecture %q", f.Version, a)
		}
		if eps, ok := f.Float("llama.attention.layer_norm_rms_epsilon"); !ok || math.Abs(eps-1e-5) > 1e-9 {
			t.Errorf("v%d eps %v %v", f.Version, eps, ok)
		}
		toks, ok := f.Strings("tokenizer.ggml.tokens")
		if !ok || len(toks) != 512 || toks[1] != "<s>" {
			t.Errorf("v%d tokens: %d %v", f.Version, len(toks), ok)
		}
		if tt, ok := f.Int32s("tokenizer.ggml.token_type"); !ok || len(tt) != 512 || tt[0] != 2 {
			t.Errorf("v%d token types wrong", f.Version)
		}
		if sc, ok := f.Float32s("tokenizer.ggml.scores"); !ok || len(sc) != 512 {
			t.Errorf("v%d scores wrong", f.Version)
		}
	}
	if !reflect.DeepEqual(v1.Keys(), v3.Keys()) {
		t.Errorf("keys differ:\n%v\n%v", v1.Keys(), v3.Keys())
	}
	if len(v1.Tensors) != len(v3.Tensors) || len(v3.Tensors) != 48 {
		t.Fatalf("tensor counts %d, %d", len(v1.Tensors), len(v3.Tensors))
	}
	for i := range v3.Tensors {
		a, b := &v3.Tensors[i], &v1.Tensors[i]
		if a.Name != b.Name || !reflect.DeepEqual(a.Shape, b.Shape) || a.Type != b.Type {
			t.Fatalf("tensor %d: %+v vs %+v", i, a, b)
		}
		if !bytes.Equal(v3.TensorData(a), v1.TensorData(b)) {
			t.Errorf("tensor %s: data differs between v1 and v3", a.Name)
		}
	}
}

func sampleWriter(version uint32) *Writer {
	w := NewWriter()
	w.Version = version
	w.Set("general.architecture", "llama")
	w.Set("u8", uint8(7))
	w.Set("i8", int8(-7))
	w.Set("u16", uint16(700))
	w.Set("i16", int16(-700))
	w.Set("u32", uint32(70000))
	w.Set("i32", int32(-70000))
	w.Set("f32", float32(1.5))
	w.Set("b", true)
	w.Set("u64", uint64(1)<<40)
	w.Set("i64", int64(-1)<<40)
	w.Set("f64", 2.25)
	w.Set("strs", []string{"a", "", "ccc"})
	w.Set("i32s", []int32{1, -2, 3})
	w.Set("f32s", []float32{0.5, -1})
	w.Set("u8s", []uint8{1, 2})
	w.Set("u32s", []uint32{4, 5})
	w.Set("bools", []bool{true, false})
	w.Set("general.alignment", uint32(64))
	w.AddTensor("a", F32, []uint64{4, 2}, make([]byte, 32))
	w.AddTensor("b", Q8_0, []uint64{64}, bytes.Repeat([]byte{1}, 68))
	w.AddTensor("c", F16, []uint64{3}, []byte{1, 2, 3, 4, 5, 6})
	return w
}

func TestWriterRoundTrip(t *testing.T) {
	for _, version := range []uint32{1, 2, 3} {
		var buf bytes.Buffer
		if _, err := sampleWriter(version).WriteTo(&buf); err != nil {
			t.Fatalf("v%d: %v", version, err)
		}
		f, err := Parse("mem", buf.Bytes())
		if err != nil {
			t.Fatalf("v%d: %v", version, err)
		}
		if f.Version != version || f.Alignment != 64 || f.DataOffset%64 != 0 {
			t.Errorf("v%d: version %d alignment %d data offset %d", version, f.Version, f.Alignment, f.DataOffset)
		}
		wantVals := map[string]any{"u8": uint8(7), "i8": int8(-7), "u16": uint16(700), "i16": int16(-700),
			"u32": uint32(70000), "i32": int32(-70000), "f32": float32(1.5), "b": true, "u64": uint64(1) << 40,
			"i64": int64(-1) << 40, "f64": 2.25, "strs": []string{"a", "", "ccc"}, "i32s": []int32{1, -2, 3},
			"f32s": []float32{0.5, -1}, "u8s": []uint8{1, 2}, "u32s": []uint32{4, 5}, "bools": []bool{true, false}}
		for k, want := range wantVals {
			if got, _ := f.Value(k); !reflect.DeepEqual(got, want) {
				t.Errorf("v%d %s = %#v, want %#v", version, k, got, want)
			}
		}
		if u, ok := f.Uint("i8"); ok {
			t.Errorf("negative int reported as uint %d", u)
		}
		if i, ok := f.Int("i64"); !ok || i != -1<<40 {
			t.Errorf("Int(i64) = %d %v", i, ok)
		}
		if x, ok := f.Int32s("u32s"); !ok || !reflect.DeepEqual(x, []int32{4, 5}) {
			t.Errorf("Int32s(u32s) = %v %v", x, ok)
		}
		if f.Keys()[0] != "general.architecture" || len(f.Keys()) != 19 {
			t.Errorf("keys %v", f.Keys())
		}
		for _, c := range []struct {
			name string
			size uint64
			typ  GGMLType
		}{{"a", 32, F32}, {"b", 34 * 2, Q8_0}, {"c", 6, F16}} {
			ti, ok := f.Tensor(c.name)
			if !ok || ti.Size != c.size || ti.Type != c.typ || ti.Offset%64 != 0 {
				t.Errorf("v%d tensor %s: %+v", version, c.name, ti)
			}
		}
		c, _ := f.Tensor("c")
		if !bytes.Equal(f.TensorData(c), []byte{1, 2, 3, 4, 5, 6}) {
			t.Errorf("tensor c data %v", f.TensorData(c))
		}
	}
}

func TestWriterErrors(t *testing.T) {
	cases := []struct {
		name  string
		build func(w *Writer)
		want  string
	}{
		{"bad value type", func(w *Writer) { w.Set("x", struct{}{}) }, "unsupported Go type"},
		{"duplicate tensor", func(w *Writer) {
			w.AddTensor("t", F32, []uint64{1}, make([]byte, 4))
			w.AddTensor("t", F32, []uint64{1}, make([]byte, 4))
		}, "duplicate tensor"},
		{"wrong size", func(w *Writer) { w.AddTensor("t", F32, []uint64{2}, make([]byte, 4)) }, "needs 8"},
		{"partial block", func(w *Writer) { w.AddTensor("t", Q4_0, []uint64{16}, make([]byte, 9)) }, "block size"},
	}
	for _, c := range cases {
		w := NewWriter()
		c.build(w)
		_, err := w.WriteTo(&bytes.Buffer{})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err %v, want %q", c.name, err, c.want)
		}
	}
}

func TestParseErrors(t *testing.T) {
	var good bytes.Buffer
	if _, err := sampleWriter(3).WriteTo(&good); err != nil {
		t.Fatal(err)
	}
	g := good.Bytes()
	// A file whose only tensor has type id 99: the type field follows the
	// name, the dimension count and the one dimension.
	uw := NewWriter()
	uw.AddTensor("qqqq", Q4_0, []uint64{32}, make([]byte, 18))
	var ub bytes.Buffer
	if _, err := uw.WriteTo(&ub); err != nil {
		t.Fatal(err)
	}
	unknown := ub.Bytes()
	typePos := bytes.Index(unknown, []byte("qqqq")) + 4 + 4 + 8
	unknown[typePos] = 99
	cases := []struct {
		name string
		data []byte
		want string
	}{
		{"empty", nil, "end of file"},
		{"bad magic", append([]byte("GGUX"), g[4:]...), "not a GGUF file"},
		{"version 4", append(append([]byte("GGUF"), 4, 0, 0, 0), g[8:]...), "unsupported GGUF version 4"},
		{"big endian", append(append([]byte("GGUF"), 0, 0, 0, 3), g[8:]...), "big-endian"},
		{"truncated tensor", g[:len(g)-70], `tensor "c"`},
		{"truncated header", g[:200], "end of file"},
		{"unknown type", unknown, "unknown ggml type 99"},
	}
	for _, c := range cases {
		_, err := Parse("x.gguf", c.data)
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "x.gguf") {
			t.Errorf("%s: err %v, want %q and the file name", c.name, err, c.want)
		}
	}
	// Every prefix of a valid file must fail cleanly (or parse, once all
	// tensor data is present).
	for n := 0; n < len(g); n++ {
		if _, err := Parse("x", g[:n]); err == nil && n < len(g)-64 {
			t.Fatalf("prefix %d of %d parsed without error", n, len(g))
		}
	}
}

func TestOpenErrors(t *testing.T) {
	dir := t.TempDir()
	if _, err := Open(filepath.Join(dir, "missing.gguf")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
	short := filepath.Join(dir, "short.gguf")
	os.WriteFile(short, []byte("GG"), 0o644)
	if _, err := Open(short); err == nil || !strings.Contains(err.Error(), short) {
		t.Errorf("short file: %v", err)
	}
	var buf bytes.Buffer
	sampleWriter(2).WriteTo(&buf)
	trunc := filepath.Join(dir, "trunc.gguf")
	os.WriteFile(trunc, buf.Bytes()[:buf.Len()-100], 0o644)
	if _, err := Open(trunc); err == nil || !strings.Contains(err.Error(), "trunc.gguf") || !strings.Contains(err.Error(), "tensor") {
		t.Errorf("truncated file: %v", err)
	}
	ok := filepath.Join(dir, "ok.gguf")
	if err := sampleWriter(3).WriteFile(ok); err != nil {
		t.Fatal(err)
	}
	f, err := Open(ok)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Errorf("second close: %v", err)
	}
}

func FuzzParse(f *testing.F) {
	for _, v := range []uint32{1, 2, 3} {
		var buf bytes.Buffer
		sampleWriter(v).WriteTo(&buf)
		f.Add(buf.Bytes())
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		file, err := Parse("fuzz", data)
		if err != nil {
			return
		}
		for i := range file.Tensors {
			_ = file.TensorData(&file.Tensors[i])
		}
	})
}
