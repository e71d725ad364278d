#include "textflag.h"

// VPERMD order that undoes the in-lane interleave of VPACKSSDW/VPACKSSWB
// (ggml's perm in quantize_row_q8_0).
DATA q8actperm<>+0(SB)/4, $0
DATA q8actperm<>+4(SB)/4, $4
DATA q8actperm<>+8(SB)/4, $1
DATA q8actperm<>+12(SB)/4, $5
DATA q8actperm<>+16(SB)/4, $2
DATA q8actperm<>+20(SB)/4, $6
DATA q8actperm<>+24(SB)/4, $3
DATA q8actperm<>+28(SB)/4, $7
GLOBL q8actperm<>(SB), RODATA|NOPTR, $32

// func quantizeActQ8AVX2(x *float32, qs *int8, ds *float32, nb int)
// ggml's AVX2 quantize_row_q8_0 over nb blocks of 32 values: amax by
// lanes, d = amax/127 stored f16-rounded, values times 127/amax (0 when
// amax is 0) rounded to nearest even and packed to int8 in order. The same
// float operations as QuantizeActQ8's Go loop, so the same bytes.
TEXT ·quantizeActQ8AVX2(SB), NOSPLIT, $0-32
	MOVQ         x+0(FP), SI
	MOVQ         qs+8(FP), DI
	MOVQ         ds+16(FP), DX
	MOVQ         nb+24(FP), CX
	MOVL         $0x7fffffff, AX
	VMOVD        AX, X15
	VPBROADCASTD X15, Y15
	MOVL         $0x42fe0000, AX // 127.0
	VMOVD        AX, X13
	VMOVDQU      q8actperm<>(SB), Y14
	VXORPS       X12, X12, X12

qaloop:
	TESTQ        CX, CX
	JEQ          qadone
	VMOVUPS      (SI), Y0
	VMOVUPS      32(SI), Y1
	VMOVUPS      64(SI), Y2
	VMOVUPS      96(SI), Y3
	VANDPS       Y15, Y0, Y4
	VANDPS       Y15, Y1, Y5
	VANDPS       Y15, Y2, Y6
	VANDPS       Y15, Y3, Y7
	VMAXPS       Y5, Y4, Y4
	VMAXPS       Y7, Y6, Y6
	VMAXPS       Y6, Y4, Y4
	VEXTRACTF128 $1, Y4, X5
	VMAXPS       X5, X4, X4
	VMOVHLPS     X4, X4, X5
	VMAXPS       X5, X4, X4
	VMOVSHDUP    X4, X5
	VMAXSS       X5, X4, X4      // amax
	VDIVSS       X13, X4, X8     // d = amax / 127
	VCVTPS2PH    $0, X8, X9
	VCVTPH2PS    X9, X9
	VMOVSS       X9, (DX)
	VXORPS       X10, X10, X10   // id = 0 when amax == 0
	VUCOMISS     X12, X4
	JEQ          qascale
	VDIVSS       X4, X13, X10    // id = 127 / amax

qascale:
	VBROADCASTSS X10, Y10
	VMULPS       Y10, Y0, Y0
	VMULPS       Y10, Y1, Y1
	VMULPS       Y10, Y2, Y2
	VMULPS       Y10, Y3, Y3
	VROUNDPS     $0, Y0, Y0
	VROUNDPS     $0, Y1, Y1
	VROUNDPS     $0, Y2, Y2
	VROUNDPS     $0, Y3, Y3
	VCVTPS2DQ    Y0, Y0
	VCVTPS2DQ    Y1, Y1
	VCVTPS2DQ    Y2, Y2
	VCVTPS2DQ    Y3, Y3
	VPACKSSDW    Y1, Y0, Y0
	VPACKSSDW    Y3, Y2, Y2
	VPACKSSWB    Y2, Y0, Y0
	VPERMD       Y0, Y14, Y0
	VMOVDQU      Y0, (DI)
	ADDQ         $128, SI
	ADDQ         $32, DI
	ADDQ         $4, DX
	DECQ         CX
	JMP          qaloop

qadone:
	VZEROUPPER
	RET
