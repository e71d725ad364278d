// Query-blocked tiled flash attention (see fablock.go): six query vectors
// per pass, 16 columns (two YMM registers) per row, as simd_gemm's AVX2
// microkernel (RM=6, RN=2). Every output element is its own FMA chain, so
// the bits do not depend on the blocking.

#include "textflag.h"

// func faKQ6AVX2(out, kt, q *float32, dk int, scale float32)
// out [6][64] = scale * (q [6][dk] x kt [dk][64]).
TEXT ·faKQ6AVX2(SB), NOSPLIT, $0-36
	MOVQ dk+24(FP), R8
	SHLQ $2, R8              // q row stride in bytes
	XORQ R13, R13            // column byte offset within a kt row (0..192)

kqcol:
	CMPQ   R13, $256
	JGE    kqdone
	MOVQ   kt+8(FP), SI
	ADDQ   R13, SI
	MOVQ   q+16(FP), DI
	LEAQ   (DI)(R8*2), R10
	ADDQ   R8, R10           // row 3
	MOVQ   dk+24(FP), CX
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	VXORPS Y4, Y4, Y4
	VXORPS Y5, Y5, Y5
	VXORPS Y6, Y6, Y6
	VXORPS Y7, Y7, Y7
	VXORPS Y8, Y8, Y8
	VXORPS Y9, Y9, Y9
	VXORPS Y10, Y10, Y10
	VXORPS Y11, Y11, Y11

kqd:
	VMOVUPS      (SI), Y12
	VMOVUPS      32(SI), Y13
	VBROADCASTSS (DI), Y14
	VFMADD231PS  Y14, Y12, Y0
	VFMADD231PS  Y14, Y13, Y1
	VBROADCASTSS (DI)(R8*1), Y15
	VFMADD231PS  Y15, Y12, Y2
	VFMADD231PS  Y15, Y13, Y3
	VBROADCASTSS (DI)(R8*2), Y14
	VFMADD231PS  Y14, Y12, Y4
	VFMADD231PS  Y14, Y13, Y5
	VBROADCASTSS (R10), Y15
	VFMADD231PS  Y15, Y12, Y6
	VFMADD231PS  Y15, Y13, Y7
	VBROADCASTSS (R10)(R8*1), Y14
	VFMADD231PS  Y14, Y12, Y8
	VFMADD231PS  Y14, Y13, Y9
	VBROADCASTSS (R10)(R8*2), Y15
	VFMADD231PS  Y15, Y12, Y10
	VFMADD231PS  Y15, Y13, Y11
	ADDQ         $256, SI
	ADDQ         $4, DI
	ADDQ         $4, R10
	DECQ         CX
	JNZ          kqd

	VBROADCASTSS scale+32(FP), Y14
	MOVQ         out+0(FP), DI
	ADDQ         R13, DI
	VMULPS       Y14, Y0, Y0
	VMULPS       Y14, Y1, Y1
	VMULPS       Y14, Y2, Y2
	VMULPS       Y14, Y3, Y3
	VMULPS       Y14, Y4, Y4
	VMULPS       Y14, Y5, Y5
	VMULPS       Y14, Y6, Y6
	VMULPS       Y14, Y7, Y7
	VMULPS       Y14, Y8, Y8
	VMULPS       Y14, Y9, Y9
	VMULPS       Y14, Y10, Y10
	VMULPS       Y14, Y11, Y11
	VMOVUPS      Y0, (DI)
	VMOVUPS      Y1, 32(DI)
	VMOVUPS      Y2, 256(DI)
	VMOVUPS      Y3, 288(DI)
	VMOVUPS      Y4, 512(DI)
	VMOVUPS      Y5, 544(DI)
	VMOVUPS      Y6, 768(DI)
	VMOVUPS      Y7, 800(DI)
	VMOVUPS      Y8, 1024(DI)
	VMOVUPS      Y9, 1056(DI)
	VMOVUPS      Y10, 1280(DI)
	VMOVUPS      Y11, 1312(DI)
	ADDQ         $64, R13
	JMP          kqcol

kqdone:
	VZEROUPPER
	RET

// func faVAcc6AVX2(acc, v, p *float32, dv int)
// acc [6][dv] += p [6][64] x v [64][dv]; dv a multiple of 16.
TEXT ·faVAcc6AVX2(SB), NOSPLIT, $0-32
	MOVQ dv+24(FP), R8
	SHLQ $2, R8              // row stride of acc and v in bytes
	XORQ R13, R13            // column byte offset

vacol:
	CMPQ    R13, R8
	JGE     vadone
	MOVQ    acc+0(FP), DI
	ADDQ    R13, DI
	LEAQ    (DI)(R8*2), R10
	ADDQ    R8, R10          // row 3
	VMOVUPS (DI), Y0
	VMOVUPS 32(DI), Y1
	VMOVUPS (DI)(R8*1), Y2
	VMOVUPS 32(DI)(R8*1), Y3
	VMOVUPS (DI)(R8*2), Y4
	VMOVUPS 32(DI)(R8*2), Y5
	VMOVUPS (R10), Y6
	VMOVUPS 32(R10), Y7
	VMOVUPS (R10)(R8*1), Y8
	VMOVUPS 32(R10)(R8*1), Y9
	VMOVUPS (R10)(R8*2), Y10
	VMOVUPS 32(R10)(R8*2), Y11
	MOVQ    v+8(FP), SI
	ADDQ    R13, SI
	MOVQ    p+16(FP), DX
	MOVQ    $64, CX

vak:
	VMOVUPS      (SI), Y12
	VMOVUPS      32(SI), Y13
	VBROADCASTSS (DX), Y14
	VFMADD231PS  Y14, Y12, Y0
	VFMADD231PS  Y14, Y13, Y1
	VBROADCASTSS 256(DX), Y15
	VFMADD231PS  Y15, Y12, Y2
	VFMADD231PS  Y15, Y13, Y3
	VBROADCASTSS 512(DX), Y14
	VFMADD231PS  Y14, Y12, Y4
	VFMADD231PS  Y14, Y13, Y5
	VBROADCASTSS 768(DX), Y15
	VFMADD231PS  Y15, Y12, Y6
	VFMADD231PS  Y15, Y13, Y7
	VBROADCASTSS 1024(DX), Y14
	VFMADD231PS  Y14, Y12, Y8
	VFMADD231PS  Y14, Y13, Y9
	VBROADCASTSS 1280(DX), Y15
	VFMADD231PS  Y15, Y12, Y10
	VFMADD231PS  Y15, Y13, Y11
	ADDQ         R8, SI
	ADDQ         $4, DX
	DECQ         CX
	JNZ          vak

	VMOVUPS Y0, (DI)
	VMOVUPS Y1, 32(DI)
	VMOVUPS Y2, (DI)(R8*1)
	VMOVUPS Y3, 32(DI)(R8*1)
	VMOVUPS Y4, (DI)(R8*2)
	VMOVUPS Y5, 32(DI)(R8*2)
	VMOVUPS Y6, (R10)
	VMOVUPS Y7, 32(R10)
	VMOVUPS Y8, (R10)(R8*1)
	VMOVUPS Y9, 32(R10)(R8*1)
	VMOVUPS Y10, (R10)(R8*2)
	VMOVUPS Y11, 32(R10)(R8*2)
	ADDQ    $64, R13
	JMP     vacol

vadone:
	VZEROUPPER
	RET

// func faMax64AVX2(x *float32) float32
TEXT ·faMax64AVX2(SB), NOSPLIT, $0-12
	MOVQ         x+0(FP), SI
	VMOVUPS      (SI), Y0
	VMOVUPS      32(SI), Y1
	VMAXPS       64(SI), Y0, Y0
	VMAXPS       96(SI), Y1, Y1
	VMAXPS       128(SI), Y0, Y0
	VMAXPS       160(SI), Y1, Y1
	VMAXPS       192(SI), Y0, Y0
	VMAXPS       224(SI), Y1, Y1
	VMAXPS       Y1, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VMAXPS       X1, X0, X0
	VPERMILPS    $0x4e, X0, X1
	VMAXPS       X1, X0, X0
	VPERMILPS    $0xb1, X0, X1
	VMAXPS       X1, X0, X0
	VZEROUPPER
	MOVSS        X0, ret+8(FP)
	RET

// func faSub64AVX2(x *float32, m float32)
TEXT ·faSub64AVX2(SB), NOSPLIT, $0-12
	MOVQ         x+0(FP), SI
	VBROADCASTSS m+8(FP), Y2
	VMOVUPS      (SI), Y0
	VMOVUPS      32(SI), Y1
	VSUBPS       Y2, Y0, Y0
	VSUBPS       Y2, Y1, Y1
	VMOVUPS      Y0, (SI)
	VMOVUPS      Y1, 32(SI)
	VMOVUPS      64(SI), Y0
	VMOVUPS      96(SI), Y1
	VSUBPS       Y2, Y0, Y0
	VSUBPS       Y2, Y1, Y1
	VMOVUPS      Y0, 64(SI)
	VMOVUPS      Y1, 96(SI)
	VMOVUPS      128(SI), Y0
	VMOVUPS      160(SI), Y1
	VSUBPS       Y2, Y0, Y0
	VSUBPS       Y2, Y1, Y1
	VMOVUPS      Y0, 128(SI)
	VMOVUPS      Y1, 160(SI)
	VMOVUPS      192(SI), Y0
	VMOVUPS      224(SI), Y1
	VSUBPS       Y2, Y0, Y0
	VSUBPS       Y2, Y1, Y1
	VMOVUPS      Y0, 192(SI)
	VMOVUPS      Y1, 224(SI)
	VZEROUPPER
	RET

// func faSum64AVX2(x *float32, lanes int) float64
// tileSumGeneric: per vector of lanes (16 or 8) scores the horizontal sum
// of ggml_vec_soft_max_f32 (16: halves folded, then 128-bit halves, then
// (0+2)+(1+3); 8: 128-bit halves, then the same), added in float64 in
// order.
TEXT ·faSum64AVX2(SB), NOSPLIT, $0-24
	MOVQ   x+0(FP), SI
	MOVQ   lanes+8(FP), DX
	SHLQ   $2, DX            // bytes per vector
	LEAQ   256(SI), DI       // end of the tile
	VXORPD X3, X3, X3

fasumvec:
	VMOVUPS (SI), Y0
	CMPQ    DX, $64
	JNE     fasumfold
	VADDPS  32(SI), Y0, Y0

fasumfold:
	VEXTRACTF128 $1, Y0, X1
	VADDPS       X1, X0, X0
	VMOVHLPS     X0, X0, X1
	VADDPS       X1, X0, X0
	VMOVSHDUP    X0, X1
	VADDSS       X1, X0, X0
	VCVTSS2SD    X0, X0, X0
	VADDSD       X0, X3, X3
	ADDQ         DX, SI
	CMPQ         SI, DI
	JLT          fasumvec
	VZEROUPPER
	MOVSD        X3, ret+16(FP)
	RET
