package tensor

import (
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

func zzMats(b testing.TB, dt DType, rows, cols int, data []byte) []*Matrix {
	rb, _ := dt.RowBytes(cols)
	n := len(data) / (rows * rb)
	ws := make([]*Matrix, n)
	for i := range ws {
		ws[i], _ = NewMatrix(dt, rows, cols, data[i*rows*rb:(i+1)*rows*rb])
	}
	return ws
}

func zzHeap(b testing.TB, dt DType, rows, cols int) []*Matrix {
	r := rand.New(rand.NewPCG(1, 2))
	w0, _ := randMatrix(b, r, dt, rows, cols)
	n := max(2, (512<<20)/len(w0.Data))
	if os.Getenv("W7_SMALL") != "" {
		n = 1
	}
	data := make([]byte, n*len(w0.Data))
	for i := 0; i < n; i++ {
		copy(data[i*len(w0.Data):], w0.Data)
	}
	return zzMats(b, dt, rows, cols, data)
}

func cpuNow() float64 {
	var ts unix.Timespec
	unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts)
	return float64(ts.Nano()) / 1e9
}

func TestZZStream(t *testing.T) {
	if os.Getenv("W7_PERF") == "" {
		t.Skip("perf")
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	const rows, cols = 5632, 2048
	mm := os.Getenv("W7_MMAP")
	for _, dt := range []DType{Q8_0, Q4_0, F16} {
		var ws []*Matrix
		if mm != "" {
			f, err := os.Open(fmt.Sprintf(mm, dt))
			if err != nil {
				t.Fatal(err)
			}
			st, _ := f.Stat()
			data, err := syscall.Mmap(int(f.Fd()), 0, int(st.Size()), syscall.PROT_READ, syscall.MAP_SHARED)
			if err != nil {
				t.Fatal(err)
			}
			ws = zzMats(t, dt, rows, cols, data[4096:])
		} else {
			ws = zzHeap(t, dt, rows, cols)
		}
		bytes := len(ws[0].Data) * len(ws)
		for _, T := range []int{1, 4, 16} {
			r := rand.New(rand.NewPCG(1, 2))
			x := randVec(r, T*cols, 1)
			y := make([]float32, T*rows)
			ctx := NewCtx(1)
			best := 0.0
			for pass := 0; pass < 3*(1+99*(len(ws)/max(1, len(ws)-1)-1)); pass++ {
				st := cpuNow()
				for _, w := range ws {
					ctx.MatMul(x, T, Out{w, y})
				}
				best = max(best, float64(bytes)/(cpuNow()-st)/1e9)
			}
			ctx.Close()
			t.Logf("%s T=%d: %.2f GB/s  %.1f GFLOP/s", dt, T, best, best*1e9/float64(len(ws[0].Data))*2*rows*cols*float64(T)/1e9)
		}
	}
	r, _ := MemBandwidth(1, 512<<20, 3)
	t.Logf("membw %.2f", r.Best())
}

func TestZZL1(t *testing.T) {
	if os.Getenv("W7_PERF") == "" {
		t.Skip("perf")
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	r := rand.New(rand.NewPCG(1, 2))
	const n = 1024
	wf16, _ := Quantize(F16, randVec(r, 4*n, 1))
	wq8, _ := Quantize(Q8_0, randVec(r, 4*n, 1))
	x := randVec(r, 3*n, 1)
	xq := make([]int8, 4*n)
	xd := make([]float32, 4*n/QK)
	for k := 0; k < 4; k++ {
		QuantizeActQ8(x[:n], xq[k*n:(k+1)*n], xd[k*n/QK:(k+1)*n/QK])
	}
	iters := 20000
	var o3 [3]float32
	var o4 [4]float32
	var s float32
	run := func(name string, macs float64, f func()) {
		best := 0.0
		for p := 0; p < 5; p++ {
			st := cpuNow()
			for i := 0; i < iters/max(1, int(macs)/n); i++ {
				f()
			}
			best = max(best, macs*float64(iters/max(1, int(macs)/n))*2/(cpuNow()-st)/1e9)
		}
		t.Logf("%-12s %.1f GFLOP/s", name, best)
	}
	run("f16 1x1", n, func() { s += dotF16(wf16[:2*n], x[:n]) })
	run("f16 1x3", 3*n, func() { dotF16x3(wf16[:2*n], x, &o3) })
	var acc96 [96]float32
	run("f16 piece512", 3*512, func() { dotF16x3Part(wf16[:2*512], x, n, &acc96, nil) })
	run("q8 1x1", n, func() { s += dotQ8(wq8[:n/QK*34], xq[:n], xd[:n/QK]) })
	run("q8 1x4", 4*n, func() { dotQ8x4(wq8[:n/QK*34], xq, xd, &o4) })
	tile := make([]byte, n/QK*q8TileBlockBytes)
	xq8 := make([]int8, 8*n)
	xd8 := make([]float32, 8*n/QK)
	for k := 0; k < 8; k++ {
		copy(xq8[k*n:], xq[:n])
		copy(xd8[k*n/QK:], xd[:n/QK])
	}
	fillQ8Tile(tile, xq8, xd8, n/QK, 8)
	var o8 [8]float32
	run("q8 tile8", 8*n, func() { q8Tile(wq8[:n/QK*34], n/QK, tile, 8, &o8) })
	run("q8 tile4", 4*n, func() { q8Tile(wq8[:n/QK*34], n/QK, tile, 4, &o8) })
	_ = s
}

func TestZZStreams(t *testing.T) {
	if os.Getenv("W7_PERF") == "" {
		t.Skip("perf")
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	buf := make([]byte, 512<<20)
	for i := range buf {
		buf[i] = byte(i)
	}
	for _, S := range []int{1, 2, 4, 8} {
		for _, chunk := range []int{256, 2048} {
			seg := len(buf) / S
			best := 0.0
			for p := 0; p < 3; p++ {
				st := cpuNow()
				var s uint64
				for off := 0; off+chunk <= seg; off += chunk {
					for k := 0; k < S; k++ {
						s += readSum(buf[k*seg+off : k*seg+off+chunk])
					}
				}
				best = max(best, float64(len(buf))/(cpuNow()-st)/1e9)
				_ = s
			}
			t.Logf("streams %d chunk %d: %.2f GB/s", S, chunk, best)
		}
	}
}

func TestZZMM(t *testing.T) {
	if os.Getenv("W7_PERF") == "" {
		t.Skip("perf")
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	r := rand.New(rand.NewPCG(1, 2))
	ctx := NewCtx(1)
	for _, K := range []int{2048, 5632} {
		for _, dt := range []DType{F16, Q8_0, Q4_0} {
			w, _ := randMatrix(t, r, dt, 64, K)
			for _, T := range []int{4, 16, 64} {
				xs := randVec(r, T*K, 1)
				ys := make([]float32, T*64)
				best := 0.0
				for p := 0; p < 5; p++ {
					st := cpuNow()
					for i := 0; i < 20; i++ {
						ctx.MatMul(xs, T, Out{w, ys})
					}
					best = max(best, 2*64*float64(K*T)*20/(cpuNow()-st)/1e9)
				}
				t.Logf("%s 64x%d T=%d: %.1f GFLOP/s", dt, K, T, best)
			}
		}
	}
}

func TestZZSgemm(t *testing.T) {
	if os.Getenv("W7_PERF") == "" {
		t.Skip("perf")
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	r := rand.New(rand.NewPCG(1, 2))
	const rows, cols, T = 256, 2048, 20
	w, _ := randMatrix(t, r, F16, rows, cols)
	x := randVec(r, T*cols, 1)
	x16 := make([]uint16, len(x))
	x32 := make([]float32, len(x))
	for i, v := range x {
		x16[i] = F32ToF16(v)
		x32[i] = F16ToF32(x16[i])
	}
	toks := make([]int, T)
	for i := range toks {
		toks[i] = i
	}
	y := make([]float32, T*rows)
	for rep := 0; rep < 3; rep++ {
		st := cpuNow()
		for i := 0; i < 20; i++ {
			sgemmF16Block(w, 0, rows, x32, toks, y)
		}
		a := 2 * float64(rows*cols*T) * 20 / (cpuNow() - st) / 1e9
		st = cpuNow()
		for i := 0; i < 20; i++ {
			for rr := 0; rr < rows; rr++ {
				for tk := 0; tk < T; tk++ {
					y[tk*rows+rr] = DotF16Sgemm(bytesAsU16(w.Row(rr)), x16[tk*cols:(tk+1)*cols])
				}
			}
		}
		b := 2 * float64(rows*cols*T) * 20 / (cpuNow() - st) / 1e9
		t.Logf("block %.1f GFLOP/s, per-pair %.1f GFLOP/s", a, b)
	}
}
