// AVX2 + FMA exp over the vocabulary for the sampler: Cephes expf (the
// range reduction and polynomial of avx_mathfun's exp256_ps), with sums
// accumulated in float64.

#include "textflag.h"

DATA expP0<>+0(SB)/4, $0x39506967
DATA expP0<>+4(SB)/4, $0x39506967
DATA expP0<>+8(SB)/4, $0x39506967
DATA expP0<>+12(SB)/4, $0x39506967
DATA expP0<>+16(SB)/4, $0x39506967
DATA expP0<>+20(SB)/4, $0x39506967
DATA expP0<>+24(SB)/4, $0x39506967
DATA expP0<>+28(SB)/4, $0x39506967
GLOBL expP0<>(SB), RODATA|NOPTR, $32

DATA expP1<>+0(SB)/4, $0x3ab743ce
DATA expP1<>+4(SB)/4, $0x3ab743ce
DATA expP1<>+8(SB)/4, $0x3ab743ce
DATA expP1<>+12(SB)/4, $0x3ab743ce
DATA expP1<>+16(SB)/4, $0x3ab743ce
DATA expP1<>+20(SB)/4, $0x3ab743ce
DATA expP1<>+24(SB)/4, $0x3ab743ce
DATA expP1<>+28(SB)/4, $0x3ab743ce
GLOBL expP1<>(SB), RODATA|NOPTR, $32

DATA expP2<>+0(SB)/4, $0x3c088908
DATA expP2<>+4(SB)/4, $0x3c088908
DATA expP2<>+8(SB)/4, $0x3c088908
DATA expP2<>+12(SB)/4, $0x3c088908
DATA expP2<>+16(SB)/4, $0x3c088908
DATA expP2<>+20(SB)/4, $0x3c088908
DATA expP2<>+24(SB)/4, $0x3c088908
DATA expP2<>+28(SB)/4, $0x3c088908
GLOBL expP2<>(SB), RODATA|NOPTR, $32

DATA expP3<>+0(SB)/4, $0x3d2aa9c1
DATA expP3<>+4(SB)/4, $0x3d2aa9c1
DATA expP3<>+8(SB)/4, $0x3d2aa9c1
DATA expP3<>+12(SB)/4, $0x3d2aa9c1
DATA expP3<>+16(SB)/4, $0x3d2aa9c1
DATA expP3<>+20(SB)/4, $0x3d2aa9c1
DATA expP3<>+24(SB)/4, $0x3d2aa9c1
DATA expP3<>+28(SB)/4, $0x3d2aa9c1
GLOBL expP3<>(SB), RODATA|NOPTR, $32

DATA expP4<>+0(SB)/4, $0x3e2aaaaa
DATA expP4<>+4(SB)/4, $0x3e2aaaaa
DATA expP4<>+8(SB)/4, $0x3e2aaaaa
DATA expP4<>+12(SB)/4, $0x3e2aaaaa
DATA expP4<>+16(SB)/4, $0x3e2aaaaa
DATA expP4<>+20(SB)/4, $0x3e2aaaaa
DATA expP4<>+24(SB)/4, $0x3e2aaaaa
DATA expP4<>+28(SB)/4, $0x3e2aaaaa
GLOBL expP4<>(SB), RODATA|NOPTR, $32

DATA expP5<>+0(SB)/4, $0x3f000000
DATA expP5<>+4(SB)/4, $0x3f000000
DATA expP5<>+8(SB)/4, $0x3f000000
DATA expP5<>+12(SB)/4, $0x3f000000
DATA expP5<>+16(SB)/4, $0x3f000000
DATA expP5<>+20(SB)/4, $0x3f000000
DATA expP5<>+24(SB)/4, $0x3f000000
DATA expP5<>+28(SB)/4, $0x3f000000
GLOBL expP5<>(SB), RODATA|NOPTR, $32

DATA expOne<>+0(SB)/4, $0x3f800000
DATA expOne<>+4(SB)/4, $0x3f800000
DATA expOne<>+8(SB)/4, $0x3f800000
DATA expOne<>+12(SB)/4, $0x3f800000
DATA expOne<>+16(SB)/4, $0x3f800000
DATA expOne<>+20(SB)/4, $0x3f800000
DATA expOne<>+24(SB)/4, $0x3f800000
DATA expOne<>+28(SB)/4, $0x3f800000
GLOBL expOne<>(SB), RODATA|NOPTR, $32

DATA exp127<>+0(SB)/4, $0x0000007f
DATA exp127<>+4(SB)/4, $0x0000007f
DATA exp127<>+8(SB)/4, $0x0000007f
DATA exp127<>+12(SB)/4, $0x0000007f
DATA exp127<>+16(SB)/4, $0x0000007f
DATA exp127<>+20(SB)/4, $0x0000007f
DATA exp127<>+24(SB)/4, $0x0000007f
DATA exp127<>+28(SB)/4, $0x0000007f
GLOBL exp127<>(SB), RODATA|NOPTR, $32

DATA expLog2e<>+0(SB)/4, $0x3fb8aa3b
GLOBL expLog2e<>(SB), RODATA|NOPTR, $4

DATA expC1<>+0(SB)/4, $0x3f318000
GLOBL expC1<>(SB), RODATA|NOPTR, $4

DATA expC2<>+0(SB)/4, $0xb95e8083
GLOBL expC2<>(SB), RODATA|NOPTR, $4

DATA expMin<>+0(SB)/4, $0xc2ae0000
GLOBL expMin<>(SB), RODATA|NOPTR, $4

// func expAVX2(dst, x *float32, n int, m, scale float32) float64
// dst[i] = exp((x[i]-m)*scale), 0 where the argument is below -87 (or NaN);
// returns the sum of dst. n must be a positive multiple of 8.
TEXT ·expAVX2(SB), NOSPLIT, $0-40
	MOVQ         dst+0(FP), DI
	MOVQ         x+8(FP), SI
	MOVQ         n+16(FP), CX
	VBROADCASTSS m+24(FP), Y15
	VBROADCASTSS scale+28(FP), Y14
	VBROADCASTSS expLog2e<>(SB), Y13
	VBROADCASTSS expC1<>(SB), Y12
	VBROADCASTSS expC2<>(SB), Y11
	VBROADCASTSS expMin<>(SB), Y10
	VXORPD       Y7, Y7, Y7
	VXORPD       Y8, Y8, Y8

loop8:
	VMOVUPS      (SI), Y0
	VSUBPS       Y15, Y0, Y0             // x - m
	VMULPS       Y14, Y0, Y0             // * scale
	VCMPPS       $0x0d, Y10, Y0, Y9      // keep = arg >= -87 (false for NaN)
	VMAXPS       Y10, Y0, Y0             // clamp so 2^n stays a normal float
	VMULPS       Y13, Y0, Y1
	VROUNDPS     $0, Y1, Y1              // n = round(arg / ln2)
	VFNMADD231PS Y12, Y1, Y0             // r = arg - n*C1 - n*C2
	VFNMADD231PS Y11, Y1, Y0
	VMOVUPS      expP0<>(SB), Y2
	VFMADD213PS  expP1<>(SB), Y0, Y2
	VFMADD213PS  expP2<>(SB), Y0, Y2
	VFMADD213PS  expP3<>(SB), Y0, Y2
	VFMADD213PS  expP4<>(SB), Y0, Y2
	VFMADD213PS  expP5<>(SB), Y0, Y2
	VMULPS       Y0, Y0, Y3
	VFMADD213PS  Y0, Y3, Y2              // p*r*r + r
	VADDPS       expOne<>(SB), Y2, Y2    // + 1
	VCVTPS2DQ    Y1, Y1
	VPADDD       exp127<>(SB), Y1, Y1
	VPSLLD       $23, Y1, Y1             // 2^n
	VMULPS       Y1, Y2, Y2
	VANDPS       Y9, Y2, Y2
	VMOVUPS      Y2, (DI)
	VCVTPS2PD    X2, Y4
	VADDPD       Y4, Y7, Y7
	VEXTRACTF128 $1, Y2, X5
	VCVTPS2PD    X5, Y5
	VADDPD       Y5, Y8, Y8
	ADDQ         $32, SI
	ADDQ         $32, DI
	SUBQ         $8, CX
	JNZ          loop8

	VADDPD       Y8, Y7, Y7
	VEXTRACTF128 $1, Y7, X0
	VADDPD       X7, X0, X0
	VHADDPD      X0, X0, X0
	VZEROUPPER
	MOVSD        X0, ret+32(FP)
	RET
