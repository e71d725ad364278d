package tensor

import (
	"bytes"
	"math/rand/v2"
	"testing"
	"unsafe"
)

func TestWeightArena(t *testing.T) {
	a := NewWeightArena()
	if a == nil {
		t.Skip("no transparent huge pages here")
	}
	defer a.Close()
	r := rand.New(rand.NewPCG(5, 6))
	var kept [][2][]byte
	for _, n := range []int{1, 63, 64, 4097, 3 << 20, arenaChunk + 5} {
		src := make([]byte, n)
		seed := byte(r.Uint32())
		for i := range src {
			src[i] = byte(i*7) ^ seed
		}
		dst := a.Copy(src, false)
		if uintptr(unsafe.Pointer(&dst[0]))%64 != 0 {
			t.Errorf("copy of %d bytes not 64-byte aligned", n)
		}
		if &dst[0] == &src[0] || !bytes.Equal(dst, src) {
			t.Fatalf("copy of %d bytes: not a separate equal copy", n)
		}
		if cap(dst) != n {
			t.Errorf("copy of %d bytes has capacity %d: appending would write into the next copy", n, cap(dst))
		}
		kept = append(kept, [2][]byte{src, dst})
	}
	for _, k := range kept { // later copies did not overwrite earlier ones
		if !bytes.Equal(k[0], k[1]) {
			t.Fatalf("a copy of %d bytes changed", len(k[0]))
		}
	}
	var nilArena *WeightArena
	if b := []byte{1, 2}; &nilArena.Copy(b, false)[0] != &b[0] || nilArena.Alloc(8) != nil {
		t.Error("a nil arena must hand data back unchanged and allocate nothing")
	}
}

// TestDotQ8x2MatchesDotQ8: the two-chain kernel gives each row dotQ8's bits.
func TestDotQ8x2MatchesDotQ8(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for _, cols := range []int{32, 256, 2048, 5632} {
		w, _ := randMatrix(t, r, Q8_0, 6, cols)
		x := randVec(r, cols, 1)
		xq := make([]int8, cols)
		xd := make([]float32, cols/QK)
		QuantizeActQ8(x, xq, xd)
		rb := w.rowBytes
		var out [2]float32
		for _, pair := range [][2]int{{0, 1}, {0, 5}, {2, 3}} {
			dotQ8x2(w.Data[pair[0]*rb:], (pair[1]-pair[0])*rb, xq, xd, &out)
			for k, row := range pair {
				if want := dotQ8(w.Row(row), xq, xd); out[k] != want {
					t.Fatalf("cols %d rows %v: row %d = %v, dotQ8 %v", cols, pair, row, out[k], want)
				}
			}
		}
	}
}
