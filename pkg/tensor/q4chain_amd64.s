// q4_0 dot products with llama.cpp's repacked-q4_0 rounding (its
// q4_0_8x8 GEMV/GEMM kernels, used for every q4_0 matrix whose row count
// is a multiple of 8): each block's integer dot product is converted to
// float once and accumulated as acc = fma(isum, dw*dx, acc), block by
// block. All three kernels below produce bit-identical results for the
// same (row, token).

#include "textflag.h"

// Unpack the q4_0 block whose quants start at QADDR into signed bytes in
// Y4 (|w| in Y5), then the int32x8 pair sums of w*x (x in Y3) into OUT.
// Y13: 0x08 bytes, Y14: 0x0F bytes, Y15: int16 ones. Clobbers Y4-Y6.
#define Q4INT(QADDR, OUT) \
	VMOVDQU     QADDR, X4      \
	VPSRLW      $4, X4, X5     \
	VINSERTI128 $1, X5, Y4, Y4 \
	VPAND       Y14, Y4, Y4    \
	VPSUBB      Y13, Y4, Y4    \
	VPSIGNB     Y4, Y4, Y5     \
	VPSIGNB     Y4, Y3, Y6     \
	VPMADDUBSW  Y6, Y5, Y6     \
	VPMADDWD    Y15, Y6, OUT

#define Q4CONSTS \
	VPCMPEQW     Y15, Y15, Y15 \
	VPSRLW       $15, Y15, Y15 \
	MOVL         $0x0F0F0F0F, AX \
	VMOVD        AX, X14 \
	VPBROADCASTD X14, Y14 \
	MOVL         $0x08080808, AX \
	VMOVD        AX, X13 \
	VPBROADCASTD X13, Y13

// func dotQ4Rows8AVX2(w unsafe.Pointer, rowBytes int, xq *int8, ds *float32, nb int, out *[8]float32)
// Eight consecutive rows (rowBytes apart) against one activation row.
TEXT ·dotQ4Rows8AVX2(SB), NOSPLIT, $0-48
	MOVQ   w+0(FP), SI
	MOVQ   rowBytes+8(FP), R8
	MOVQ   xq+16(FP), DI
	MOVQ   ds+24(FP), DX
	MOVQ   nb+32(FP), CX
	LEAQ   (R8)(R8*2), R9
	LEAQ   (SI)(R8*4), BX
	VXORPS Y12, Y12, Y12
	Q4CONSTS

r8loop:
	TESTQ   CX, CX
	JEQ     r8done
	VMOVDQU (DI), Y3
	Q4INT(2(SI), Y0)
	Q4INT(2(SI)(R8*1), Y1)
	Q4INT(2(SI)(R8*2), Y2)
	Q4INT(2(SI)(R9*1), Y7)
	Q4INT(2(BX), Y8)
	Q4INT(2(BX)(R8*1), Y9)
	Q4INT(2(BX)(R8*2), Y10)
	Q4INT(2(BX)(R9*1), Y11)
	// Horizontal sums: rows 0-3 in Y0, rows 4-7 in Y8 (per 128-bit half),
	// then the halves added: Y1 = [row0 .. row7].
	VPHADDD    Y1, Y0, Y0
	VPHADDD    Y7, Y2, Y2
	VPHADDD    Y2, Y0, Y0
	VPHADDD    Y9, Y8, Y8
	VPHADDD    Y11, Y10, Y10
	VPHADDD    Y10, Y8, Y8
	VPERM2I128 $0x20, Y8, Y0, Y1
	VPERM2I128 $0x31, Y8, Y0, Y2
	VPADDD     Y2, Y1, Y1
	VCVTDQ2PS  Y1, Y1
	// The eight rows' f16 scales times the activation scale.
	MOVWLZX      (SI), AX
	VMOVD        AX, X4
	VPINSRW      $1, (SI)(R8*1), X4, X4
	VPINSRW      $2, (SI)(R8*2), X4, X4
	VPINSRW      $3, (SI)(R9*1), X4, X4
	VPINSRW      $4, (BX), X4, X4
	VPINSRW      $5, (BX)(R8*1), X4, X4
	VPINSRW      $6, (BX)(R8*2), X4, X4
	VPINSRW      $7, (BX)(R9*1), X4, X4
	VCVTPH2PS    X4, Y4
	VBROADCASTSS (DX), Y5
	VMULPS       Y5, Y4, Y4
	VFMADD231PS  Y4, Y1, Y12
	ADDQ         $18, SI
	ADDQ         $18, BX
	ADDQ         $32, DI
	ADDQ         $4, DX
	DECQ         CX
	JMP          r8loop

r8done:
	MOVQ    out+40(FP), AX
	VMOVUPS Y12, (AX)
	VZEROUPPER
	RET

// func dotQ4Tok4AVX2(w unsafe.Pointer, xq *int8, dsT *float32, nb, xstride int, out *[4]float32)
// One row against four activation rows (xstride bytes apart); dsT holds
// the four rows' scales interleaved per block: dsT[4*b+t].
TEXT ·dotQ4Tok4AVX2(SB), NOSPLIT, $0-48
	MOVQ   w+0(FP), SI
	MOVQ   xq+8(FP), DI
	MOVQ   dsT+16(FP), DX
	MOVQ   nb+24(FP), CX
	MOVQ   xstride+32(FP), R8
	LEAQ   (R8)(R8*2), R9
	VXORPS Y10, Y10, Y10
	Q4CONSTS

t4loop:
	TESTQ        CX, CX
	JEQ          t4done
	MOVWLZX      (SI), AX
	VMOVD        AX, X1
	VCVTPH2PS    X1, X1
	VBROADCASTSS X1, X1
	VMOVDQU      2(SI), X2
	VPSRLW       $4, X2, X4
	VINSERTI128  $1, X4, Y2, Y2
	VPAND        Y14, Y2, Y2
	VPSUBB       Y13, Y2, Y2
	VPSIGNB      Y2, Y2, Y4
	VMOVDQU      (DI), Y3
	VPSIGNB      Y2, Y3, Y5
	VPMADDUBSW   Y5, Y4, Y5
	VPMADDWD     Y15, Y5, Y6
	VMOVDQU      (DI)(R8*1), Y3
	VPSIGNB      Y2, Y3, Y5
	VPMADDUBSW   Y5, Y4, Y5
	VPMADDWD     Y15, Y5, Y7
	VMOVDQU      (DI)(R8*2), Y3
	VPSIGNB      Y2, Y3, Y5
	VPMADDUBSW   Y5, Y4, Y5
	VPMADDWD     Y15, Y5, Y8
	VMOVDQU      (DI)(R9*1), Y3
	VPSIGNB      Y2, Y3, Y5
	VPMADDUBSW   Y5, Y4, Y5
	VPMADDWD     Y15, Y5, Y9
	VPHADDD      Y7, Y6, Y6
	VPHADDD      Y9, Y8, Y8
	VPHADDD      Y8, Y6, Y6
	VEXTRACTI128 $1, Y6, X7
	VPADDD       X7, X6, X6
	VCVTDQ2PS    X6, X6
	VMULPS       (DX), X1, X5
	VFMADD231PS  X5, X6, X10
	ADDQ         $18, SI
	ADDQ         $32, DI
	ADDQ         $16, DX
	DECQ         CX
	JMP          t4loop

t4done:
	MOVQ    out+40(FP), AX
	VMOVUPS X10, (AX)
	VZEROUPPER
	RET

// func dotQ4ChainAVX2(w unsafe.Pointer, xq *int8, ds *float32, nb int) float32
// One row against one activation row.
TEXT ·dotQ4ChainAVX2(SB), NOSPLIT, $0-36
	MOVQ   w+0(FP), SI
	MOVQ   xq+8(FP), DI
	MOVQ   ds+16(FP), DX
	MOVQ   nb+24(FP), CX
	VXORPS X0, X0, X0
	Q4CONSTS

c1loop:
	TESTQ        CX, CX
	JEQ          c1done
	VMOVDQU      (DI), Y3
	Q4INT(2(SI), Y6)
	VEXTRACTI128 $1, Y6, X7
	VPADDD       X7, X6, X6
	VPSHUFD      $0x4E, X6, X7
	VPADDD       X7, X6, X6
	VPSHUFD      $0xB1, X6, X7
	VPADDD       X7, X6, X6
	VCVTDQ2PS    X6, X6
	MOVWLZX      (SI), AX
	VMOVD        AX, X1
	VCVTPH2PS    X1, X1
	VMULSS       (DX), X1, X1
	VFMADD231SS  X1, X6, X0
	ADDQ         $18, SI
	ADDQ         $32, DI
	ADDQ         $4, DX
	DECQ         CX
	JMP          c1loop

c1done:
	VZEROUPPER
	MOVSS X0, ret+32(FP)
	RET
