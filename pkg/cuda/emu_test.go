package cuda

import (
	"fmt"
	"math"
	"os"
	"regexp"
	"sort"
	"strings"
	"testing"
	"unsafe"

	"github.com/lightllm-go/lightllm/pkg/tensor"
)

// emuDevice is a test double of the GPU: device memory is Go byte slices
// and every kernel of kernels.cu is re-implemented in Go from its contract
// (the comment above it), GEMMs in float64. It lets the whole host side of
// the backend — weight upload, scratch layout, batch metadata, the kernel
// and GEMM sequence with its arguments, split-mode offsets — run against
// the CPU engine without a GPU. It checks every launch's argument kinds
// against the kernel's parameter list parsed from kernels.cu.
type emuDevice struct {
	wt, kvt  dtype
	sigs     map[string]string // kernel name -> parameter kinds
	bufs     map[uint64][]byte
	bases    []uint64 // sorted
	next     uint64
	capacity uint64
	used     uint64
	launches map[string]int
}

func newEmu(t testing.TB, wt, kvt dtype) *emuDevice {
	src, err := os.ReadFile("kernels.cu")
	if err != nil {
		t.Fatal(err)
	}
	sigs, err := kernelSignatures(string(src))
	if err != nil {
		t.Fatal(err)
	}
	return &emuDevice{wt: wt, kvt: kvt, sigs: sigs, bufs: map[uint64][]byte{}, next: 1 << 20, capacity: 1 << 30,
		launches: map[string]int{}}
}

// kernelSignatures maps each extern "C" kernel of src to its parameter
// kinds ('p' pointer, 'l' long long, 'i' int, 'f' float), expanding the
// instantiation macros.
func kernelSignatures(src string) (map[string]string, error) {
	src = strings.ReplaceAll(src, "\\\n", " ")
	kernelRe := regexp.MustCompile(`extern "C" __global__ void (\w+)\(([^)]*)\)`)
	defineRe := regexp.MustCompile(`(?m)^#define (\w+)\(NAME[^)]*\)(.*)$`)
	kinds := func(params string) (string, error) {
		var b strings.Builder
		for _, p := range strings.Split(params, ",") {
			p = strings.TrimSpace(p)
			switch {
			case strings.Contains(p, "*"):
				b.WriteByte('p')
			case strings.HasPrefix(p, "i64 "):
				b.WriteByte('l')
			case strings.HasPrefix(p, "int "):
				b.WriteByte('i')
			case strings.HasPrefix(p, "float "):
				b.WriteByte('f')
			default:
				return "", fmt.Errorf("parameter %q of unknown kind", p)
			}
		}
		return b.String(), nil
	}
	sigs := map[string]string{}
	macros := map[string]string{}
	for _, m := range defineRe.FindAllStringSubmatch(src, -1) {
		k := kernelRe.FindStringSubmatch(m[2])
		if k == nil || k[1] != "NAME" {
			return nil, fmt.Errorf("macro %s defines no kernel named NAME", m[1])
		}
		macros[m[1]] = k[2]
	}
	for _, k := range kernelRe.FindAllStringSubmatch(src, -1) {
		if k[1] == "NAME" {
			continue // a macro's template, expanded below
		}
		s, err := kinds(k[2])
		if err != nil {
			return nil, fmt.Errorf("kernel %s: %w", k[1], err)
		}
		sigs[k[1]] = s
	}
	for _, line := range strings.Split(src, "\n") {
		if i := strings.IndexByte(line, '('); i > 0 {
			if params, ok := macros[line[:i]]; ok {
				name := strings.TrimSpace(strings.SplitN(line[i+1:], ",", 2)[0])
				s, err := kinds(params)
				if err != nil {
					return nil, fmt.Errorf("kernel %s: %w", name, err)
				}
				sigs[name] = s
			}
		}
	}
	return sigs, nil
}

func (e *emuDevice) alloc(n int64, what string) (uint64, error) {
	n = max(n, 1)
	if e.used+uint64(n) > e.capacity {
		return 0, fmt.Errorf("emu: out of memory allocating %s (%d bytes)", what, n)
	}
	p := e.next
	e.bufs[p] = make([]byte, n)
	e.bases = append(e.bases, p)
	e.next += (uint64(n) + 4095) &^ 4095
	e.used += uint64(n)
	return p, nil
}

func (e *emuDevice) free(p uint64) {
	b, ok := e.bufs[p]
	if !ok {
		return
	}
	e.used -= uint64(len(b))
	delete(e.bufs, p)
	i := sort.Search(len(e.bases), func(i int) bool { return e.bases[i] >= p })
	e.bases = append(e.bases[:i], e.bases[i+1:]...)
}

// mem returns the n bytes at device address p, which must lie inside one
// live allocation.
func (e *emuDevice) mem(p uint64, n int) []byte {
	i := sort.Search(len(e.bases), func(i int) bool { return e.bases[i] > p }) - 1
	if i < 0 || p == 0 {
		panic(fmt.Sprintf("emu: address %#x is not device memory", p))
	}
	b := e.bufs[e.bases[i]]
	off := int(p - e.bases[i])
	if off+n > len(b) {
		panic(fmt.Sprintf("emu: %d bytes at %#x overrun an allocation of %d (offset %d)", n, p, len(b), off))
	}
	return b[off : off+n]
}

func (e *emuDevice) f32(p uint64, n int) []float32 {
	if n == 0 {
		return nil
	}
	return unsafe.Slice((*float32)(unsafe.Pointer(&e.mem(p, 4*n)[0])), n)
}

func (e *emuDevice) i32(p uint64, n int) []int32 {
	if n == 0 {
		return nil
	}
	return unsafe.Slice((*int32)(unsafe.Pointer(&e.mem(p, 4*n)[0])), n)
}

// ld and st read and write element i of an array of type dt at p.
func (e *emuDevice) ld(dt dtype, p uint64, i int64) float32 {
	b := e.mem(p+uint64(i)*uint64(dt.size()), dt.size())
	switch dt {
	case dtF16:
		return tensor.F16ToF32(uint16(b[0]) | uint16(b[1])<<8)
	case dtBF16:
		return tensor.BF16ToF32(uint16(b[0]) | uint16(b[1])<<8)
	}
	return math.Float32frombits(uint32(b[0]) | uint32(b[1])<<8 | uint32(b[2])<<16 | uint32(b[3])<<24)
}

func (e *emuDevice) st(dt dtype, p uint64, i int64, v float32) {
	b := e.mem(p+uint64(i)*uint64(dt.size()), dt.size())
	switch dt {
	case dtF16, dtBF16:
		h := tensor.F32ToF16(v)
		if dt == dtBF16 {
			h = tensor.F32ToBF16(v)
		}
		b[0], b[1] = byte(h), byte(h>>8)
	default:
		u := math.Float32bits(v)
		b[0], b[1], b[2], b[3] = byte(u), byte(u>>8), byte(u>>16), byte(u>>24)
	}
}

// all decodes n elements of type dt at p in one go.
func (e *emuDevice) all(dt dtype, p uint64, n int) []float32 {
	out := make([]float32, n)
	if dt == dtF32 {
		copy(out, e.f32(p, n))
		return out
	}
	b := e.mem(p, 2*n)
	for i := range out {
		h := uint16(b[2*i]) | uint16(b[2*i+1])<<8
		if dt == dtF16 {
			out[i] = tensor.F16ToF32(h)
		} else {
			out[i] = tensor.BF16ToF32(h)
		}
	}
	return out
}

func rnd(dt dtype, v float32) float32 {
	switch dt {
	case dtF16:
		return tensor.F16ToF32(tensor.F32ToF16(v))
	case dtBF16:
		return tensor.BF16ToF32(tensor.F32ToBF16(v))
	}
	return v
}

// stAct is kernels.cu's st_act: the value, and in split mode its rounding
// remainder lo elements further.
func (e *emuDevice) stAct(dt dtype, p uint64, i, lo int64, v float32) {
	e.st(dt, p, i, v)
	if lo != 0 {
		e.st(dt, p, i+lo, v-rnd(dt, v))
	}
}

// gv is kernels.cu's gv: a GEMM output plus its remainder row in split mode.
func (e *emuDevice) gv(p uint64, i, lo int64) float32 {
	v := e.ld(dtF32, p, i)
	if lo != 0 {
		v += e.ld(dtF32, p, i+lo)
	}
	return v
}

func (e *emuDevice) write(dst uint64, src []byte) error {
	copy(e.mem(dst, len(src)), src)
	return nil
}

func (e *emuDevice) upload(dst uint64, src []int32) error {
	copy(e.i32(dst, len(src)), src)
	return nil
}

func (e *emuDevice) zero(p uint64, n int64) error {
	clear(e.mem(p, int(n)))
	return nil
}

func (e *emuDevice) gemm(wt dtype, W uint64, out, in int, X uint64, rows int, Y uint64) error {
	if wt != e.wt {
		return fmt.Errorf("emu: gemm in %v on a %v model", wt, e.wt)
	}
	y := e.f32(Y, rows*out)
	x, w := e.all(wt, X, rows*in), e.all(wt, W, out*in)
	for r := 0; r < rows; r++ {
		xr := x[r*in : (r+1)*in]
		for o := 0; o < out; o++ {
			var s float64
			for i, wv := range w[o*in : (o+1)*in] {
				s += float64(xr[i]) * float64(wv)
			}
			y[r*out+o] = float32(s)
		}
	}
	return nil
}

func (e *emuDevice) readF32(dst []float32, src uint64) error {
	copy(dst, e.f32(src, len(dst)))
	return nil
}

func (e *emuDevice) readI32(dst []int32, src uint64) error {
	copy(dst, e.i32(src, len(dst)))
	return nil
}

func (e *emuDevice) sync() error { return nil }

func (e *emuDevice) memInfo() (free, total uint64, err error) {
	return e.capacity - e.used, e.capacity, nil
}

// launch checks the arguments against the kernel's parameters and runs its
// Go re-implementation.
func (e *emuDevice) launch(k kernel, gx, gy, block, smem int, a *kargs) (err error) {
	name := kernelName(k, e.wt, e.kvt)
	sig, ok := e.sigs[name]
	if !ok {
		return fmt.Errorf("emu: kernels.cu has no kernel %s", name)
	}
	if string(a.types) != sig {
		return fmt.Errorf("emu: %s launched with arguments %q, kernel takes %q", name, a.types, sig)
	}
	if block <= 0 || block > 1024 || block%32 != 0 || smem < 0 {
		return fmt.Errorf("emu: %s: block %d, shared memory %d", name, block, smem)
	}
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("emu: %s: %v", name, r)
		}
	}()
	e.launches[name]++
	v := a.v
	P := func(i int) uint64 { return v[i] }
	I := func(i int) int { return int(int32(uint32(v[i]))) }
	L := func(i int) int64 { return int64(v[i]) }
	F := func(i int) float32 { return math.Float32frombits(uint32(v[i])) }
	switch k {
	case kEmbed:
		e.embed(gx, P(0), P(1), P(2), I(3))
	case kRopeTable:
		e.ropeTable(P(0), P(1), P(2), I(3), I(4), F(5), F(6), P(7))
	case kNorm:
		e.norm(gx, P(0), P(1), L(2), P(3), P(4), L(5), P(6), I(7), F(8))
	case kQKVPost:
		e.qkvPost(gx, P(0), L(1), P(2), P(3), P(4), P(5), P(6), P(7), P(8), P(9), L(10), I(11), I(12), I(13), I(14), F(15))
	case kAttn:
		if need := attnSharedBytes(I(11), e.kvt, block/32); smem < need {
			return fmt.Errorf("emu: attention given %d bytes of shared memory, needs %d", smem, need)
		}
		e.attention(gx, gy, block/32, P(0), L(1), P(2), P(3), P(4), L(5), P(6), P(7), P(8), I(9), I(10), I(11), I(12), F(13))
	case kSwiGLU:
		e.swiglu(P(0), L(1), P(2), L(3), I(4), L(5))
	case kFold:
		a, lo := e.f32(P(0), int(2*L(2))), L(1)
		for i := int64(0); i < L(2); i++ {
			a[i] += a[i+lo]
		}
	case kArgmax:
		e.argmax(gx, P(0), P(1), I(2))
	default:
		return fmt.Errorf("emu: no emulation of %s", name)
	}
	return nil
}
