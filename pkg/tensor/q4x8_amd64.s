// q4_0 x q8_0 products over the packed eight-row layout (see q4x8.go),
// with llama.cpp's repacked-q4_0 rounding: per block and row the exact
// integer dot product, converted once and chained as
// acc = fma(isum, dw*dx, acc). Lane r of an accumulator is row r.

#include "textflag.h"

DATA q4x8mask<>+0(SB)/8, $0x0f0f0f0f0f0f0f0f
DATA q4x8mask<>+8(SB)/8, $0x0f0f0f0f0f0f0f0f
DATA q4x8mask<>+16(SB)/8, $0x0f0f0f0f0f0f0f0f
DATA q4x8mask<>+24(SB)/8, $0x0f0f0f0f0f0f0f0f
GLOBL q4x8mask<>(SB), RODATA|NOPTR, $32

DATA q4x8ones<>+0(SB)/8, $0x0001000100010001
DATA q4x8ones<>+8(SB)/8, $0x0001000100010001
DATA q4x8ones<>+16(SB)/8, $0x0001000100010001
DATA q4x8ones<>+24(SB)/8, $0x0001000100010001
GLOBL q4x8ones<>(SB), RODATA|NOPTR, $32

// One low/high nibble product pair: u8 nibbles LO/HI times the activation
// dwords at XP+OFF and XP+OFF+16 broadcast to every row, added as int16
// into Y9 (each int16 lane sums at most 16 products of 15*127: no overflow).
#define Q4PAIR(XP, OFF, LO, HI) \
	VPBROADCASTD OFF(XP), Y11      \
	VPMADDUBSW   Y11, LO, Y10      \
	VPADDW       Y10, Y9, Y9       \
	VPBROADCASTD OFF+16(XP), Y11   \
	VPMADDUBSW   Y11, HI, Y10      \
	VPADDW       Y10, Y9, Y9

// One token: the block's eight row sums against the activation at XP
// (its scale at DA, 8*sum of its values at DA+4), chained into ACC.
#define Q4TOK(XP, DA, ACC) \
	VPBROADCASTD 0(XP), Y11        \
	VPMADDUBSW   Y11, Y0, Y9       \
	VPBROADCASTD 16(XP), Y11       \
	VPMADDUBSW   Y11, Y4, Y10      \
	VPADDW       Y10, Y9, Y9       \
	Q4PAIR(XP, 4, Y1, Y5)          \
	Q4PAIR(XP, 8, Y2, Y6)          \
	Q4PAIR(XP, 12, Y3, Y7)         \
	VPMADDWD     q4x8ones<>(SB), Y9, Y9 \
	VPBROADCASTD 4 DA, Y10          \
	VPSUBD       Y10, Y9, Y9       \
	VCVTDQ2PS    Y9, Y9            \
	VBROADCASTSS DA, Y10           \
	VMULPS       Y10, Y8, Y10      \
	VFMADD231PS  Y10, Y9, ACC

// func q4x8AVX2(w unsafe.Pointer, nb int, xq *int8, xstride int, xds *float32, ntok int, out *[64]float32)
// Eight packed rows (nb blocks at w) against ntok (1..4) activation rows
// xstride bytes apart; xds holds per token and block the activation scale
// and 8*sum of its values (int32), rows of 2*nb words.
// out[c*8+r] = row r . token c.
TEXT ·q4x8AVX2(SB), NOSPLIT, $0-56
	MOVQ   w+0(FP), SI
	MOVQ   nb+8(FP), CX
	MOVQ   xq+16(FP), DI
	MOVQ   xstride+24(FP), R8
	MOVQ   xds+32(FP), DX
	MOVQ   ntok+40(FP), AX
	LEAQ   (DI)(R8*1), R11
	LEAQ   (R11)(R8*1), R12
	LEAQ   (R12)(R8*1), R13
	MOVQ   CX, R9
	SHLQ   $3, R9
	LEAQ   (R9)(R9*2), R10
	VXORPS Y12, Y12, Y12
	VXORPS Y13, Y13, Y13
	VXORPS Y14, Y14, Y14
	VXORPS Y15, Y15, Y15

q4x8loop:
	// Batches run the kernel at a pace the hardware prefetcher does not
	// follow: fetch the weights ahead (a single token streams faster
	// without).
	CMPQ       AX, $1
	JEQ        q4x8unpack
	PREFETCHT0 2048(SI)
	PREFETCHT0 2112(SI)
	PREFETCHT0 2176(SI)

q4x8unpack:
	VMOVDQU   16(SI), Y9
	VPSRLW    $4, Y9, Y10
	VPAND     q4x8mask<>(SB), Y9, Y0
	VPAND     q4x8mask<>(SB), Y10, Y4
	VMOVDQU   48(SI), Y9
	VPSRLW    $4, Y9, Y10
	VPAND     q4x8mask<>(SB), Y9, Y1
	VPAND     q4x8mask<>(SB), Y10, Y5
	VMOVDQU   80(SI), Y9
	VPSRLW    $4, Y9, Y10
	VPAND     q4x8mask<>(SB), Y9, Y2
	VPAND     q4x8mask<>(SB), Y10, Y6
	VMOVDQU   112(SI), Y9
	VPSRLW    $4, Y9, Y10
	VPAND     q4x8mask<>(SB), Y9, Y3
	VPAND     q4x8mask<>(SB), Y10, Y7
	VCVTPH2PS (SI), Y8
	Q4TOK(DI, (DX), Y12)
	CMPQ      AX, $2
	JLT       q4x8next
	Q4TOK(R11, (DX)(R9*1), Y13)
	CMPQ      AX, $3
	JLT       q4x8next
	Q4TOK(R12, (DX)(R9*2), Y14)
	CMPQ      AX, $4
	JLT       q4x8next
	Q4TOK(R13, (DX)(R10*1), Y15)

q4x8next:
	ADDQ $144, SI
	ADDQ $32, DI
	ADDQ $32, R11
	ADDQ $32, R12
	ADDQ $32, R13
	ADDQ $8, DX
	DECQ CX
	JNE  q4x8loop

	MOVQ    out+48(FP), AX
	VMOVUPS Y12, (AX)
	VMOVUPS Y13, 32(AX)
	VMOVUPS Y14, 64(AX)
	VMOVUPS Y15, 96(AX)
	VZEROUPPER
	RET

// The eight rows' sums for one token with AVX-512 VNNI: VPDPBUSD adds the
// four nibble-times-activation products of each row lane directly in
// int32, starting from -8*sum(x) (broadcast from DA+4); XP is the
// activation block, DA its scale. Same integers and float operations as
// Q4TOK.
#define Q4VTOK(XP, DA, ACC) \
	VPBROADCASTD  4 DA, Y9       \
	VPSUBD        Y9, Y15, Y9   \
	VPDPBUSD.BCST 0 XP, Y0, Y9  \
	VPDPBUSD.BCST 16 XP, Y4, Y9 \
	VPDPBUSD.BCST 4 XP, Y1, Y9  \
	VPDPBUSD.BCST 20 XP, Y5, Y9 \
	VPDPBUSD.BCST 8 XP, Y2, Y9  \
	VPDPBUSD.BCST 24 XP, Y6, Y9 \
	VPDPBUSD.BCST 12 XP, Y3, Y9 \
	VPDPBUSD.BCST 28 XP, Y7, Y9 \
	VCVTDQ2PS     Y9, Y9        \
	VMULPS.BCST   DA, Y8, Y10   \
	VFMADD231PS   Y10, Y9, ACC

// func q4x8VNNI(w unsafe.Pointer, nb int, xq *int8, xstride int, xds *float32, ntok int, out *[64]float32)
// q4x8AVX2 for up to eight tokens.
TEXT ·q4x8VNNI(SB), NOSPLIT, $0-56
	MOVQ   w+0(FP), SI
	MOVQ   nb+8(FP), CX
	MOVQ   xq+16(FP), DI
	MOVQ   xstride+24(FP), R8
	MOVQ   xds+32(FP), DX
	MOVQ   ntok+40(FP), AX
	LEAQ   (DI)(R8*1), R11
	LEAQ   (R11)(R8*1), R12
	LEAQ   (R12)(R8*1), R13
	MOVQ   CX, R9
	SHLQ   $3, R9
	LEAQ   (R9)(R9*2), R10
	LEAQ   (DX)(R9*4), BX
	VPXOR  Y15, Y15, Y15
	VXORPS Y16, Y16, Y16
	VXORPS Y17, Y17, Y17
	VXORPS Y18, Y18, Y18
	VXORPS Y19, Y19, Y19
	VXORPS Y20, Y20, Y20
	VXORPS Y21, Y21, Y21
	VXORPS Y22, Y22, Y22
	VXORPS Y23, Y23, Y23

q4vloop:
	CMPQ       AX, $1
	JEQ        q4vunpack
	PREFETCHT0 2048(SI)
	PREFETCHT0 2112(SI)
	PREFETCHT0 2176(SI)

q4vunpack:
	VMOVDQU   16(SI), Y9
	VPSRLW    $4, Y9, Y10
	VPAND     q4x8mask<>(SB), Y9, Y0
	VPAND     q4x8mask<>(SB), Y10, Y4
	VMOVDQU   48(SI), Y9
	VPSRLW    $4, Y9, Y10
	VPAND     q4x8mask<>(SB), Y9, Y1
	VPAND     q4x8mask<>(SB), Y10, Y5
	VMOVDQU   80(SI), Y9
	VPSRLW    $4, Y9, Y10
	VPAND     q4x8mask<>(SB), Y9, Y2
	VPAND     q4x8mask<>(SB), Y10, Y6
	VMOVDQU   112(SI), Y9
	VPSRLW    $4, Y9, Y10
	VPAND     q4x8mask<>(SB), Y9, Y3
	VPAND     q4x8mask<>(SB), Y10, Y7
	VCVTPH2PS (SI), Y8
	Q4VTOK((DI), (DX), Y16)
	CMPQ      AX, $2
	JLT       q4vnext
	Q4VTOK((R11), (DX)(R9*1), Y17)
	CMPQ      AX, $3
	JLT       q4vnext
	Q4VTOK((R12), (DX)(R9*2), Y18)
	CMPQ      AX, $4
	JLT       q4vnext
	Q4VTOK((R13), (DX)(R10*1), Y19)
	CMPQ      AX, $5
	JLT       q4vnext
	Q4VTOK((DI)(R8*4), (BX), Y20)
	CMPQ      AX, $6
	JLT       q4vnext
	Q4VTOK((R11)(R8*4), (BX)(R9*1), Y21)
	CMPQ      AX, $7
	JLT       q4vnext
	Q4VTOK((R12)(R8*4), (BX)(R9*2), Y22)
	CMPQ      AX, $8
	JLT       q4vnext
	Q4VTOK((R13)(R8*4), (BX)(R10*1), Y23)

q4vnext:
	ADDQ $144, SI
	ADDQ $32, DI
	ADDQ $32, R11
	ADDQ $32, R12
	ADDQ $32, R13
	ADDQ $8, DX
	ADDQ $8, BX
	DECQ CX
	JNE  q4vloop

	MOVQ    out+48(FP), AX
	VMOVUPS Y16, (AX)
	VMOVUPS Y17, 32(AX)
	VMOVUPS Y18, 64(AX)
	VMOVUPS Y19, 96(AX)
	VMOVUPS Y20, 128(AX)
	VMOVUPS Y21, 160(AX)
	VMOVUPS Y22, 192(AX)
	VMOVUPS Y23, 224(AX)
	VZEROUPPER
	RET
