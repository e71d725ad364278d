package config

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"os"
)

// A minimal reader of GGUF (v1–v3) metadata: it walks the key/value section
// and keeps the handful of scalars the configuration needs, skipping the rest
// (tokenizer arrays included) without allocating them. pkg/gguf is the full
// reader; this one exists so config does not depend on the model loaders.

const (
	ggufMagic       = 0x46554747 // "GGUF" little-endian
	ggufMaxKV       = 1 << 20
	ggufMaxString   = 1 << 24
	ggufMaxArrayLen = 1 << 32
)

// GGUF value types.
const (
	gU8 = iota
	gI8
	gU16
	gI16
	gU32
	gI32
	gF32
	gBool
	gString
	gArray
	gU64
	gI64
	gF64
)

var ggufScalarSize = map[uint32]int64{gU8: 1, gI8: 1, gU16: 2, gI16: 2, gU32: 4, gI32: 4, gF32: 4, gBool: 1, gU64: 8, gI64: 8, gF64: 8}

type ggufReader struct {
	r       *bufio.Reader
	version uint32
	path    string
}

func readGGUFInfo(path string) (*ModelInfo, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("model %s: %w", path, err)
	}
	defer f.Close()
	kv, err := readGGUFMetadata(f, path)
	if err != nil {
		return nil, err
	}
	arch, _ := kv["general.architecture"].(string)
	if arch == "" {
		return nil, fmt.Errorf("model %s: GGUF has no general.architecture", path)
	}
	num := func(key string) int {
		n, _ := ggufInt(kv[key])
		return n
	}
	info := &ModelInfo{
		Format:        FormatGGUF,
		Path:          path,
		Arch:          arch,
		ContextLength: num(arch + ".context_length"),
		NumLayers:     num(arch + ".block_count"),
		NumHeads:      num(arch + ".attention.head_count"),
		NumKVHeads:    num(arch + ".attention.head_count_kv"),
		HeadDim:       num(arch + ".attention.key_length"),
		HiddenSize:    num(arch + ".embedding_length"),
	}
	if id, ok := ggufInt(kv["tokenizer.ggml.eos_token_id"]); ok {
		info.EOS = []int{id}
	}
	if ft, ok := ggufInt(kv["general.file_type"]); ok {
		switch ft { // llama.cpp's LLAMA_FTYPE_*; quantized types leave it to the engine
		case 0:
			info.DType = "fp32"
		case 1:
			info.DType = "fp16"
		case 32:
			info.DType = "bf16"
		}
	}
	return info, nil
}

// readGGUFMetadata returns the scalar (number, bool, string) metadata values.
func readGGUFMetadata(r io.Reader, path string) (map[string]any, error) {
	g := &ggufReader{r: bufio.NewReaderSize(r, 1<<16), path: path}
	var hdr [8]byte
	if _, err := io.ReadFull(g.r, hdr[:]); err != nil {
		return nil, g.errf("read header: %w", err)
	}
	if binary.LittleEndian.Uint32(hdr[:4]) != ggufMagic {
		return nil, g.errf("not a GGUF file (magic %q)", hdr[:4])
	}
	g.version = binary.LittleEndian.Uint32(hdr[4:])
	if g.version < 1 || g.version > 3 {
		return nil, g.errf("unsupported GGUF version %d (big-endian files are not supported)", g.version)
	}
	if _, err := g.count(); err != nil { // tensor count
		return nil, err
	}
	n, err := g.count()
	if err != nil {
		return nil, err
	}
	if n > ggufMaxKV {
		return nil, g.errf("implausible metadata count %d", n)
	}
	out := make(map[string]any)
	for i := uint64(0); i < n; i++ {
		key, err := g.str()
		if err != nil {
			return nil, g.errf("metadata %d key: %w", i, err)
		}
		typ, err := g.u32()
		if err != nil {
			return nil, g.errf("metadata %s type: %w", key, err)
		}
		v, err := g.value(typ)
		if err != nil {
			return nil, g.errf("metadata %s: %w", key, err)
		}
		if v != nil {
			out[key] = v
		}
	}
	return out, nil
}

func (g *ggufReader) errf(format string, a ...any) error {
	return fmt.Errorf("model %s: "+format, append([]any{g.path}, a...)...)
}

func (g *ggufReader) u32() (uint32, error) {
	var b [4]byte
	if _, err := io.ReadFull(g.r, b[:]); err != nil {
		return 0, err
	}
	return binary.LittleEndian.Uint32(b[:]), nil
}

func (g *ggufReader) u64() (uint64, error) {
	var b [8]byte
	if _, err := io.ReadFull(g.r, b[:]); err != nil {
		return 0, err
	}
	return binary.LittleEndian.Uint64(b[:]), nil
}

// count reads a length/count field: 32-bit in GGUF v1, 64-bit after.
func (g *ggufReader) count() (uint64, error) {
	if g.version == 1 {
		v, err := g.u32()
		return uint64(v), err
	}
	return g.u64()
}

func (g *ggufReader) str() (string, error) {
	n, err := g.count()
	if err != nil {
		return "", err
	}
	if n > ggufMaxString {
		return "", fmt.Errorf("string length %d too large", n)
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(g.r, b); err != nil {
		return "", err
	}
	return string(b), nil
}

func (g *ggufReader) skip(n int64) error {
	_, err := g.r.Discard(int(n))
	return err
}

// value reads one value; arrays are skipped and returned as nil.
func (g *ggufReader) value(typ uint32) (any, error) {
	switch typ {
	case gString:
		return g.str()
	case gArray:
		et, err := g.u32()
		if err != nil {
			return nil, err
		}
		n, err := g.count()
		if err != nil {
			return nil, err
		}
		if n > ggufMaxArrayLen {
			return nil, fmt.Errorf("array length %d too large", n)
		}
		return nil, g.skipArray(et, n, 0)
	}
	size, ok := ggufScalarSize[typ]
	if !ok {
		return nil, fmt.Errorf("unknown value type %d", typ)
	}
	var b [8]byte
	if _, err := io.ReadFull(g.r, b[:size]); err != nil {
		return nil, err
	}
	le := binary.LittleEndian
	switch typ {
	case gU8:
		return int64(b[0]), nil
	case gI8:
		return int64(int8(b[0])), nil
	case gU16:
		return int64(le.Uint16(b[:])), nil
	case gI16:
		return int64(int16(le.Uint16(b[:]))), nil
	case gU32:
		return int64(le.Uint32(b[:])), nil
	case gI32:
		return int64(int32(le.Uint32(b[:]))), nil
	case gF32:
		return float64(math.Float32frombits(le.Uint32(b[:]))), nil
	case gBool:
		return b[0] != 0, nil
	case gU64:
		return le.Uint64(b[:]), nil
	case gI64:
		return int64(le.Uint64(b[:])), nil
	default: // gF64
		return math.Float64frombits(le.Uint64(b[:])), nil
	}
}

func (g *ggufReader) skipArray(et uint32, n uint64, depth int) error {
	if depth > 8 {
		return fmt.Errorf("arrays nested too deeply")
	}
	if size, ok := ggufScalarSize[et]; ok {
		return g.skip(size * int64(n))
	}
	for i := uint64(0); i < n; i++ {
		switch et {
		case gString:
			l, err := g.count()
			if err != nil {
				return err
			}
			if l > ggufMaxString {
				return fmt.Errorf("string length %d too large", l)
			}
			if err := g.skip(int64(l)); err != nil {
				return err
			}
		case gArray:
			sub, err := g.u32()
			if err != nil {
				return err
			}
			m, err := g.count()
			if err != nil {
				return err
			}
			if m > ggufMaxArrayLen {
				return fmt.Errorf("array length %d too large", m)
			}
			if err := g.skipArray(sub, m, depth+1); err != nil {
				return err
			}
		default:
			return fmt.Errorf("unknown array element type %d", et)
		}
	}
	return nil
}

func ggufInt(v any) (int, bool) {
	switch x := v.(type) {
	case int64:
		return int(x), true
	case uint64:
		if x > math.MaxInt32 {
			return 0, false
		}
		return int(x), true
	}
	return 0, false
}
