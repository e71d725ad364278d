package model

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"strings"
	"testing"
)

func TestTmpLibm(t *testing.T) {
	b, err := os.ReadFile("/tmp/llh/libm.bin")
	if err != nil {
		t.Skip(err)
	}
	badE, badS, n, oldE, oldS := 0, 0, 0, 0, 0
	for o := 0; o+16 <= len(b); o += 16 {
		x := math.Float32frombits(binary.LittleEndian.Uint32(b[o:]))
		e := math.Float32frombits(binary.LittleEndian.Uint32(b[o+4:]))
		s := math.Float32frombits(binary.LittleEndian.Uint32(b[o+8:]))
		c := math.Float32frombits(binary.LittleEndian.Uint32(b[o+12:]))
		n++
		ge := expf(x)
		if math.Float32bits(ge) != math.Float32bits(e) && !(e != e && ge != ge) {
			if badE < 5 {
				t.Logf("expf(%x) = %x want %x", x, ge, e)
			}
			badE++
		}
		gs, gc := sincosf(x)
		if (math.Float32bits(gs) != math.Float32bits(s) || math.Float32bits(gc) != math.Float32bits(c)) && !(s != s && gs != gs) {
			if badS < 5 {
				t.Logf("sincosf(%x) = %x %x want %x %x", x, gs, gc, s, c)
			}
			badS++
		}
		if float32(math.Exp(float64(x))) != e && e == e && !math.IsInf(float64(e), 0) {
			oldE++
		}
		if float32(math.Sin(float64(x))) != s || float32(math.Cos(float64(x))) != c {
			oldS++
		}
	}
	t.Logf("%d values: expf bad %d, sincosf bad %d; float64-rounded exp differs %d, sin/cos %d", n, badE, badS, oldE, oldS)
	f, _ := os.Open("/tmp/llh/powf.txt")
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var base, ts float64
		var d int
		fmt.Sscanf(strings.ReplaceAll(sc.Text(), "0x", "0x"), "%v %d %v", &base, &d, &ts)
		g := float32(math.Pow(float64(float32(base)), float64(float32(-2)/float32(d))))
		if g != float32(ts) {
			t.Logf("powf(%v, -2/%d): go %x glibc %x", base, d, g, float32(ts))
		}
	}
}
