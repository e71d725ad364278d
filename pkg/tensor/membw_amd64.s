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
	VPADDQ (SI), Y0, Y0
	VPADDQ 32(SI), Y1, Y1
	VPADDQ 64(SI), Y2, Y2
	VPADDQ 96(SI), Y3, Y3
	VPADDQ 128(SI), Y4, Y4
	VPADDQ 160(SI), Y5, Y5
	VPADDQ 192(SI), Y6, Y6
	VPADDQ 224(SI), Y7, Y7
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
	VPADDQ     (SI), Y0, Y0
	VPADDQ     32(SI), Y1, Y1
	VPADDQ     64(SI), Y2, Y2
	VPADDQ     96(SI), Y3, Y3
	VPADDQ     128(SI), Y4, Y4
	VPADDQ     160(SI), Y5, Y5
	VPADDQ     192(SI), Y6, Y6
	VPADDQ     224(SI), Y7, Y7
	VPADDQ     256(SI), Y0, Y0
	VPADDQ     288(SI), Y1, Y1
	VPADDQ     320(SI), Y2, Y2
	VPADDQ     352(SI), Y3, Y3
	VPADDQ     384(SI), Y4, Y4
	VPADDQ     416(SI), Y5, Y5
	VPADDQ     448(SI), Y6, Y6
	VPADDQ     480(SI), Y7, Y7
	VPADDQ     512(SI), Y0, Y0
	VPADDQ     544(SI), Y1, Y1
	VPADDQ     576(SI), Y2, Y2
	VPADDQ     608(SI), Y3, Y3
	VPADDQ     640(SI), Y4, Y4
	VPADDQ     672(SI), Y5, Y5
	VPADDQ     704(SI), Y6, Y6
	VPADDQ     736(SI), Y7, Y7
	VPADDQ     768(SI), Y0, Y0
	VPADDQ     800(SI), Y1, Y1
	VPADDQ     832(SI), Y2, Y2
	VPADDQ     864(SI), Y3, Y3
	VPADDQ     896(SI), Y4, Y4
	VPADDQ     928(SI), Y5, Y5
	VPADDQ     960(SI), Y6, Y6
	VPADDQ     992(SI), Y7, Y7
	ADDQ       $1024, SI
	SUBQ       $1024, CX
	JNE        rfloop

	READSUM_TOTAL
	MOVQ AX, ret+16(FP)
	RET
