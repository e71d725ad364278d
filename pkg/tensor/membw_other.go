//go:build !amd64

package tensor

func readSum(b []byte) uint64 { return readSumGeneric(b) }

func readSumFar(b []byte) uint64 { return readSumGeneric(b) }
