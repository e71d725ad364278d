// Package gguf reads and writes GGUF files (versions 1, 2 and 3), the
// llama.cpp model format: a header of typed key/value metadata, a table of
// tensor descriptions and an aligned blob of tensor data. Files are mmap'd so
// tensor data is never copied.
package gguf

import "fmt"

// ValueType is the type tag of a metadata value.
type ValueType uint32

// Metadata value types, as numbered by the GGUF specification.
const (
	TypeUint8   ValueType = 0
	TypeInt8    ValueType = 1
	TypeUint16  ValueType = 2
	TypeInt16   ValueType = 3
	TypeUint32  ValueType = 4
	TypeInt32   ValueType = 5
	TypeFloat32 ValueType = 6
	TypeBool    ValueType = 7
	TypeString  ValueType = 8
	TypeArray   ValueType = 9
	TypeUint64  ValueType = 10
	TypeInt64   ValueType = 11
	TypeFloat64 ValueType = 12
)

var valueTypeNames = [...]string{"uint8", "int8", "uint16", "int16", "uint32", "int32", "float32",
	"bool", "string", "array", "uint64", "int64", "float64"}

func (t ValueType) String() string {
	if int(t) < len(valueTypeNames) {
		return valueTypeNames[t]
	}
	return fmt.Sprintf("ValueType(%d)", uint32(t))
}

// fixedSize is the encoded size of a scalar value type (0 for string/array).
func (t ValueType) fixedSize() int {
	switch t {
	case TypeUint8, TypeInt8, TypeBool:
		return 1
	case TypeUint16, TypeInt16:
		return 2
	case TypeUint32, TypeInt32, TypeFloat32:
		return 4
	case TypeUint64, TypeInt64, TypeFloat64:
		return 8
	}
	return 0
}

// GGMLType is the element type of a tensor (ggml_type in ggml.h).
type GGMLType uint32

// The ggml tensor types. Only a few are computed on by this project, but
// all are known so that any file's layout can be validated.
const (
	F32     GGMLType = 0
	F16     GGMLType = 1
	Q4_0    GGMLType = 2
	Q4_1    GGMLType = 3
	Q5_0    GGMLType = 6
	Q5_1    GGMLType = 7
	Q8_0    GGMLType = 8
	Q8_1    GGMLType = 9
	Q2_K    GGMLType = 10
	Q3_K    GGMLType = 11
	Q4_K    GGMLType = 12
	Q5_K    GGMLType = 13
	Q6_K    GGMLType = 14
	Q8_K    GGMLType = 15
	IQ2_XXS GGMLType = 16
	IQ2_XS  GGMLType = 17
	IQ3_XXS GGMLType = 18
	IQ1_S   GGMLType = 19
	IQ4_NL  GGMLType = 20
	IQ3_S   GGMLType = 21
	IQ2_S   GGMLType = 22
	IQ4_XS  GGMLType = 23
	I8      GGMLType = 24
	I16     GGMLType = 25
	I32     GGMLType = 26
	I64     GGMLType = 27
	F64     GGMLType = 28
	IQ1_M   GGMLType = 29
	BF16    GGMLType = 30
	TQ1_0   GGMLType = 34
	TQ2_0   GGMLType = 35
	MXFP4   GGMLType = 39
)

type typeTraits struct {
	name      string
	blockSize uint64 // elements per block
	typeSize  uint64 // bytes per block
}

var ggmlTraits = map[GGMLType]typeTraits{
	F32: {"f32", 1, 4}, F16: {"f16", 1, 2}, Q4_0: {"q4_0", 32, 18}, Q4_1: {"q4_1", 32, 20},
	Q5_0: {"q5_0", 32, 22}, Q5_1: {"q5_1", 32, 24}, Q8_0: {"q8_0", 32, 34}, Q8_1: {"q8_1", 32, 36},
	Q2_K: {"q2_K", 256, 84}, Q3_K: {"q3_K", 256, 110}, Q4_K: {"q4_K", 256, 144}, Q5_K: {"q5_K", 256, 176},
	Q6_K: {"q6_K", 256, 210}, Q8_K: {"q8_K", 256, 292}, IQ2_XXS: {"iq2_xxs", 256, 66},
	IQ2_XS: {"iq2_xs", 256, 74}, IQ3_XXS: {"iq3_xxs", 256, 98}, IQ1_S: {"iq1_s", 256, 50},
	IQ4_NL: {"iq4_nl", 32, 18}, IQ3_S: {"iq3_s", 256, 110}, IQ2_S: {"iq2_s", 256, 82},
	IQ4_XS: {"iq4_xs", 256, 136}, I8: {"i8", 1, 1}, I16: {"i16", 1, 2}, I32: {"i32", 1, 4},
	I64: {"i64", 1, 8}, F64: {"f64", 1, 8}, IQ1_M: {"iq1_m", 256, 56}, BF16: {"bf16", 1, 2},
	TQ1_0: {"tq1_0", 256, 54}, TQ2_0: {"tq2_0", 256, 66}, MXFP4: {"mxfp4", 32, 17},
}

func (t GGMLType) String() string {
	if tr, ok := ggmlTraits[t]; ok {
		return tr.name
	}
	return fmt.Sprintf("ggml_type(%d)", uint32(t))
}

// Known reports whether t is a ggml type this package knows the layout of.
func (t GGMLType) Known() bool { _, ok := ggmlTraits[t]; return ok }

// BlockSize is the number of elements per block (1 for plain types).
func (t GGMLType) BlockSize() uint64 { return ggmlTraits[t].blockSize }

// TypeSize is the number of bytes per block.
func (t GGMLType) TypeSize() uint64 { return ggmlTraits[t].typeSize }

// RowBytes is the byte size of n elements of type t, or an error when n is
// not a whole number of blocks.
func (t GGMLType) RowBytes(n uint64) (uint64, error) {
	tr, ok := ggmlTraits[t]
	if !ok {
		return 0, fmt.Errorf("unknown ggml type %d", uint32(t))
	}
	if n%tr.blockSize != 0 {
		return 0, fmt.Errorf("%d elements of %s is not a multiple of the block size %d", n, tr.name, tr.blockSize)
	}
	return n / tr.blockSize * tr.typeSize, nil
}
