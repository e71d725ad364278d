// Register-blocked f16 kernel. Each (row, token) result goes through
// exactly the operations of dotF16AVX2 (dot_amd64.s), so a result never
// depends on how many tokens were computed together.

#include "textflag.h"

#define HSUMOUT(ACC, XACC, OUT) \
	VEXTRACTF128 $1, ACC, X1  \
	VADDPS       X1, XACC, X0 \
	VMOVHLPS     X0, X0, X1   \
	VADDPS       X1, X0, X0   \
	VMOVSHDUP    X0, X1       \
	VADDSS       X1, X0, X0   \
	VMOVSS       X0, OUT

#define LOADACC(R) \
	VMOVUPS (R), Y0      \
	VMOVUPS 32(R), Y1    \
	VMOVUPS 64(R), Y2    \
	VMOVUPS 96(R), Y3    \
	VMOVUPS 128(R), Y4   \
	VMOVUPS 160(R), Y5   \
	VMOVUPS 192(R), Y6   \
	VMOVUPS 224(R), Y7   \
	VMOVUPS 256(R), Y8   \
	VMOVUPS 288(R), Y9   \
	VMOVUPS 320(R), Y10  \
	VMOVUPS 352(R), Y11

#define STOREACC(R) \
	VMOVUPS Y0, (R)      \
	VMOVUPS Y1, 32(R)    \
	VMOVUPS Y2, 64(R)    \
	VMOVUPS Y3, 96(R)    \
	VMOVUPS Y4, 128(R)   \
	VMOVUPS Y5, 160(R)   \
	VMOVUPS Y6, 192(R)   \
	VMOVUPS Y7, 224(R)   \
	VMOVUPS Y8, 256(R)   \
	VMOVUPS Y9, 288(R)   \
	VMOVUPS Y10, 320(R)  \
	VMOVUPS Y11, 352(R)

// func dotF16x3AVX2(w unsafe.Pointer, x *float32, xstride, n int, acc *[96]float32, out *[3]float32)
// One f16 row against three f32 rows xstride bytes apart, each with
// dotF16AVX2's four accumulators and reduction. The accumulators start
// from acc (so a long row can be done in pieces of whole 32-value steps
// with the activations kept in L1). out == nil: store them back to acc;
// else finish (eight-value steps for the rest of n, a multiple of 8, then
// the reduction) into out.
TEXT ·dotF16x3AVX2(SB), NOSPLIT, $0-48
	MOVQ   w+0(FP), SI
	MOVQ   x+8(FP), DI
	MOVQ   xstride+16(FP), R8
	MOVQ   n+24(FP), CX
	MOVQ   acc+32(FP), R9
	LEAQ   (DI)(R8*1), R11
	LEAQ   (R11)(R8*1), R12
	LOADACC(R9)

f16x3loop32:
	CMPQ        CX, $32
	JLT         f16x3loop8
	PREFETCHT0  2048(SI)
	VCVTPH2PS   (SI), Y12
	VCVTPH2PS   16(SI), Y13
	VCVTPH2PS   32(SI), Y14
	VCVTPH2PS   48(SI), Y15
	VFMADD231PS (DI), Y12, Y0
	VFMADD231PS 32(DI), Y13, Y1
	VFMADD231PS 64(DI), Y14, Y2
	VFMADD231PS 96(DI), Y15, Y3
	VFMADD231PS (R11), Y12, Y4
	VFMADD231PS 32(R11), Y13, Y5
	VFMADD231PS 64(R11), Y14, Y6
	VFMADD231PS 96(R11), Y15, Y7
	VFMADD231PS (R12), Y12, Y8
	VFMADD231PS 32(R12), Y13, Y9
	VFMADD231PS 64(R12), Y14, Y10
	VFMADD231PS 96(R12), Y15, Y11
	ADDQ        $64, SI
	ADDQ        $128, DI
	ADDQ        $128, R11
	ADDQ        $128, R12
	SUBQ        $32, CX
	JMP         f16x3loop32

f16x3loop8:
	MOVQ        out+40(FP), AX
	TESTQ       AX, AX
	JNE         f16x3tail
	STOREACC(R9)
	VZEROUPPER
	RET

f16x3tail:
	CMPQ        CX, $8
	JLT         f16x3reduce
	VCVTPH2PS   (SI), Y12
	VFMADD231PS (DI), Y12, Y0
	VFMADD231PS (R11), Y12, Y4
	VFMADD231PS (R12), Y12, Y8
	ADDQ        $16, SI
	ADDQ        $32, DI
	ADDQ        $32, R11
	ADDQ        $32, R12
	SUBQ        $8, CX
	JMP         f16x3tail

f16x3reduce:
	VADDPS Y2, Y0, Y0
	VADDPS Y3, Y1, Y1
	VADDPS Y1, Y0, Y0
	VADDPS Y6, Y4, Y4
	VADDPS Y7, Y5, Y5
	VADDPS Y5, Y4, Y4
	VADDPS Y10, Y8, Y8
	VADDPS Y11, Y9, Y9
	VADDPS Y9, Y8, Y8
	// Y0 first: the sums go through X0 and X1.
	HSUMOUT(Y0, X0, (AX))
	HSUMOUT(Y4, X4, 4(AX))
	HSUMOUT(Y8, X8, 8(AX))
	VZEROUPPER
	RET
