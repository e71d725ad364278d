// exactness: quantize_row_q8_K_ref (see quantizeActQ8KGeneric) with the
// same float operations: amax and the first value reaching it, iscale =
// -127/that value, d = 1/iscale, each value times iscale rounded to
// nearest even (VCVTPS2DQ under Go's default MXCSR) and capped at 127,
// exact integer 16-value sums.

#include "textflag.h"

DATA q8kperm<>+0(SB)/4, $0
DATA q8kperm<>+4(SB)/4, $4
DATA q8kperm<>+8(SB)/4, $1
DATA q8kperm<>+12(SB)/4, $5
DATA q8kperm<>+16(SB)/4, $2
DATA q8kperm<>+20(SB)/4, $6
DATA q8kperm<>+24(SB)/4, $3
DATA q8kperm<>+28(SB)/4, $7
GLOBL q8kperm<>(SB), RODATA|NOPTR, $32

// Q8KMAX folds the magnitudes of values 32K..32K+7 (at SI) into ACC.
#define Q8KMAX(K, ACC) \
	VANDPS (32*(K))(SI), Y15, Y4 \
	VMAXPS Y4, ACC, ACC

// Q8KQ8 quantizes the eight values at OFF(SI) into int32 lanes Y.
#define Q8KQ8(OFF, Y) \
	VMULPS    OFF(SI), Y3, Y    \
	VCVTPS2DQ Y, Y              \
	VPMINSD   Y13, Y, Y

// Q8KQ64(H): values 64H..64H+63: their int8 quants and four 16-value
// sums.
#define Q8KQ64(H) \
	Q8KQ8(256*(H)+0, Y4)          \
	Q8KQ8(256*(H)+32, Y5)         \
	Q8KQ8(256*(H)+64, Y6)         \
	Q8KQ8(256*(H)+96, Y7)         \
	Q8KQ8(256*(H)+128, Y8)        \
	Q8KQ8(256*(H)+160, Y9)        \
	Q8KQ8(256*(H)+192, Y10)       \
	Q8KQ8(256*(H)+224, Y11)       \
	VPADDD       Y5, Y4, Y0       \
	VPADDD       Y7, Y6, Y1       \
	VPADDD       Y9, Y8, Y2       \
	VPADDD       Y11, Y10, Y12    \
	VPHADDD      Y1, Y0, Y0       \
	VPHADDD      Y12, Y2, Y2      \
	VPHADDD      Y2, Y0, Y0       \
	VEXTRACTI128 $1, Y0, X1       \
	VPADDD       X1, X0, X0       \
	VPACKSSDW    X0, X0, X0       \
	VMOVQ        X0, (8*(H))(BX)  \
	VPACKSSDW    Y5, Y4, Y4       \
	VPACKSSDW    Y7, Y6, Y6       \
	VPACKSSWB    Y6, Y4, Y4       \
	VPERMD       Y4, Y14, Y4      \
	VMOVDQU      Y4, (64*(H))(DI) \
	VPACKSSDW    Y9, Y8, Y8       \
	VPACKSSDW    Y11, Y10, Y10    \
	VPACKSSWB    Y10, Y8, Y8      \
	VPERMD       Y8, Y14, Y8      \
	VMOVDQU      Y8, (64*(H)+32)(DI)

// func quantizeActQ8KAVX2(x *float32, q *int8, d *float32, bsums *int16, nb int)
TEXT ·quantizeActQ8KAVX2(SB), NOSPLIT, $0-40
	MOVQ         x+0(FP), SI
	MOVQ         q+8(FP), DI
	MOVQ         d+16(FP), DX
	MOVQ         bsums+24(FP), BX
	MOVQ         nb+32(FP), CX
	MOVL         $0x7fffffff, AX
	VMOVD        AX, X15
	VPBROADCASTD X15, Y15
	MOVL         $127, AX
	VMOVD        AX, X13
	VPBROADCASTD X13, Y13
	VMOVDQU      q8kperm<>(SB), Y14

q8kloop:
	TESTQ  CX, CX
	JEQ    q8kdone
	VANDPS (SI), Y15, Y0
	VANDPS 32(SI), Y15, Y1
	VANDPS 64(SI), Y15, Y2
	VANDPS 96(SI), Y15, Y3
	Q8KMAX(4, Y0)
	Q8KMAX(5, Y1)
	Q8KMAX(6, Y2)
	Q8KMAX(7, Y3)
	Q8KMAX(8, Y0)
	Q8KMAX(9, Y1)
	Q8KMAX(10, Y2)
	Q8KMAX(11, Y3)
	Q8KMAX(12, Y0)
	Q8KMAX(13, Y1)
	Q8KMAX(14, Y2)
	Q8KMAX(15, Y3)
	Q8KMAX(16, Y0)
	Q8KMAX(17, Y1)
	Q8KMAX(18, Y2)
	Q8KMAX(19, Y3)
	Q8KMAX(20, Y0)
	Q8KMAX(21, Y1)
	Q8KMAX(22, Y2)
	Q8KMAX(23, Y3)
	Q8KMAX(24, Y0)
	Q8KMAX(25, Y1)
	Q8KMAX(26, Y2)
	Q8KMAX(27, Y3)
	Q8KMAX(28, Y0)
	Q8KMAX(29, Y1)
	Q8KMAX(30, Y2)
	Q8KMAX(31, Y3)
	VMAXPS       Y1, Y0, Y0
	VMAXPS       Y3, Y2, Y2
	VMAXPS       Y2, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VMAXPS       X1, X0, X0
	VMOVHLPS     X0, X0, X1
	VMAXPS       X1, X0, X0
	VMOVSHDUP    X0, X1
	VMAXSS       X1, X0, X0
	VXORPS       X1, X1, X1
	VUCOMISS     X1, X0
	JEQ          q8kzero      // amax 0 (or not a number)
	VBROADCASTSS X0, Y0

	// The first value whose magnitude is amax.
	XORQ AX, AX

q8kfind:
	VANDPS    (SI)(AX*1), Y15, Y1
	VCMPPS    $0, Y0, Y1, Y1
	VMOVMSKPS Y1, R8
	TESTL     R8, R8
	JNZ       q8kfound
	ADDQ      $32, AX
	CMPQ      AX, $1024
	JLT       q8kfind
	JMP       q8kzero

q8kfound:
	BSFL         R8, R8
	LEAQ         (AX)(R8*4), AX
	VMOVSS       (SI)(AX*1), X2
	MOVL         $0xc2fe0000, R8 // -127.0
	VMOVD        R8, X3
	VDIVSS       X2, X3, X3      // iscale = -127 / max
	MOVL         $0x3f800000, R8 // 1.0
	VMOVD        R8, X4
	VDIVSS       X3, X4, X4      // d = 1 / iscale
	VMOVSS       X4, (DX)
	VBROADCASTSS X3, Y3
	Q8KQ64(0)
	Q8KQ64(1)
	Q8KQ64(2)
	Q8KQ64(3)
	JMP          q8knext

q8kzero:
	VPXOR   Y1, Y1, Y1
	VMOVSS  X1, (DX)
	VMOVDQU Y1, (DI)
	VMOVDQU Y1, 32(DI)
	VMOVDQU Y1, 64(DI)
	VMOVDQU Y1, 96(DI)
	VMOVDQU Y1, 128(DI)
	VMOVDQU Y1, 160(DI)
	VMOVDQU Y1, 192(DI)
	VMOVDQU Y1, 224(DI)
	VMOVDQU Y1, (BX)

q8knext:
	ADDQ $1024, SI
	ADDQ $256, DI
	ADDQ $4, DX
	ADDQ $32, BX
	DECQ CX
	JMP  q8kloop

q8kdone:
	VZEROUPPER
	RET
