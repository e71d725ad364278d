//go:build !amd64

package tensor

func dotF16Heads(out []float32, base []uint16, offs []int, q []uint16, heads int, _ []float32) {
	dotF16HeadsLoop(out, base, offs, q, heads)
}

func flashAccHeads(acc, v []uint16, offs []int, ms, vs []float32, heads int) {
	flashAccHeadsLoop(acc, v, offs, ms, vs, heads)
}
