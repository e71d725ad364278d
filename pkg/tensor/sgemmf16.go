package tensor

// sgemmTok is how many tokens one sgemmF16x16 call takes.
const sgemmTok = 5

// sgemmF16Block computes, for f16 matrix w, rows [r0, r1) and the tokens
// listed in toks, y[toks[j]*w.Rows+r] = DotF16Sgemm(row r, token j's
// activation in f16) bit for bit (llamafile's tinyBLAS rounding in
// llama.cpp's AVX-512 builds), four rows and five tokens per kernel call.
// x32 holds the listed tokens' activations already rounded to f16 and
// widened back to f32 (exact), [len(toks) x w.Cols]. Only for
// GGMLLanes() == 16 with hasSgemmF16 and w.Cols a multiple of 16.
func sgemmF16Block(w *Matrix, r0, r1 int, x32 []float32, toks []int, y []float32) {
	cols, nOut, rb := w.Cols, w.Rows, w.rowBytes
	n := len(toks)
	rowBlock := max(4, blockWeights/rb/4*4)
	tokTile := max(sgemmTok, tileActs/(4*cols)/sgemmTok*sgemmTok)
	var res [4 * sgemmTok]float32
	for b0 := r0; b0 < r1; b0 += rowBlock {
		b1 := min(r1, b0+rowBlock)
		for t0 := 0; t0 < n; t0 += tokTile {
			t1 := min(n, t0+tokTile)
			for r := b0; r < b1; {
				nr, stride := 4, rb
				if b1-r < 4 {
					// The last rows one at a time: the kernel reads the
					// row four times and the first result is kept.
					nr, stride = 1, 0
				}
				rows := w.Data[r*rb : r*rb+3*stride+rb]
				for t := t0; t < t1; t += sgemmTok {
					nt := min(sgemmTok, t1-t)
					sgemmF16x16(rows, stride, x32[t*cols:], cols, nt, &res)
					for c := 0; c < nt; c++ {
						copy(y[toks[t+c]*nOut+r:toks[t+c]*nOut+r+nr], res[4*c:4*c+nr])
					}
				}
				r += nr
			}
		}
	}
}

// ggmlTok is how many tokens one ggmlF16x16 call takes.
const ggmlTok = 6

// ggmlChunk is the columns of one ggmlF16Block pass. Each weight value
// meets every token, so the f32 activations are read T times as often as
// the weights; whole rows of them (6 tokens x 5632 cols x 4 bytes = 132
// KiB) fall out of L1 and the kernel waits on L2 (measured: x16 decode
// ran at L2 bandwidth). A 1024-column chunk of six tokens is 24 KiB and
// stays in L1 while the rows of a block pass over it; each chunk boundary
// spills and reloads the 24 running sums, which made 512 columns ~8%
// slower and whole rows ~20% slower (BenchmarkGGMLF16Block, out of cache).
const ggmlChunk = 1024

// ggmlF16Block computes y[t*w.Rows+r] = DotF16GGML(row r, x16 row t) bit
// for bit (ggml_vec_dot_f16, what llama.cpp uses for single-token rows)
// for rows [r0, r1) and all T tokens, one row and six tokens per kernel
// call. x32 holds the T tokens' activations rounded to f16 and widened
// back to f32 ([T x w.Cols], exact). w.Cols must be a multiple of 64.
// acc is scratch; it is grown as needed and returned.
func ggmlF16Block(w *Matrix, r0, r1 int, x32 []float32, T int, y []float32, acc [][ggmlTok * 64]float32) [][ggmlTok * 64]float32 {
	cols, nOut, rb := w.Cols, w.Rows, w.rowBytes
	rowBlock := max(1, min(16, blockWeights/rb))
	if len(acc) < rowBlock {
		acc = make([][ggmlTok * 64]float32, rowBlock)
	}
	var res [ggmlTok]float32
	for b0 := r0; b0 < r1; b0 += rowBlock {
		b1 := min(r1, b0+rowBlock)
		for t := 0; t < T; t += ggmlTok {
			nt := min(ggmlTok, T-t)
			for k0 := 0; k0 < cols; k0 += ggmlChunk {
				kn := min(ggmlChunk, cols-k0)
				first, last := k0 == 0, k0+kn == cols
				xs := x32[t*cols+k0:]
				pf := 0
				if t == 0 {
					pf = rowBlock * rb // the next block, while this one is read the first time
				}
				for r := b0; r < b1; r++ {
					ggmlF16x16(w.Data[r*rb+2*k0:], xs, cols, kn, nt, &acc[r-b0], &res, first, last, pf)
					if last {
						for c := 0; c < nt; c++ {
							y[(t+c)*nOut+r] = res[c]
						}
					}
				}
			}
		}
	}
	return acc
}
