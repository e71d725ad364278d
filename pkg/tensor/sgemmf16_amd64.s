// f16 matrix rows times f16-rounded activations with the rounding of
// llamafile's tinyBLAS in llama.cpp's AVX-512 builds (DotF16Sgemm for
// GGMLLanes() == 16): per (row, token) one 16-lane accumulator of fused
// multiply-adds over the row, then _mm512_reduce_add_ps. Here four rows and
// up to five tokens share every load (a 16-lane accumulator is one ZMM
// register), so a batch runs at the FMA units' pace instead of one FMA
// chain's latency.

#include "textflag.h"

// _mm512_reduce_add_ps of ACC (a Z register whose low half is YACC) into
// the float at OUT: halves added, then 128-bit halves, then (0+2)+(1+3),
// exactly as ggmlSgemmF16x16AVX2 (ggml_exact_amd64.s).
#define SGREDUCE(ACC, YACC, OUT) \
	VEXTRACTF64X4 $1, ACC, Y1  \
	VADDPS        Y1, YACC, Y0 \
	VEXTRACTF128  $1, Y0, X1   \
	VADDPS        X1, X0, X0   \
	VMOVHLPS      X0, X0, X1   \
	VADDPS        X1, X0, X0   \
	VMOVSHDUP     X0, X1       \
	VADDSS        X1, X0, X0   \
	VMOVSS        X0, OUT

#define SGTOK(XA, XR, A0, A1, A2, A3) \
	VMOVUPS     XA, XR      \
	VFMADD231PS XR, Z0, A0  \
	VFMADD231PS XR, Z1, A1  \
	VFMADD231PS XR, Z2, A2  \
	VFMADD231PS XR, Z3, A3

// func sgemmF16x16AVX512(w unsafe.Pointer, rowBytes int, x *float32, xstride, n, ntok int, out *[20]float32)
// Four f16 rows (rowBytes apart) against ntok (1..5) f32 rows holding
// f16 values (xstride bytes apart), n a multiple of 16. out[c*4+r].
TEXT ·sgemmF16x16AVX512(SB), NOSPLIT, $0-56
	MOVQ    w+0(FP), SI
	MOVQ    rowBytes+8(FP), R8
	MOVQ    x+16(FP), DI
	MOVQ    xstride+24(FP), R10
	MOVQ    n+32(FP), CX
	MOVQ    ntok+40(FP), BX
	LEAQ    (R8)(R8*2), R9
	LEAQ    (R10)(R10*2), R11
	VXORPS  Z8, Z8, Z8
	VXORPS  Z9, Z9, Z9
	VXORPS  Z10, Z10, Z10
	VXORPS  Z11, Z11, Z11
	VXORPS  Z12, Z12, Z12
	VXORPS  Z13, Z13, Z13
	VXORPS  Z14, Z14, Z14
	VXORPS  Z15, Z15, Z15
	VXORPS  Z16, Z16, Z16
	VXORPS  Z17, Z17, Z17
	VXORPS  Z18, Z18, Z18
	VXORPS  Z19, Z19, Z19
	VXORPS  Z20, Z20, Z20
	VXORPS  Z21, Z21, Z21
	VXORPS  Z22, Z22, Z22
	VXORPS  Z23, Z23, Z23
	VXORPS  Z24, Z24, Z24
	VXORPS  Z25, Z25, Z25
	VXORPS  Z26, Z26, Z26
	VXORPS  Z27, Z27, Z27

sgloop:
	VCVTPH2PS (SI), Z0
	VCVTPH2PS (SI)(R8*1), Z1
	VCVTPH2PS (SI)(R8*2), Z2
	VCVTPH2PS (SI)(R9*1), Z3
	SGTOK((DI), Z4, Z8, Z9, Z10, Z11)
	CMPQ      BX, $2
	JLT       sgnext
	SGTOK((DI)(R10*1), Z28, Z12, Z13, Z14, Z15)
	CMPQ      BX, $3
	JLT       sgnext
	SGTOK((DI)(R10*2), Z29, Z16, Z17, Z18, Z19)
	CMPQ      BX, $4
	JLT       sgnext
	SGTOK((DI)(R11*1), Z30, Z20, Z21, Z22, Z23)
	CMPQ      BX, $5
	JLT       sgnext
	SGTOK((DI)(R10*4), Z31, Z24, Z25, Z26, Z27)

sgnext:
	ADDQ $32, SI
	ADDQ $64, DI
	SUBQ $16, CX
	JNE  sgloop

	MOVQ out+48(FP), AX
	SGREDUCE(Z8, Y8, (AX))
	SGREDUCE(Z9, Y9, 4(AX))
	SGREDUCE(Z10, Y10, 8(AX))
	SGREDUCE(Z11, Y11, 12(AX))
	SGREDUCE(Z12, Y12, 16(AX))
	SGREDUCE(Z13, Y13, 20(AX))
	SGREDUCE(Z14, Y14, 24(AX))
	SGREDUCE(Z15, Y15, 28(AX))
	SGREDUCE(Z16, Y16, 32(AX))
	SGREDUCE(Z17, Y17, 36(AX))
	SGREDUCE(Z18, Y18, 40(AX))
	SGREDUCE(Z19, Y19, 44(AX))
	SGREDUCE(Z20, Y20, 48(AX))
	SGREDUCE(Z21, Y21, 52(AX))
	SGREDUCE(Z22, Y22, 56(AX))
	SGREDUCE(Z23, Y23, 60(AX))
	SGREDUCE(Z24, Y24, 64(AX))
	SGREDUCE(Z25, Y25, 68(AX))
	SGREDUCE(Z26, Y26, 72(AX))
	SGREDUCE(Z27, Y27, 76(AX))
	VZEROUPPER
	RET

// Four 16-lane accumulators of one token (f16 activations at XA) against
// the four converted weight vectors Z0-Z3 (64 values).
#define GGTOK(XA, A0, A1, A2, A3) \
	VFMADD231PS 0 XA, Z0, A0   \
	VFMADD231PS 64 XA, Z1, A1  \
	VFMADD231PS 128 XA, Z2, A2 \
	VFMADD231PS 192 XA, Z3, A3

// ggml_vec_dot_f16's reduction (AVX-512 builds): (a0+a2)+(a1+a3) lane
// by lane, then _mm512_reduce_add_ps, into the float at OUT: the order of
// ggmlDotF16x16AVX2's h16reduce (ggml_exact_amd64.s).
#define GGREDUCE(A0, A1, A2, A3, OUT) \
	VADDPS        A2, A0, A0 \
	VADDPS        A3, A1, A1 \
	VADDPS        A1, A0, A0 \
	VEXTRACTF64X4 $1, A0, Y1 \
	VMOVAPS       A0, Z2     \
	VADDPS        Y1, Y2, Y0 \
	VEXTRACTF128  $1, Y0, X1 \
	VADDPS        X1, X0, X0 \
	VMOVHLPS      X0, X0, X1 \
	VADDPS        X1, X0, X0 \
	VMOVSHDUP     X0, X1     \
	VADDSS        X1, X0, X0 \
	VMOVSS        X0, OUT

// func ggmlF16x16AVX512(w, x unsafe.Pointer, xstride, n, ntok int, acc *[ggmlTok * 64]float32, out *[ggmlTok]float32, flags, pf int)
// One f16 row against ntok (1..6) activation rows (xstride bytes apart)
// with ggml_vec_dot_f16's AVX-512 rounding (DotF16GGML): four 16-lane
// accumulators per token over steps of 64 values; n a multiple of 64. The
// activations are f16 values already widened to f32 (exact), so each
// token costs four FMAs with a memory operand and no conversion; the
// weights are converted once for all the tokens.
// A dot product may be split into column chunks (so that the chunk of
// activations stays in L1 while many rows pass): the 24 accumulators
// live in acc between calls. flags bit 0: start from zero instead of acc;
// bit 1: the last chunk, reduce into out instead of storing acc. Splitting
// only spills and reloads the running sums, so the bits are the same.
// Each step also prefetches the two cache lines pf bytes past its weights
// (the caller points it at the next block of rows: the hardware
// prefetcher does not follow row jumps, and without it the matrix's
// memory time added to the compute time instead of hiding under it).
TEXT ·ggmlF16x16AVX512(SB), NOSPLIT, $0-72
	MOVQ   w+0(FP), SI
	MOVQ   x+8(FP), DI
	MOVQ   xstride+16(FP), R10
	MOVQ   n+24(FP), CX
	MOVQ   ntok+32(FP), BX
	MOVQ   acc+40(FP), AX
	MOVQ   flags+56(FP), DX
	MOVQ   pf+64(FP), R13
	LEAQ   (R10)(R10*2), R11
	LEAQ   (DI)(R10*4), R12
	TESTQ  $1, DX
	JNE    ggzero
	VMOVUPS 0(AX), Z4
	VMOVUPS 64(AX), Z5
	VMOVUPS 128(AX), Z6
	VMOVUPS 192(AX), Z7
	VMOVUPS 256(AX), Z8
	VMOVUPS 320(AX), Z9
	VMOVUPS 384(AX), Z10
	VMOVUPS 448(AX), Z11
	VMOVUPS 512(AX), Z12
	VMOVUPS 576(AX), Z13
	VMOVUPS 640(AX), Z14
	VMOVUPS 704(AX), Z15
	VMOVUPS 768(AX), Z16
	VMOVUPS 832(AX), Z17
	VMOVUPS 896(AX), Z18
	VMOVUPS 960(AX), Z19
	VMOVUPS 1024(AX), Z20
	VMOVUPS 1088(AX), Z21
	VMOVUPS 1152(AX), Z22
	VMOVUPS 1216(AX), Z23
	VMOVUPS 1280(AX), Z24
	VMOVUPS 1344(AX), Z25
	VMOVUPS 1408(AX), Z26
	VMOVUPS 1472(AX), Z27
	JMP    ggloop

ggzero:
	VXORPS Z4, Z4, Z4
	VXORPS Z5, Z5, Z5
	VXORPS Z6, Z6, Z6
	VXORPS Z7, Z7, Z7
	VXORPS Z8, Z8, Z8
	VXORPS Z9, Z9, Z9
	VXORPS Z10, Z10, Z10
	VXORPS Z11, Z11, Z11
	VXORPS Z12, Z12, Z12
	VXORPS Z13, Z13, Z13
	VXORPS Z14, Z14, Z14
	VXORPS Z15, Z15, Z15
	VXORPS Z16, Z16, Z16
	VXORPS Z17, Z17, Z17
	VXORPS Z18, Z18, Z18
	VXORPS Z19, Z19, Z19
	VXORPS Z20, Z20, Z20
	VXORPS Z21, Z21, Z21
	VXORPS Z22, Z22, Z22
	VXORPS Z23, Z23, Z23
	VXORPS Z24, Z24, Z24
	VXORPS Z25, Z25, Z25
	VXORPS Z26, Z26, Z26
	VXORPS Z27, Z27, Z27

ggloop:
	PREFETCHT0 (SI)(R13*1)
	PREFETCHT0 64(SI)(R13*1)
	VCVTPH2PS (SI), Z0
	VCVTPH2PS 32(SI), Z1
	VCVTPH2PS 64(SI), Z2
	VCVTPH2PS 96(SI), Z3
	GGTOK((DI), Z4, Z5, Z6, Z7)
	CMPQ      BX, $2
	JLT       ggnext
	GGTOK((DI)(R10*1), Z8, Z9, Z10, Z11)
	CMPQ      BX, $3
	JLT       ggnext
	GGTOK((DI)(R10*2), Z12, Z13, Z14, Z15)
	CMPQ      BX, $4
	JLT       ggnext
	GGTOK((DI)(R11*1), Z16, Z17, Z18, Z19)
	CMPQ      BX, $5
	JLT       ggnext
	GGTOK((R12), Z20, Z21, Z22, Z23)
	CMPQ      BX, $6
	JLT       ggnext
	GGTOK((R12)(R10*1), Z24, Z25, Z26, Z27)

ggnext:
	ADDQ $128, SI
	ADDQ $256, DI
	ADDQ $256, R12
	SUBQ $64, CX
	JNE  ggloop

	TESTQ $2, DX
	JNE   ggfinal
	VMOVUPS Z4, 0(AX)
	VMOVUPS Z5, 64(AX)
	VMOVUPS Z6, 128(AX)
	VMOVUPS Z7, 192(AX)
	VMOVUPS Z8, 256(AX)
	VMOVUPS Z9, 320(AX)
	VMOVUPS Z10, 384(AX)
	VMOVUPS Z11, 448(AX)
	VMOVUPS Z12, 512(AX)
	VMOVUPS Z13, 576(AX)
	VMOVUPS Z14, 640(AX)
	VMOVUPS Z15, 704(AX)
	VMOVUPS Z16, 768(AX)
	VMOVUPS Z17, 832(AX)
	VMOVUPS Z18, 896(AX)
	VMOVUPS Z19, 960(AX)
	VMOVUPS Z20, 1024(AX)
	VMOVUPS Z21, 1088(AX)
	VMOVUPS Z22, 1152(AX)
	VMOVUPS Z23, 1216(AX)
	VMOVUPS Z24, 1280(AX)
	VMOVUPS Z25, 1344(AX)
	VMOVUPS Z26, 1408(AX)
	VMOVUPS Z27, 1472(AX)
	VZEROUPPER
	RET

ggfinal:
	MOVQ out+48(FP), AX
	GGREDUCE(Z4, Z5, Z6, Z7, (AX))
	GGREDUCE(Z8, Z9, Z10, Z11, 4(AX))
	GGREDUCE(Z12, Z13, Z14, Z15, 8(AX))
	GGREDUCE(Z16, Z17, Z18, Z19, 12(AX))
	GGREDUCE(Z20, Z21, Z22, Z23, 16(AX))
	GGREDUCE(Z24, Z25, Z26, Z27, 20(AX))
	VZEROUPPER
	RET
