package tensor

// Decode attention over an f16 cache for the query heads sharing one KV
// head. ggml runs each query head on its own (one pass over the keys per
// head); every head's scores and f16 accumulator are independent chains,
// so a pass over the keys may serve all of a group's heads — each key and
// value row read and widened once — with the same bits per head.

// DotF16GGMLHeads sets out[h*len(offs)+j] = DotF16GGML(base[offs[j]:], q[h*hd:(h+1)*hd])
// for the heads query heads of q (hd = len(q)/heads) and every key j.
// qf (len >= len(q)) is scratch for the queries widened to f32.
func DotF16GGMLHeads(out []float32, base []uint16, offs []int, q []uint16, heads int, qf []float32) {
	n := len(offs)
	if heads <= 0 || n == 0 {
		return
	}
	hd := len(q) / heads
	_ = out[heads*n-1]
	dotF16Heads(out[:heads*n], base, offs, q[:heads*hd], heads, qf[:heads*hd])
}

// FlashAccF16Heads is FlashAccF16 for heads query heads over the same
// keys: head h's accumulator is acc[h*hd:(h+1)*hd] (hd = len(acc)/heads),
// its rescales and weights ms[h*len(offs):], vs[h*len(offs):].
func FlashAccF16Heads(acc, v []uint16, offs []int, ms, vs []float32, heads int) {
	n := len(offs)
	if heads <= 0 || n == 0 {
		return
	}
	_, _ = ms[heads*n-1], vs[heads*n-1]
	flashAccHeads(acc[:len(acc)/heads*heads], v, offs, ms[:heads*n], vs[:heads*n], heads)
}

// dotF16HeadsLoop and flashAccHeadsLoop run the heads one after another.
func dotF16HeadsLoop(out []float32, base []uint16, offs []int, q []uint16, heads int) {
	n, hd := len(offs), len(q)/heads
	for h := 0; h < heads; h++ {
		dotF16GGMLRows(out[h*n:(h+1)*n], base, offs, q[h*hd:(h+1)*hd])
	}
}

func flashAccHeadsLoop(acc, v []uint16, offs []int, ms, vs []float32, heads int) {
	n, hd := len(offs), len(acc)/heads
	for h := 0; h < heads; h++ {
		flashAccF16(acc[h*hd:(h+1)*hd], v, offs, ms[h*n:(h+1)*n], vs[h*n:(h+1)*n])
	}
}
