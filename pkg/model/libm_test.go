package model

import (
	"bufio"
	"fmt"
	"math"
	"os"
	"strings"
	"testing"

	"github.com/lightllm-go/lightllm/pkg/tensor"
)

// TestGlibcLibm checks the ports of glibc's expf and sincosf against values
// the C library produced (testdata/glibc_libm.txt: 600 arguments, most of
// them ones where rounding a float64 exp/sin/cos to float32 gives a
// different answer than glibc).
func TestGlibcLibm(t *testing.T) {
	f, err := os.Open("testdata/glibc_libm.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	n := 0
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "#") || line == "" {
			continue
		}
		var xb, eb, sb, cb uint32
		if _, err := fmt.Sscanf(line, "%x %x %x %x", &xb, &eb, &sb, &cb); err != nil {
			t.Fatalf("%q: %v", line, err)
		}
		x := math.Float32frombits(xb)
		if got := math.Float32bits(tensor.Expf(x)); got != eb && !(isNaN32(eb) && isNaN32(got)) {
			t.Errorf("tensor.Expf(%x) = %08x, glibc %08x", x, got, eb)
		}
		s, c := sincosf(x)
		if math.Float32bits(s) != sb || math.Float32bits(c) != cb {
			if !(isNaN32(sb) && s != s) {
				t.Errorf("sincosf(%x) = %08x %08x, glibc %08x %08x", x, math.Float32bits(s), math.Float32bits(c), sb, cb)
			}
		}
		n++
	}
	if n < 600 {
		t.Fatalf("only %d values", n)
	}
	// Special cases of expf's range checks.
	for _, c := range []struct{ x, want float32 }{
		{float32(math.Inf(-1)), 0}, {float32(math.Inf(1)), float32(math.Inf(1))}, {89, float32(math.Inf(1))},
		{-104, 0}, {-103.5, 0x1p-149}, {0, 1},
	} {
		if got := tensor.Expf(c.x); got != c.want {
			t.Errorf("tensor.Expf(%g) = %g, want %g", c.x, got, c.want)
		}
	}
}

func isNaN32(b uint32) bool { return b&0x7f800000 == 0x7f800000 && b&0x7fffff != 0 }
