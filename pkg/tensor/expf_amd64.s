// exactness: glibc 2.36's expf (__expf_fma, see expf.go), four lanes at a
// time: the same float64 operations and fusions per lane, the table read
// with a gather, the result rounded to float32 once.

#include "textflag.h"

DATA expfK<>+0(SB)/8, $0x40471547652b82fe  // 32/ln2
DATA expfK<>+8(SB)/8, $0x4338000000000000  // shift 0x1.8p52
DATA expfK<>+16(SB)/8, $0x3ebc6af84b912394 // C0
DATA expfK<>+24(SB)/8, $0x3f2ebfce50fac4f3 // C1
DATA expfK<>+32(SB)/8, $0x3f962e42ff0c52d6 // C2
DATA expfK<>+40(SB)/8, $0x3ff0000000000000 // 1
DATA expfK<>+48(SB)/8, $31                 // table index mask
DATA expfK<>+56(SB)/4, $0x7ff00000         // |x| exponent bits (as glibc's top12 & 0x7ff)
DATA expfK<>+60(SB)/4, $0x42a00000         // above: |x| >= 88, inf or nan
GLOBL expfK<>(SB), RODATA|NOPTR, $64

// func expfRowAVX2(dst, src *float32, n int, tab *uint64) int
// Computes dst[i] = expf(src[i]) for groups of four and returns how many
// it did: it stops at the end (fewer than four left) or before a group
// holding a value glibc's special-case path handles (left to the caller).
TEXT ·expfRowAVX2(SB), NOSPLIT, $0-40
	MOVQ         dst+0(FP), DI
	MOVQ         src+8(FP), SI
	MOVQ         n+16(FP), CX
	MOVQ         tab+24(FP), R8
	XORQ         R9, R9
	VBROADCASTSD expfK<>+0(SB), Y15
	VBROADCASTSD expfK<>+8(SB), Y14
	VBROADCASTSD expfK<>+16(SB), Y13
	VBROADCASTSD expfK<>+24(SB), Y12
	VBROADCASTSD expfK<>+32(SB), Y11
	VBROADCASTSD expfK<>+40(SB), Y10
	VBROADCASTSD expfK<>+48(SB), Y9
	VBROADCASTSS expfK<>+56(SB), X8
	VBROADCASTSS expfK<>+60(SB), X7

expfloop:
	CMPQ        CX, $4
	JLT         expfdone
	VMOVUPS     (SI), X0
	VPAND       X8, X0, X1
	VPCMPGTD    X7, X1, X1
	VMOVMSKPS   X1, AX
	TESTL       AX, AX
	JNZ         expfdone
	VCVTPS2PD   X0, Y0          // xd
	VMOVAPD     Y14, Y1
	VFMADD231PD Y15, Y0, Y1     // kd = InvLn2N*xd + shift
	VMOVAPD     Y1, Y2          // ki = bits(kd)
	VSUBPD      Y14, Y1, Y1     // kd -= shift
	VMOVAPD     Y1, Y3
	VFMSUB231PD Y15, Y0, Y3     // r = InvLn2N*xd - kd
	VMOVAPD     Y12, Y4
	VFMADD231PD Y13, Y3, Y4     // z = C0*r + C1
	VMULPD      Y3, Y3, Y5      // r2 = r*r
	VMOVAPD     Y10, Y6
	VFMADD231PD Y11, Y3, Y6     // y = r*C2 + 1
	VFMADD231PD Y5, Y4, Y6      // y = z*r2 + y
	VPAND       Y9, Y2, Y4      // ki % 32
	VPCMPEQQ    Y5, Y5, Y5
	VPGATHERQQ  Y5, (R8)(Y4*8), Y1
	VPSLLQ      $47, Y2, Y2
	VPADDQ      Y2, Y1, Y1      // s = tab[ki%32] + ki<<47
	VMULPD      Y1, Y6, Y6
	VCVTPD2PSY  Y6, X6          // float32(y*s)
	VMOVUPS     X6, (DI)
	ADDQ        $16, SI
	ADDQ        $16, DI
	SUBQ        $4, CX
	ADDQ        $4, R9
	JMP         expfloop

expfdone:
	VZEROUPPER
	MOVQ R9, ret+32(FP)
	RET
