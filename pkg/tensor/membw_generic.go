package tensor

import "encoding/binary"

func readSumGeneric(b []byte) uint64 {
	var s0, s1, s2, s3 uint64
	i := 0
	for ; i+32 <= len(b); i += 32 {
		s0 += binary.LittleEndian.Uint64(b[i:])
		s1 += binary.LittleEndian.Uint64(b[i+8:])
		s2 += binary.LittleEndian.Uint64(b[i+16:])
		s3 += binary.LittleEndian.Uint64(b[i+24:])
	}
	for ; i < len(b); i++ {
		s0 += uint64(b[i])
	}
	return s0 + s1 + s2 + s3
}
