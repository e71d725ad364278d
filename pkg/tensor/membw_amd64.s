#include "textflag.h"

// READSUM_ZERO clears the eight accumulators Y0-Y7.
#define READSUM_ZERO \
	VPXOR Y0, Y0, Y0 \
	VPXOR Y1, Y1, Y1 \
	VPXOR Y2, Y2, Y2 \
	VPXOR Y3, Y3, Y3 \
	VPXOR Y4, Y4, Y4 \
	VPXOR Y5, Y5, Y5 \
	VPXOR Y6, Y6, Y6 \
	VPXOR Y7, Y7, Y7

// READSUM_256 adds the 256 bytes at off(SI) into the accumulators.
#define READSUM_256(off) \
	VPADDQ off+0(SI), Y0, Y0   \
	VPADDQ off+32(SI), Y1, Y1  \
	VPADDQ off+64(SI), Y2, Y2  \
	VPADDQ off+96(SI), Y3, Y3  \
	VPADDQ off+128(SI), Y4, Y4 \
	VPADDQ off+160(SI), Y5, Y5 \
	VPADDQ off+192(SI), Y6, Y6 \
	VPADDQ off+224(SI), Y7, Y7

// READSUM_TOTAL adds up the accumulators' 32 words into AX (the caller
// stores the result itself, where go vet's asmdecl sees it).
#define READSUM_TOTAL \
	VPADDQ       Y1, Y0, Y0    \
	VPADDQ       Y3, Y2, Y2    \
	VPADDQ       Y5, Y4, Y4    \
	VPADDQ       Y7, Y6, Y6    \
	VPADDQ       Y2, Y0, Y0    \
	VPADDQ       Y6, Y4, Y4    \
	VPADDQ       Y4, Y0, Y0    \
	VEXTRACTI128 $1, Y0, X1    \
	VPADDQ       X1, X0, X0    \
	VPSHUFD      $0x4E, X0, X1 \
	VPADDQ       X1, X0, X0    \
	VMOVQ        X0, AX        \
	VZEROUPPER

// func readSumAVX2(p unsafe.Pointer, n int) uint64
// n is a positive multiple of 256. Eight independent accumulators so the
// adds never wait on each other; only the loads limit the speed.
TEXT ·readSumAVX2(SB), NOSPLIT, $0-24
	MOVQ   p+0(FP), SI
	MOVQ   n+8(FP), CX
	READSUM_ZERO

rsloop:
	READSUM_256(0)
	ADDQ   $256, SI
	SUBQ   $256, CX
	JNE    rsloop

	READSUM_TOTAL
	MOVQ AX, ret+16(FP)
	RET

// func readSumFarAVX2(p unsafe.Pointer, n int) uint64
// readSumAVX2 with one PREFETCHT0 16 KiB ahead per KiB read (n a positive
// multiple of 1024): the one-token K-quant kernels lead the L2 streamer so
// (it starts over at every 4 KiB page), and a roofline must be what one core
// reads at best, so membw measures this form too. A prefetch past the
// buffer's end does not fault.
TEXT ·readSumFarAVX2(SB), NOSPLIT, $0-24
	MOVQ   p+0(FP), SI
	MOVQ   n+8(FP), CX
	READSUM_ZERO

rfloop:
	PREFETCHT0 16384(SI)
	READSUM_256(0)
	READSUM_256(256)
	READSUM_256(512)
	READSUM_256(768)
	ADDQ       $1024, SI
	SUBQ       $1024, CX
	JNE        rfloop

	READSUM_TOTAL
	MOVQ AX, ret+16(FP)
	RET
