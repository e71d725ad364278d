// q8_0 x q8_0 products of one weight row against a tile of up to eight
// tokens with AVX-512 VNNI (VPDPBUSD on 256-bit registers). The numbers
// are those of dotQ8AVX2 (dot_amd64.s) and so of ggml's vec_dot_q8_0_q8_0:
// per block, eight int32 lanes each summing four products, converted and
// accumulated as acc = fma(lanes, dw*dx, acc), then the same horizontal sum.
//
// The tile (see q8Tile) holds, per block, the eight tokens' quants, then
// -128 * (sum of each group of four quants) as int32 lanes, then their
// scales: VPDPBUSD multiplies unsigned by signed bytes, so the weights are
// offset by 128 (w^0x80) and the tile's correction restores the exact sum.

#include "textflag.h"

#define Q8TTOK(C, T, ACC) \
	VMOVDQU      (256+32*C)(DI), T   \
	VPDPBUSD     (32*C)(DI), Y1, T   \
	VCVTDQ2PS    T, T                \
	VMULPS.BCST  (512+4*C)(DI), Y2, Y3 \
	VFMADD231PS  Y3, T, ACC

#define Q8THSUM(ACC, C) \
	VMOVAPS      ACC, Y0      \
	VEXTRACTF128 $1, Y0, X1   \
	VADDPS       X1, X0, X0   \
	VMOVHLPS     X0, X0, X1   \
	VADDPS       X1, X0, X0   \
	VMOVSHDUP    X0, X1       \
	VADDSS       X1, X0, X0   \
	VMOVSS       X0, (4*C)(AX)

// func q8TileVNNI(w unsafe.Pointer, nb int, tile unsafe.Pointer, ntok int, out *[8]float32)
TEXT ·q8TileVNNI(SB), NOSPLIT, $0-40
	MOVQ         w+0(FP), SI
	MOVQ         nb+8(FP), CX
	MOVQ         tile+16(FP), DI
	MOVQ         ntok+24(FP), BX
	MOVL         $0x80808080, AX
	VMOVD        AX, X15
	VPBROADCASTD X15, Y15
	VXORPS       Y16, Y16, Y16
	VXORPS       Y17, Y17, Y17
	VXORPS       Y18, Y18, Y18
	VXORPS       Y19, Y19, Y19
	VXORPS       Y20, Y20, Y20
	VXORPS       Y21, Y21, Y21
	VXORPS       Y22, Y22, Y22
	VXORPS       Y23, Y23, Y23

q8tloop:
	// The hardware prefetcher does not keep ahead of this kernel's pace
	// through the weights (measured: +30% with this).
	PREFETCHT0   2048(SI)
	VMOVDQU      2(SI), Y0
	VPXOR        Y15, Y0, Y1
	VPBROADCASTW (SI), X2
	VCVTPH2PS    X2, Y2
	Q8TTOK(0, Y4, Y16)
	CMPQ         BX, $2
	JLT          q8tnext
	Q8TTOK(1, Y5, Y17)
	CMPQ         BX, $3
	JLT          q8tnext
	Q8TTOK(2, Y6, Y18)
	CMPQ         BX, $4
	JLT          q8tnext
	Q8TTOK(3, Y7, Y19)
	CMPQ         BX, $5
	JLT          q8tnext
	Q8TTOK(4, Y8, Y20)
	CMPQ         BX, $6
	JLT          q8tnext
	Q8TTOK(5, Y9, Y21)
	CMPQ         BX, $7
	JLT          q8tnext
	Q8TTOK(6, Y10, Y22)
	CMPQ         BX, $8
	JLT          q8tnext
	Q8TTOK(7, Y11, Y23)

q8tnext:
	ADDQ $34, SI
	ADDQ $544, DI
	DECQ CX
	JNE  q8tloop

	MOVQ out+32(FP), AX
	Q8THSUM(Y16, 0)
	Q8THSUM(Y17, 1)
	Q8THSUM(Y18, 2)
	Q8THSUM(Y19, 3)
	Q8THSUM(Y20, 4)
	Q8THSUM(Y21, 5)
	Q8THSUM(Y22, 6)
	Q8THSUM(Y23, 7)
	VZEROUPPER
	RET

// Two rows (Y1 and Y13: weights^0x80; Y2 and Y14: their f16 scales) and
// one token slot: the slot's quants and correction are loaded once for
// both rows.
#define Q8T2TOK(C, ACC0, ACC1) \
	VMOVDQU     (32*C)(DI), Y3      \
	VMOVDQU     (256+32*C)(DI), Y4  \
	VMOVDQA     Y4, Y5              \
	VPDPBUSD    Y3, Y1, Y4          \
	VPDPBUSD    Y3, Y13, Y5         \
	VCVTDQ2PS   Y4, Y4              \
	VCVTDQ2PS   Y5, Y5              \
	VMULPS.BCST (512+4*C)(DI), Y2, Y6 \
	VMULPS.BCST (512+4*C)(DI), Y14, Y7 \
	VFMADD231PS Y6, Y4, ACC0        \
	VFMADD231PS Y7, Y5, ACC1

// func q8Tile2VNNI(w unsafe.Pointer, rowBytes, nb int, tile unsafe.Pointer, ntok int, out *[16]float32)
// Two consecutive rows (rowBytes apart) against the tile: out[r*8+c].
TEXT ·q8Tile2VNNI(SB), NOSPLIT, $0-48
	MOVQ         w+0(FP), SI
	MOVQ         rowBytes+8(FP), R8
	MOVQ         nb+16(FP), CX
	MOVQ         tile+24(FP), DI
	MOVQ         ntok+32(FP), BX
	MOVL         $0x80808080, AX
	VMOVD        AX, X15
	VPBROADCASTD X15, Y15
	VXORPS       Y16, Y16, Y16
	VXORPS       Y17, Y17, Y17
	VXORPS       Y18, Y18, Y18
	VXORPS       Y19, Y19, Y19
	VXORPS       Y20, Y20, Y20
	VXORPS       Y21, Y21, Y21
	VXORPS       Y22, Y22, Y22
	VXORPS       Y23, Y23, Y23
	VXORPS       Y24, Y24, Y24
	VXORPS       Y25, Y25, Y25
	VXORPS       Y26, Y26, Y26
	VXORPS       Y27, Y27, Y27
	VXORPS       Y28, Y28, Y28
	VXORPS       Y29, Y29, Y29
	VXORPS       Y30, Y30, Y30
	VXORPS       Y31, Y31, Y31

q8t2loop:
	PREFETCHT0   2048(SI)
	PREFETCHT0   2048(SI)(R8*1)
	VMOVDQU      2(SI), Y0
	VPXOR        Y15, Y0, Y1
	VMOVDQU      2(SI)(R8*1), Y0
	VPXOR        Y15, Y0, Y13
	VPBROADCASTW (SI), X2
	VCVTPH2PS    X2, Y2
	VPBROADCASTW (SI)(R8*1), X14
	VCVTPH2PS    X14, Y14
	Q8T2TOK(0, Y16, Y24)
	CMPQ         BX, $2
	JLT          q8t2next
	Q8T2TOK(1, Y17, Y25)
	CMPQ         BX, $3
	JLT          q8t2next
	Q8T2TOK(2, Y18, Y26)
	CMPQ         BX, $4
	JLT          q8t2next
	Q8T2TOK(3, Y19, Y27)
	CMPQ         BX, $5
	JLT          q8t2next
	Q8T2TOK(4, Y20, Y28)
	CMPQ         BX, $6
	JLT          q8t2next
	Q8T2TOK(5, Y21, Y29)
	CMPQ         BX, $7
	JLT          q8t2next
	Q8T2TOK(6, Y22, Y30)
	CMPQ         BX, $8
	JLT          q8t2next
	Q8T2TOK(7, Y23, Y31)

q8t2next:
	ADDQ $34, SI
	ADDQ $544, DI
	DECQ CX
	JNE  q8t2loop

	MOVQ out+40(FP), AX
	Q8THSUM(Y16, 0)
	Q8THSUM(Y17, 1)
	Q8THSUM(Y18, 2)
	Q8THSUM(Y19, 3)
	Q8THSUM(Y20, 4)
	Q8THSUM(Y21, 5)
	Q8THSUM(Y22, 6)
	Q8THSUM(Y23, 7)
	Q8THSUM(Y24, 8)
	Q8THSUM(Y25, 9)
	Q8THSUM(Y26, 10)
	Q8THSUM(Y27, 11)
	Q8THSUM(Y28, 12)
	Q8THSUM(Y29, 13)
	Q8THSUM(Y30, 14)
	Q8THSUM(Y31, 15)
	VZEROUPPER
	RET
