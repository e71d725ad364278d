package safetensors

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"github.com/lightllm-go/lightllm/pkg/testmodels"
	"io"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func f32bytes(v ...float32) []byte {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	return b
}

func sampleTensors() []WriteTensor {
	return []WriteTensor{
		{Name: "a.weight", DType: F32, Shape: []int64{2, 3}, Data: f32bytes(1, 2, 3, 4, 5, 6)},
		{Name: "b.weight", DType: F16, Shape: []int64{2}, Data: []byte{0, 0x3c, 0, 0xc0}},
		{Name: "c.weight", DType: BF16, Shape: []int64{1, 1}, Fill: func(w io.Writer) error {
			_, err := w.Write([]byte{0x80, 0x3f})
			return err
		}},
	}
}

func TestSingleFileRoundTrip(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "model.safetensors")
	if err := WriteFile(p, sampleTensors(), map[string]string{"format": "pt"}); err != nil {
		t.Fatal(err)
	}
	s, err := OpenDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if got := s.Names(); !reflect.DeepEqual(got, []string{"a.weight", "b.weight", "c.weight"}) {
		t.Errorf("names %v", got)
	}
	for _, w := range sampleTensors() {
		info, data, f, ok := s.Tensor(w.Name)
		want := w.Data
		if w.Fill != nil {
			var buf bytes.Buffer
			w.Fill(&buf)
			want = buf.Bytes()
		}
		if !ok || info.DType != w.DType || !reflect.DeepEqual(info.Shape, w.Shape) || !bytes.Equal(data, want) {
			t.Errorf("tensor %s: %+v %v", w.Name, info, data)
		}
		if f.Metadata["format"] != "pt" {
			t.Errorf("metadata %v", f.Metadata)
		}
	}
}

func TestShardedRoundTrip(t *testing.T) {
	dir := t.TempDir()
	if err := WriteSharded(dir, sampleTensors(), 8); err != nil {
		t.Fatal(err)
	}
	s, err := OpenDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if len(s.Files) != 2 {
		t.Errorf("%d shards, want 2", len(s.Files))
	}
	for _, w := range sampleTensors()[:2] {
		if _, data, _, ok := s.Tensor(w.Name); !ok || !bytes.Equal(data, w.Data) {
			t.Errorf("tensor %s missing or wrong", w.Name)
		}
	}
}

func TestErrors(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.safetensors")
	if err := WriteFile(good, sampleTensors(), nil); err != nil {
		t.Fatal(err)
	}
	g, _ := os.ReadFile(good)
	hlen := binary.LittleEndian.Uint64(g)
	header := string(g[8 : 8+hlen])
	withHeader := func(h string) []byte {
		b := make([]byte, 8, 8+len(h)+len(g))
		binary.LittleEndian.PutUint64(b, uint64(len(h)))
		return append(append(b, h...), g[8+hlen:]...)
	}
	cases := []struct {
		name string
		data []byte
		want string
	}{
		{"tiny", []byte{1, 2}, "too short"},
		{"huge header", append([]byte{0xff, 0xff, 0, 0, 0, 0, 0, 0}, g[8:]...), "header length"},
		{"bad json", withHeader("{not json"), "header JSON"},
		{"truncated tensor", g[:len(g)-1], `tensor "c.weight"`},
		{"unknown dtype", withHeader(strings.Replace(header, `"BF16"`, `"Q9"`, 1)), `tensor "c.weight": unknown dtype "Q9"`},
		{"offset mismatch", withHeader(strings.Replace(header, `"shape":[2,3]`, `"shape":[2,4]`, 1)), `tensor "a.weight"`},
	}
	for _, c := range cases {
		p := filepath.Join(dir, "x.safetensors")
		os.WriteFile(p, c.data, 0o644)
		_, err := Open(p)
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), p) {
			t.Errorf("%s: err %v, want %q and the path", c.name, err, c.want)
		}
	}
	if _, err := OpenDir(filepath.Join(dir, "nope")); err == nil {
		t.Error("missing dir: no error")
	}
	// An index naming a tensor that its shard lacks.
	sh := t.TempDir()
	WriteSharded(sh, sampleTensors(), 1<<20)
	os.WriteFile(filepath.Join(sh, IndexName), []byte(`{"weight_map":{"zzz":"model-00001-of-00001.safetensors"}}`), 0o644)
	if _, err := OpenDir(sh); err == nil || !strings.Contains(err.Error(), `"zzz"`) {
		t.Errorf("bad index: %v", err)
	}
}

func TestStories260KHF(t *testing.T) {
	dir := os.Getenv("LIGHTLLM_TEST_MODELS")
	if dir == "" {
		dir = "../../../shared/models"
	}
	hf := filepath.Join(dir, "stories260K", "hf")
	if _, err := os.Stat(hf); err != nil {
		testmodels.Missing(t, fmt.Sprintf("shared models not found at %s (set LIGHTLLM_TEST_MODELS)", hf), nil)
	}
	s, err := OpenDir(hf)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	info, _, _, ok := s.Tensor("model.layers.0.self_attn.k_proj.weight")
	if !ok || info.DType != F32 || !reflect.DeepEqual(info.Shape, []int64{32, 64}) {
		t.Errorf("k_proj: %+v", info)
	}
}

func FuzzParse(f *testing.F) {
	dir := f.TempDir()
	p := filepath.Join(dir, "seed.safetensors")
	if err := WriteFile(p, sampleTensors(), map[string]string{"format": "pt"}); err != nil {
		f.Fatal(err)
	}
	seed, _ := os.ReadFile(p)
	f.Add(seed)
	f.Fuzz(func(t *testing.T, data []byte) {
		file, err := Parse("fuzz", data)
		if err != nil {
			return
		}
		for i := range file.Tensors {
			if got := file.TensorData(&file.Tensors[i]); uint64(len(got)) != file.Tensors[i].Size {
				t.Fatalf("tensor %s: %d bytes, size %d", file.Tensors[i].Name, len(got), file.Tensors[i].Size)
			}
		}
	})
}
