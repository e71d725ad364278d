#include "textflag.h"

// F32ToF16Row's kernel, 16 values per iteration (n is a multiple of 16).
// VCVTPS2PH with immediate 0 rounds to nearest even whatever MXCSR says,
// as F32ToF16 does.

// func f32ToF16F16C(dst *uint16, src *float32, n int)
TEXT ·f32ToF16F16C(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n+16(FP), CX
	SHRQ $4, CX
	JZ   narrowDone

narrowLoop:
	VMOVUPS   (SI), Y0
	VMOVUPS   32(SI), Y1
	VCVTPS2PH $0, Y0, X2
	VCVTPS2PH $0, Y1, X3
	VMOVDQU   X2, (DI)
	VMOVDQU   X3, 16(DI)
	ADDQ      $64, SI
	ADDQ      $32, DI
	DECQ      CX
	JNZ       narrowLoop

narrowDone:
	VZEROUPPER
	RET
