// exactness: ggml_v_expf (llama.cpp's vectorised exp, used by SiLU/SwiGLU
// and the tiled attention softmax) as compiled for its AVX-512 builds
// (mode 16: _mm512_scalef_ps) and AVX2 builds (mode 8: exponent-bit
// arithmetic), computed 8 lanes at a time with AVX2+FMA. Every lane is
// independent, so the results equal ggml's bit for bit. See ggml_exact.go.

#include "textflag.h"

DATA vexp_log2e<>+0(SB)/4, $0x3fb8aa3b
DATA vexp_log2e<>+4(SB)/4, $0x3fb8aa3b
DATA vexp_log2e<>+8(SB)/4, $0x3fb8aa3b
DATA vexp_log2e<>+12(SB)/4, $0x3fb8aa3b
DATA vexp_log2e<>+16(SB)/4, $0x3fb8aa3b
DATA vexp_log2e<>+20(SB)/4, $0x3fb8aa3b
DATA vexp_log2e<>+24(SB)/4, $0x3fb8aa3b
DATA vexp_log2e<>+28(SB)/4, $0x3fb8aa3b
GLOBL vexp_log2e<>(SB), RODATA|NOPTR, $32
DATA vexp_shift<>+0(SB)/4, $0x4b400000
DATA vexp_shift<>+4(SB)/4, $0x4b400000
DATA vexp_shift<>+8(SB)/4, $0x4b400000
DATA vexp_shift<>+12(SB)/4, $0x4b400000
DATA vexp_shift<>+16(SB)/4, $0x4b400000
DATA vexp_shift<>+20(SB)/4, $0x4b400000
DATA vexp_shift<>+24(SB)/4, $0x4b400000
DATA vexp_shift<>+28(SB)/4, $0x4b400000
GLOBL vexp_shift<>(SB), RODATA|NOPTR, $32
DATA vexp_ln2hi<>+0(SB)/4, $0x3f317200
DATA vexp_ln2hi<>+4(SB)/4, $0x3f317200
DATA vexp_ln2hi<>+8(SB)/4, $0x3f317200
DATA vexp_ln2hi<>+12(SB)/4, $0x3f317200
DATA vexp_ln2hi<>+16(SB)/4, $0x3f317200
DATA vexp_ln2hi<>+20(SB)/4, $0x3f317200
DATA vexp_ln2hi<>+24(SB)/4, $0x3f317200
DATA vexp_ln2hi<>+28(SB)/4, $0x3f317200
GLOBL vexp_ln2hi<>(SB), RODATA|NOPTR, $32
DATA vexp_ln2lo<>+0(SB)/4, $0x35bfbe8e
DATA vexp_ln2lo<>+4(SB)/4, $0x35bfbe8e
DATA vexp_ln2lo<>+8(SB)/4, $0x35bfbe8e
DATA vexp_ln2lo<>+12(SB)/4, $0x35bfbe8e
DATA vexp_ln2lo<>+16(SB)/4, $0x35bfbe8e
DATA vexp_ln2lo<>+20(SB)/4, $0x35bfbe8e
DATA vexp_ln2lo<>+24(SB)/4, $0x35bfbe8e
DATA vexp_ln2lo<>+28(SB)/4, $0x35bfbe8e
GLOBL vexp_ln2lo<>(SB), RODATA|NOPTR, $32
DATA vexp_c0<>+0(SB)/4, $0x3c072010
DATA vexp_c0<>+4(SB)/4, $0x3c072010
DATA vexp_c0<>+8(SB)/4, $0x3c072010
DATA vexp_c0<>+12(SB)/4, $0x3c072010
DATA vexp_c0<>+16(SB)/4, $0x3c072010
DATA vexp_c0<>+20(SB)/4, $0x3c072010
DATA vexp_c0<>+24(SB)/4, $0x3c072010
DATA vexp_c0<>+28(SB)/4, $0x3c072010
GLOBL vexp_c0<>(SB), RODATA|NOPTR, $32
DATA vexp_c1<>+0(SB)/4, $0x3d2b9f17
DATA vexp_c1<>+4(SB)/4, $0x3d2b9f17
DATA vexp_c1<>+8(SB)/4, $0x3d2b9f17
DATA vexp_c1<>+12(SB)/4, $0x3d2b9f17
DATA vexp_c1<>+16(SB)/4, $0x3d2b9f17
DATA vexp_c1<>+20(SB)/4, $0x3d2b9f17
DATA vexp_c1<>+24(SB)/4, $0x3d2b9f17
DATA vexp_c1<>+28(SB)/4, $0x3d2b9f17
GLOBL vexp_c1<>(SB), RODATA|NOPTR, $32
DATA vexp_c2<>+0(SB)/4, $0x3e2aaf33
DATA vexp_c2<>+4(SB)/4, $0x3e2aaf33
DATA vexp_c2<>+8(SB)/4, $0x3e2aaf33
DATA vexp_c2<>+12(SB)/4, $0x3e2aaf33
DATA vexp_c2<>+16(SB)/4, $0x3e2aaf33
DATA vexp_c2<>+20(SB)/4, $0x3e2aaf33
DATA vexp_c2<>+24(SB)/4, $0x3e2aaf33
DATA vexp_c2<>+28(SB)/4, $0x3e2aaf33
GLOBL vexp_c2<>(SB), RODATA|NOPTR, $32
DATA vexp_c3<>+0(SB)/4, $0x3efffedb
DATA vexp_c3<>+4(SB)/4, $0x3efffedb
DATA vexp_c3<>+8(SB)/4, $0x3efffedb
DATA vexp_c3<>+12(SB)/4, $0x3efffedb
DATA vexp_c3<>+16(SB)/4, $0x3efffedb
DATA vexp_c3<>+20(SB)/4, $0x3efffedb
DATA vexp_c3<>+24(SB)/4, $0x3efffedb
DATA vexp_c3<>+28(SB)/4, $0x3efffedb
GLOBL vexp_c3<>(SB), RODATA|NOPTR, $32
DATA vexp_c4<>+0(SB)/4, $0x3f7ffff6
DATA vexp_c4<>+4(SB)/4, $0x3f7ffff6
DATA vexp_c4<>+8(SB)/4, $0x3f7ffff6
DATA vexp_c4<>+12(SB)/4, $0x3f7ffff6
DATA vexp_c4<>+16(SB)/4, $0x3f7ffff6
DATA vexp_c4<>+20(SB)/4, $0x3f7ffff6
DATA vexp_c4<>+24(SB)/4, $0x3f7ffff6
DATA vexp_c4<>+28(SB)/4, $0x3f7ffff6
GLOBL vexp_c4<>(SB), RODATA|NOPTR, $32
DATA vexp_one<>+0(SB)/4, $0x3f800000
DATA vexp_one<>+4(SB)/4, $0x3f800000
DATA vexp_one<>+8(SB)/4, $0x3f800000
DATA vexp_one<>+12(SB)/4, $0x3f800000
DATA vexp_one<>+16(SB)/4, $0x3f800000
DATA vexp_one<>+20(SB)/4, $0x3f800000
DATA vexp_one<>+24(SB)/4, $0x3f800000
DATA vexp_one<>+28(SB)/4, $0x3f800000
GLOBL vexp_one<>(SB), RODATA|NOPTR, $32
DATA vexp_f192<>+0(SB)/4, $0x43400000
DATA vexp_f192<>+4(SB)/4, $0x43400000
DATA vexp_f192<>+8(SB)/4, $0x43400000
DATA vexp_f192<>+12(SB)/4, $0x43400000
DATA vexp_f192<>+16(SB)/4, $0x43400000
DATA vexp_f192<>+20(SB)/4, $0x43400000
DATA vexp_f192<>+24(SB)/4, $0x43400000
DATA vexp_f192<>+28(SB)/4, $0x43400000
GLOBL vexp_f192<>(SB), RODATA|NOPTR, $32
DATA vexp_f126<>+0(SB)/4, $0x42fc0000
DATA vexp_f126<>+4(SB)/4, $0x42fc0000
DATA vexp_f126<>+8(SB)/4, $0x42fc0000
DATA vexp_f126<>+12(SB)/4, $0x42fc0000
DATA vexp_f126<>+16(SB)/4, $0x42fc0000
DATA vexp_f126<>+20(SB)/4, $0x42fc0000
DATA vexp_f126<>+24(SB)/4, $0x42fc0000
DATA vexp_f126<>+28(SB)/4, $0x42fc0000
GLOBL vexp_f126<>(SB), RODATA|NOPTR, $32
DATA vexp_inf<>+0(SB)/4, $0x7f800000
DATA vexp_inf<>+4(SB)/4, $0x7f800000
DATA vexp_inf<>+8(SB)/4, $0x7f800000
DATA vexp_inf<>+12(SB)/4, $0x7f800000
DATA vexp_inf<>+16(SB)/4, $0x7f800000
DATA vexp_inf<>+20(SB)/4, $0x7f800000
DATA vexp_inf<>+24(SB)/4, $0x7f800000
DATA vexp_inf<>+28(SB)/4, $0x7f800000
GLOBL vexp_inf<>(SB), RODATA|NOPTR, $32
DATA vexp_absmask<>+0(SB)/4, $0x7fffffff
DATA vexp_absmask<>+4(SB)/4, $0x7fffffff
DATA vexp_absmask<>+8(SB)/4, $0x7fffffff
DATA vexp_absmask<>+12(SB)/4, $0x7fffffff
DATA vexp_absmask<>+16(SB)/4, $0x7fffffff
DATA vexp_absmask<>+20(SB)/4, $0x7fffffff
DATA vexp_absmask<>+24(SB)/4, $0x7fffffff
DATA vexp_absmask<>+28(SB)/4, $0x7fffffff
GLOBL vexp_absmask<>(SB), RODATA|NOPTR, $32
DATA vexp_i100<>+0(SB)/4, $0x64
DATA vexp_i100<>+4(SB)/4, $0x64
DATA vexp_i100<>+8(SB)/4, $0x64
DATA vexp_i100<>+12(SB)/4, $0x64
DATA vexp_i100<>+16(SB)/4, $0x64
DATA vexp_i100<>+20(SB)/4, $0x64
DATA vexp_i100<>+24(SB)/4, $0x64
DATA vexp_i100<>+28(SB)/4, $0x64
GLOBL vexp_i100<>(SB), RODATA|NOPTR, $32
DATA vexp_im100<>+0(SB)/4, $0xffffff9c
DATA vexp_im100<>+4(SB)/4, $0xffffff9c
DATA vexp_im100<>+8(SB)/4, $0xffffff9c
DATA vexp_im100<>+12(SB)/4, $0xffffff9c
DATA vexp_im100<>+16(SB)/4, $0xffffff9c
DATA vexp_im100<>+20(SB)/4, $0xffffff9c
DATA vexp_im100<>+24(SB)/4, $0xffffff9c
DATA vexp_im100<>+28(SB)/4, $0xffffff9c
GLOBL vexp_im100<>(SB), RODATA|NOPTR, $32
DATA vexp_i127<>+0(SB)/4, $0x7f
DATA vexp_i127<>+4(SB)/4, $0x7f
DATA vexp_i127<>+8(SB)/4, $0x7f
DATA vexp_i127<>+12(SB)/4, $0x7f
DATA vexp_i127<>+16(SB)/4, $0x7f
DATA vexp_i127<>+20(SB)/4, $0x7f
DATA vexp_i127<>+24(SB)/4, $0x7f
DATA vexp_i127<>+28(SB)/4, $0x7f
GLOBL vexp_i127<>(SB), RODATA|NOPTR, $32
DATA vexp_g82<>+0(SB)/4, $0x82000000
DATA vexp_g82<>+4(SB)/4, $0x82000000
DATA vexp_g82<>+8(SB)/4, $0x82000000
DATA vexp_g82<>+12(SB)/4, $0x82000000
DATA vexp_g82<>+16(SB)/4, $0x82000000
DATA vexp_g82<>+20(SB)/4, $0x82000000
DATA vexp_g82<>+24(SB)/4, $0x82000000
DATA vexp_g82<>+28(SB)/4, $0x82000000
GLOBL vexp_g82<>(SB), RODATA|NOPTR, $32
DATA vexp_e7f<>+0(SB)/4, $0x7f000000
DATA vexp_e7f<>+4(SB)/4, $0x7f000000
DATA vexp_e7f<>+8(SB)/4, $0x7f000000
DATA vexp_e7f<>+12(SB)/4, $0x7f000000
DATA vexp_e7f<>+16(SB)/4, $0x7f000000
DATA vexp_e7f<>+20(SB)/4, $0x7f000000
DATA vexp_e7f<>+24(SB)/4, $0x7f000000
DATA vexp_e7f<>+28(SB)/4, $0x7f000000
GLOBL vexp_e7f<>(SB), RODATA|NOPTR, $32

// Common part: Y0 = x in; leaves z in Y1, n in Y2, b in Y3, u in Y4,
// fma(fma(c0,b,c1),u,fma(c2,b,c3)) in Y6.
#define VEXP_HEAD \
	VMOVUPS      vexp_shift<>(SB), Y1 \
	VFMADD231PS  vexp_log2e<>(SB), Y0, Y1 \
	VSUBPS       vexp_shift<>(SB), Y1, Y2 \
	VMOVAPS      Y0, Y3 \
	VFNMADD231PS vexp_ln2hi<>(SB), Y2, Y3 \
	VFNMADD231PS vexp_ln2lo<>(SB), Y2, Y3 \
	VMULPS       Y3, Y3, Y4 \
	VMOVUPS      vexp_c1<>(SB), Y5 \
	VFMADD231PS  vexp_c0<>(SB), Y3, Y5 \
	VMOVUPS      vexp_c3<>(SB), Y6 \
	VFMADD231PS  vexp_c2<>(SB), Y3, Y6 \
	VFMADD231PS  Y4, Y5, Y6

// AVX-512 form: j = fma(p, u, fma(c4, b, 1)); scalef(j, n) as two exact
// power-of-two products (the second rounds once, as scalef does); lanes
// with |n| > 192 give 0 (n <= 0) or +inf.
#define VEXP16 \
	VEXP_HEAD \
	VMOVUPS     vexp_one<>(SB), Y7 \
	VFMADD231PS vexp_c4<>(SB), Y3, Y7 \
	VFMADD231PS Y4, Y6, Y7 \
	VCVTPS2DQ   Y2, Y5 \
	VPMINSD     vexp_i100<>(SB), Y5, Y6 \
	VPMAXSD     vexp_im100<>(SB), Y6, Y6 \
	VPSUBD      Y6, Y5, Y5 \
	VPADDD      vexp_i127<>(SB), Y5, Y5 \
	VPSLLD      $23, Y5, Y5 \
	VPADDD      vexp_i127<>(SB), Y6, Y6 \
	VPSLLD      $23, Y6, Y6 \
	VMULPS      Y5, Y7, Y7 \
	VMULPS      Y6, Y7, Y7 \
	VANDPS      vexp_absmask<>(SB), Y2, Y1 \
	VCMPPS      $0x1e, vexp_f192<>(SB), Y1, Y1 \
	VXORPS      Y5, Y5, Y5 \
	VCMPPS      $0x12, Y5, Y2, Y4 \
	VANDNPS     vexp_inf<>(SB), Y4, Y4 \
	VBLENDVPS   Y1, Y4, Y7, Y0

// AVX2 form: j = fma(p, u, c4*b); k = 2^n from the bits of z;
// fma(k, j, k), with the two-step scaling for |n| > 126 and s1*s1 for
// |n| > 192.
#define VEXP8 \
	VEXP_HEAD \
	VMULPS      vexp_c4<>(SB), Y3, Y7 \
	VFMADD231PS Y4, Y6, Y7 \
	VPSLLD      $23, Y1, Y5 \
	VPADDD      vexp_one<>(SB), Y5, Y6 \
	VMOVAPS     Y6, Y0 \
	VFMADD231PS Y7, Y6, Y0 \
	VXORPS      Y3, Y3, Y3 \
	VCMPPS      $0x12, Y3, Y2, Y3 \
	VANDPS      vexp_g82<>(SB), Y3, Y3 \
	VPADDD      vexp_e7f<>(SB), Y3, Y4 \
	VPSUBD      Y3, Y5, Y5 \
	VMOVAPS     Y5, Y6 \
	VFMADD231PS Y7, Y5, Y6 \
	VMULPS      Y4, Y6, Y6 \
	VANDPS      vexp_absmask<>(SB), Y2, Y1 \
	VCMPPS      $0x1e, vexp_f126<>(SB), Y1, Y3 \
	VBLENDVPS   Y3, Y6, Y0, Y0 \
	VMULPS      Y4, Y4, Y4 \
	VCMPPS      $0x1e, vexp_f192<>(SB), Y1, Y3 \
	VBLENDVPS   Y3, Y4, Y0, Y0

// func ggmlVExpAVX2(y, x *float32, n, mode int)
// y[i] = ggml_v_expf(x[i]) for n, a multiple of 8.
TEXT ·ggmlVExpAVX2(SB), NOSPLIT, $0-32
	MOVQ y+0(FP), DI
	MOVQ x+8(FP), SI
	MOVQ n+16(FP), CX
	MOVQ mode+24(FP), DX

vexploop:
	CMPQ    CX, $8
	JLT     vexpdone
	VMOVUPS (SI), Y0
	CMPQ    DX, $16
	JNE     vexp8
	VEXP16
	JMP     vexpstore

vexp8:
	VEXP8

vexpstore:
	VMOVUPS Y0, (DI)
	ADDQ    $32, SI
	ADDQ    $32, DI
	SUBQ    $8, CX
	JMP     vexploop

vexpdone:
	VZEROUPPER
	RET

// func ggmlSwigluAVX2(y, x, gate *float32, n, mode int)
// y[i] = x[i] / (1 + ggml_v_expf(0 - x[i])) * gate[i] for n, a multiple of 8
// (ggml_vec_swiglu_f32's vector loop).
TEXT ·ggmlSwigluAVX2(SB), NOSPLIT, $0-40
	MOVQ y+0(FP), DI
	MOVQ x+8(FP), SI
	MOVQ gate+16(FP), R8
	MOVQ n+24(FP), CX
	MOVQ mode+32(FP), DX

swloop:
	CMPQ    CX, $8
	JLT     swdone
	VMOVUPS (SI), Y15
	VXORPS  Y0, Y0, Y0
	VSUBPS  Y15, Y0, Y0
	CMPQ    DX, $16
	JNE     sw8
	VEXP16
	JMP     swtail

sw8:
	VEXP8

swtail:
	VADDPS  vexp_one<>(SB), Y0, Y0
	VDIVPS  Y0, Y15, Y0
	VMULPS  (R8), Y0, Y0
	VMOVUPS Y0, (DI)
	ADDQ    $32, SI
	ADDQ    $32, DI
	ADDQ    $32, R8
	SUBQ    $8, CX
	JMP     swloop

swdone:
	VZEROUPPER
	RET

// ggml_v_expf of the AVX-512 builds on Z0, 16 lanes, with the instructions
// it is written in (_mm512_scalef_ps, mask compares and blends); the
// constants are broadcast from the first lane of the tables above.
#define VEXP512 \
	VBROADCASTSS     vexp_shift<>(SB), Z1 \
	VFMADD231PS.BCST vexp_log2e<>(SB), Z0, Z1 \
	VSUBPS.BCST      vexp_shift<>(SB), Z1, Z2 \
	VMOVAPS          Z0, Z3 \
	VFNMADD231PS.BCST vexp_ln2hi<>(SB), Z2, Z3 \
	VFNMADD231PS.BCST vexp_ln2lo<>(SB), Z2, Z3 \
	VMULPS           Z3, Z3, Z4 \
	VBROADCASTSS     vexp_c1<>(SB), Z5 \
	VFMADD231PS.BCST vexp_c0<>(SB), Z3, Z5 \
	VBROADCASTSS     vexp_c3<>(SB), Z6 \
	VFMADD231PS.BCST vexp_c2<>(SB), Z3, Z6 \
	VFMADD231PS      Z4, Z5, Z6 \
	VBROADCASTSS     vexp_one<>(SB), Z7 \
	VFMADD231PS.BCST vexp_c4<>(SB), Z3, Z7 \
	VFMADD231PS      Z4, Z6, Z7 \
	VSCALEFPS        Z2, Z7, Z0 \
	VPANDD.BCST      vexp_absmask<>(SB), Z2, Z1 \
	VCMPPS.BCST      $0x1e, vexp_f192<>(SB), Z1, K1 \
	VPXORD           Z5, Z5, Z5 \
	VCMPPS           $0x12, Z5, Z2, K2 \
	VBROADCASTSS     vexp_inf<>(SB), Z6 \
	VBLENDMPS        Z5, Z6, K2, Z6 \
	VBLENDMPS        Z6, Z0, K1, Z0

// func ggmlVExpAVX512(y, x *float32, n int)
// y[i] = ggml_v_expf(x[i]) (the AVX-512 form) for n, a multiple of 16.
TEXT ·ggmlVExpAVX512(SB), NOSPLIT, $0-24
	MOVQ y+0(FP), DI
	MOVQ x+8(FP), SI
	MOVQ n+16(FP), CX

vexp512loop:
	CMPQ    CX, $16
	JLT     vexp512done
	VMOVUPS (SI), Z0
	VEXP512
	VMOVUPS Z0, (DI)
	ADDQ    $64, SI
	ADDQ    $64, DI
	SUBQ    $16, CX
	JMP     vexp512loop

vexp512done:
	VZEROUPPER
	RET
