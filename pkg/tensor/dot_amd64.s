// AVX2 + FMA + F16C dot products. The reductions follow ggml's AVX2 code
// (ggml_vec_dot_f32, ggml_vec_dot_q8_0_q8_0, ggml_vec_dot_q4_0_q8_0) so
// results track llama.cpp's closely.

#include "textflag.h"

// Horizontal sum of Y0 into X0[0]: lo128+hi128, then (a0+a2)+(a1+a3) as
// ggml's hsum_float_8.
#define HSUM8 \
	VEXTRACTF128 $1, Y0, X1 \
	VADDPS       X1, X0, X0 \
	VMOVHLPS     X0, X0, X1 \
	VADDPS       X1, X0, X0 \
	VMOVSHDUP    X0, X1     \
	VADDSS       X1, X0, X0

// func dotF32AVX2(a, b *float32, n int) float32
TEXT ·dotF32AVX2(SB), NOSPLIT, $0-28
	MOVQ   a+0(FP), SI
	MOVQ   b+8(FP), DI
	MOVQ   n+16(FP), CX
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3

f32loop32:
	CMPQ        CX, $32
	JLT         f32loop8
	VMOVUPS     (SI), Y4
	VMOVUPS     32(SI), Y5
	VMOVUPS     64(SI), Y6
	VMOVUPS     96(SI), Y7
	VFMADD231PS (DI), Y4, Y0
	VFMADD231PS 32(DI), Y5, Y1
	VFMADD231PS 64(DI), Y6, Y2
	VFMADD231PS 96(DI), Y7, Y3
	ADDQ        $128, SI
	ADDQ        $128, DI
	SUBQ        $32, CX
	JMP         f32loop32

f32loop8:
	CMPQ        CX, $8
	JLT         f32reduce
	VMOVUPS     (SI), Y4
	VFMADD231PS (DI), Y4, Y0
	ADDQ        $32, SI
	ADDQ        $32, DI
	SUBQ        $8, CX
	JMP         f32loop8

f32reduce:
	// (acc0+acc2) + (acc1+acc3), then lo+hi, then two horizontal adds: the
	// order of GGML_F32_VEC_REDUCE.
	VADDPS       Y2, Y0, Y0
	VADDPS       Y3, Y1, Y1
	VADDPS       Y1, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VADDPS       X1, X0, X0
	VHADDPS      X0, X0, X0
	VHADDPS      X0, X0, X0

f32tail:
	TESTQ       CX, CX
	JEQ         f32done
	VMOVSS      (SI), X1
	VFMADD231SS (DI), X1, X0
	ADDQ        $4, SI
	ADDQ        $4, DI
	DECQ        CX
	JMP         f32tail

f32done:
	VZEROUPPER
	MOVSS X0, ret+24(FP)
	RET

// func dotF16AVX2(w unsafe.Pointer, x *float32, n int) float32
// w holds n IEEE half values.
TEXT ·dotF16AVX2(SB), NOSPLIT, $0-28
	MOVQ   w+0(FP), SI
	MOVQ   x+8(FP), DI
	MOVQ   n+16(FP), CX
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3

f16loop32:
	CMPQ        CX, $32
	JLT         f16loop8
	VCVTPH2PS   (SI), Y4
	VCVTPH2PS   16(SI), Y5
	VCVTPH2PS   32(SI), Y6
	VCVTPH2PS   48(SI), Y7
	VFMADD231PS (DI), Y4, Y0
	VFMADD231PS 32(DI), Y5, Y1
	VFMADD231PS 64(DI), Y6, Y2
	VFMADD231PS 96(DI), Y7, Y3
	ADDQ        $64, SI
	ADDQ        $128, DI
	SUBQ        $32, CX
	JMP         f16loop32

f16loop8:
	CMPQ        CX, $8
	JLT         f16reduce
	VCVTPH2PS   (SI), Y4
	VFMADD231PS (DI), Y4, Y0
	ADDQ        $16, SI
	ADDQ        $32, DI
	SUBQ        $8, CX
	JMP         f16loop8

f16reduce:
	VADDPS Y2, Y0, Y0
	VADDPS Y3, Y1, Y1
	VADDPS Y1, Y0, Y0
	HSUM8

f16tail:
	TESTQ       CX, CX
	JEQ         f16done
	MOVWLZX     (SI), AX
	VMOVD       AX, X1
	VCVTPH2PS   X1, X1
	VFMADD231SS (DI), X1, X0
	ADDQ        $2, SI
	ADDQ        $4, DI
	DECQ        CX
	JMP         f16tail

f16done:
	VZEROUPPER
	MOVSS X0, ret+24(FP)
	RET

// func dotBF16AVX2(w unsafe.Pointer, x *float32, n int) float32
TEXT ·dotBF16AVX2(SB), NOSPLIT, $0-28
	MOVQ   w+0(FP), SI
	MOVQ   x+8(FP), DI
	MOVQ   n+16(FP), CX
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1

bf16loop16:
	CMPQ        CX, $16
	JLT         bf16loop8
	VPMOVZXWD   (SI), Y4
	VPMOVZXWD   16(SI), Y5
	VPSLLD      $16, Y4, Y4
	VPSLLD      $16, Y5, Y5
	VFMADD231PS (DI), Y4, Y0
	VFMADD231PS 32(DI), Y5, Y1
	ADDQ        $32, SI
	ADDQ        $64, DI
	SUBQ        $16, CX
	JMP         bf16loop16

bf16loop8:
	CMPQ        CX, $8
	JLT         bf16reduce
	VPMOVZXWD   (SI), Y4
	VPSLLD      $16, Y4, Y4
	VFMADD231PS (DI), Y4, Y0
	ADDQ        $16, SI
	ADDQ        $32, DI
	SUBQ        $8, CX
	JMP         bf16loop8

bf16reduce:
	VADDPS Y1, Y0, Y0
	HSUM8

bf16tail:
	TESTQ       CX, CX
	JEQ         bf16done
	MOVWLZX     (SI), AX
	SHLL        $16, AX
	VMOVD       AX, X1
	VFMADD231SS (DI), X1, X0
	ADDQ        $2, SI
	ADDQ        $4, DI
	DECQ        CX
	JMP         bf16tail

bf16done:
	VZEROUPPER
	MOVSS X0, ret+24(FP)
	RET

// Per-block integer dot of signed bytes in Y2 (weights) and Y3
// (activations), scaled by the f16 weight scale at (SI) times the f32
// activation scale at (DX), accumulated into Y0. Y15 holds int16 ones.
#define Q8BLOCK \
	MOVWLZX     (SI), AX       \
	VMOVD       AX, X1         \
	VCVTPH2PS   X1, X1         \
	VMULSS      (DX), X1, X1   \
	VBROADCASTSS X1, Y1        \
	VPSIGNB     Y2, Y2, Y4     \
	VPSIGNB     Y2, Y3, Y5     \
	VPMADDUBSW  Y5, Y4, Y6     \
	VPMADDWD    Y15, Y6, Y6    \
	VCVTDQ2PS   Y6, Y6         \
	VFMADD231PS Y6, Y1, Y0

// func dotQ8AVX2(w unsafe.Pointer, xq *int8, ds *float32, nb int) float32
TEXT ·dotQ8AVX2(SB), NOSPLIT, $0-36
	MOVQ      w+0(FP), SI
	MOVQ      xq+8(FP), DI
	MOVQ      ds+16(FP), DX
	MOVQ      nb+24(FP), CX
	VXORPS    Y0, Y0, Y0
	VPCMPEQW  Y15, Y15, Y15
	VPSRLW    $15, Y15, Y15

q8loop:
	TESTQ      CX, CX
	JEQ        q8done
	VMOVDQU    2(SI), Y2
	VMOVDQU (DI), Y3
	Q8BLOCK
	ADDQ    $34, SI
	ADDQ    $32, DI
	ADDQ    $4, DX
	DECQ    CX
	JMP     q8loop

q8done:
	HSUM8
	VZEROUPPER
	MOVSS X0, ret+32(FP)
	RET

// Q8BLOCK for the second row of dotQ8x2AVX2: weights block at (SI)(R8*1),
// accumulator Y7, temporaries Y8-Y11.
#define Q8BLOCK2 \
	MOVWLZX     (SI)(R8*1), AX \
	VMOVD       AX, X8         \
	VCVTPH2PS   X8, X8         \
	VMULSS      (DX), X8, X8   \
	VBROADCASTSS X8, Y8        \
	VPSIGNB     Y9, Y9, Y10    \
	VPSIGNB     Y9, Y3, Y11    \
	VPMADDUBSW  Y11, Y10, Y11  \
	VPMADDWD    Y15, Y11, Y11  \
	VCVTDQ2PS   Y11, Y11       \
	VFMADD231PS Y11, Y8, Y7

// func dotQ8x2AVX2(w unsafe.Pointer, rowBytes int, xq *int8, ds *float32, nb int, out *[2]float32)
// dotQ8AVX2 for two rows (rowBytes apart) at once: the same operations
// per row, but two independent FMA chains, so a block's FMA no longer waits
// for the previous block's (one chain at 4 cycles per 34-byte block is
// about this machine's memory bandwidth, so the chain, not memory, set
// the pace).
TEXT ·dotQ8x2AVX2(SB), NOSPLIT, $0-48
	MOVQ      w+0(FP), SI
	MOVQ      rowBytes+8(FP), R8
	MOVQ      xq+16(FP), DI
	MOVQ      ds+24(FP), DX
	MOVQ      nb+32(FP), CX
	VXORPS    Y0, Y0, Y0
	VXORPS    Y7, Y7, Y7
	VPCMPEQW  Y15, Y15, Y15
	VPSRLW    $15, Y15, Y15

q8x2loop:
	TESTQ      CX, CX
	JEQ        q8x2done
	VMOVDQU    2(SI), Y2
	VMOVDQU    2(SI)(R8*1), Y9
	VMOVDQU (DI), Y3
	Q8BLOCK2
	Q8BLOCK
	ADDQ    $34, SI
	ADDQ    $32, DI
	ADDQ    $4, DX
	DECQ    CX
	JMP     q8x2loop

q8x2done:
	MOVQ  out+40(FP), BX
	VMOVAPS Y7, Y12
	HSUM8
	MOVSS X0, (BX)
	VMOVAPS Y12, Y0
	HSUM8
	MOVSS X0, 4(BX)
	VZEROUPPER
	RET

// func dotQ4AVX2(w unsafe.Pointer, xq *int8, ds *float32, nb int) float32
TEXT ·dotQ4AVX2(SB), NOSPLIT, $0-36
	MOVQ         w+0(FP), SI
	MOVQ         xq+8(FP), DI
	MOVQ         ds+16(FP), DX
	MOVQ         nb+24(FP), CX
	VXORPS       Y0, Y0, Y0
	VPCMPEQW     Y15, Y15, Y15
	VPSRLW       $15, Y15, Y15
	MOVL         $0x0F0F0F0F, AX
	VMOVD        AX, X14
	VPBROADCASTD X14, Y14
	MOVL         $0x08080808, AX
	VMOVD        AX, X13
	VPBROADCASTD X13, Y13

q4loop:
	TESTQ       CX, CX
	JEQ         q4done
	// Values 0..15 are the low nibbles of qs, 16..31 the high nibbles
	// (ggml's bytes_from_nibbles_32), then minus 8.
	VMOVDQU     2(SI), X2
	VPSRLW      $4, X2, X3
	VINSERTI128 $1, X3, Y2, Y2
	VPAND       Y14, Y2, Y2
	VPSUBB      Y13, Y2, Y2
	VMOVDQU     (DI), Y3
	Q8BLOCK
	ADDQ        $18, SI
	ADDQ        $32, DI
	ADDQ        $4, DX
	DECQ        CX
	JMP         q4loop

q4done:
	HSUM8
	VZEROUPPER
	MOVSS X0, ret+32(FP)
	RET

// func axpyF32AVX2(dst, x *float32, a float32, n int)
// dst[i] += a * x[i]
TEXT ·axpyF32AVX2(SB), NOSPLIT, $0-32
	MOVQ         dst+0(FP), SI
	MOVQ         x+8(FP), DI
	VBROADCASTSS a+16(FP), Y0
	MOVQ         n+24(FP), CX

axf32loop8:
	CMPQ        CX, $8
	JLT         axf32tail
	VMOVUPS     (SI), Y1
	VFMADD231PS (DI), Y0, Y1
	VMOVUPS     Y1, (SI)
	ADDQ        $32, SI
	ADDQ        $32, DI
	SUBQ        $8, CX
	JMP         axf32loop8

axf32tail:
	TESTQ       CX, CX
	JEQ         axf32done
	VMOVSS      (SI), X1
	VFMADD231SS (DI), X0, X1
	VMOVSS      X1, (SI)
	ADDQ        $4, SI
	ADDQ        $4, DI
	DECQ        CX
	JMP         axf32tail

axf32done:
	VZEROUPPER
	RET

// One q8_0 block of weights (|w| in Y4, w in Y2, scale in Y1) against the
// activation block at XADDR with scale at DADDR, accumulated into ACC.
// Same operations and order as Q8BLOCK, so results equal dotQ8AVX2's.
#define Q8TOK(XADDR, DADDR, ACC) \
	VMOVDQU      XADDR, Y3      \
	VPSIGNB      Y2, Y3, Y5     \
	VPMADDUBSW   Y5, Y4, Y5     \
	VPMADDWD     Y15, Y5, Y5    \
	VCVTDQ2PS    Y5, Y5         \
	VBROADCASTSS DADDR, Y6      \
	VMULPS       Y1, Y6, Y6     \
	VFMADD231PS  Y5, Y6, ACC

#define HSUMTO(ACC, XACC, OUT) \
	VEXTRACTF128 $1, ACC, X1 \
	VADDPS       X1, XACC, X0 \
	VMOVHLPS     X0, X0, X1 \
	VADDPS       X1, X0, X0 \
	VMOVSHDUP    X0, X1     \
	VADDSS       X1, X0, X0 \
	VMOVSS       X0, OUT

// func dotQ8x4AVX2(w unsafe.Pointer, xq *int8, ds *float32, nb, xstride int, out *[4]float32)
// Four activation rows at xq + t*xstride (bytes), scales at ds + t*nb.
TEXT ·dotQ8x4AVX2(SB), NOSPLIT, $0-48
	MOVQ     w+0(FP), SI
	MOVQ     xq+8(FP), DI
	MOVQ     ds+16(FP), DX
	MOVQ     nb+24(FP), CX
	MOVQ     xstride+32(FP), R8
	LEAQ     (R8)(R8*2), R9
	MOVQ     CX, R10
	SHLQ     $2, R10
	LEAQ     (R10)(R10*2), R11
	VXORPS   Y8, Y8, Y8
	VXORPS   Y9, Y9, Y9
	VXORPS   Y10, Y10, Y10
	VXORPS   Y11, Y11, Y11
	VPCMPEQW Y15, Y15, Y15
	VPSRLW   $15, Y15, Y15

q8x4loop:
	TESTQ        CX, CX
	JEQ          q8x4done
	MOVWLZX      (SI), AX
	VMOVD        AX, X1
	VCVTPH2PS    X1, X1
	VBROADCASTSS X1, Y1
	VMOVDQU      2(SI), Y2
	VPSIGNB      Y2, Y2, Y4
	Q8TOK((DI), (DX), Y8)
	Q8TOK((DI)(R8*1), (DX)(R10*1), Y9)
	Q8TOK((DI)(R8*2), (DX)(R10*2), Y10)
	Q8TOK((DI)(R9*1), (DX)(R11*1), Y11)
	ADDQ         $34, SI
	ADDQ         $32, DI
	ADDQ         $4, DX
	DECQ         CX
	JMP          q8x4loop

q8x4done:
	MOVQ   out+40(FP), AX
	HSUMTO(Y8, X8, (AX))
	HSUMTO(Y9, X9, 4(AX))
	HSUMTO(Y10, X10, 8(AX))
	HSUMTO(Y11, X11, 12(AX))
	VZEROUPPER
	RET

// func dotQ4x4AVX2(w unsafe.Pointer, xq *int8, ds *float32, nb, xstride int, out *[4]float32)
TEXT ·dotQ4x4AVX2(SB), NOSPLIT, $0-48
	MOVQ         w+0(FP), SI
	MOVQ         xq+8(FP), DI
	MOVQ         ds+16(FP), DX
	MOVQ         nb+24(FP), CX
	MOVQ         xstride+32(FP), R8
	LEAQ         (R8)(R8*2), R9
	MOVQ         CX, R10
	SHLQ         $2, R10
	LEAQ         (R10)(R10*2), R11
	VXORPS       Y8, Y8, Y8
	VXORPS       Y9, Y9, Y9
	VXORPS       Y10, Y10, Y10
	VXORPS       Y11, Y11, Y11
	VPCMPEQW     Y15, Y15, Y15
	VPSRLW       $15, Y15, Y15
	MOVL         $0x0F0F0F0F, AX
	VMOVD        AX, X14
	VPBROADCASTD X14, Y14
	MOVL         $0x08080808, AX
	VMOVD        AX, X13
	VPBROADCASTD X13, Y13

q4x4loop:
	TESTQ        CX, CX
	JEQ          q4x4done
	MOVWLZX      (SI), AX
	VMOVD        AX, X1
	VCVTPH2PS    X1, X1
	VBROADCASTSS X1, Y1
	VMOVDQU      2(SI), X2
	VPSRLW       $4, X2, X3
	VINSERTI128  $1, X3, Y2, Y2
	VPAND        Y14, Y2, Y2
	VPSUBB       Y13, Y2, Y2
	VPSIGNB      Y2, Y2, Y4
	Q8TOK((DI), (DX), Y8)
	Q8TOK((DI)(R8*1), (DX)(R10*1), Y9)
	Q8TOK((DI)(R8*2), (DX)(R10*2), Y10)
	Q8TOK((DI)(R9*1), (DX)(R11*1), Y11)
	ADDQ         $18, SI
	ADDQ         $32, DI
	ADDQ         $4, DX
	DECQ         CX
	JMP          q4x4loop

q4x4done:
	MOVQ   out+40(FP), AX
	HSUMTO(Y8, X8, (AX))
	HSUMTO(Y9, X9, 4(AX))
	HSUMTO(Y10, X10, 8(AX))
	HSUMTO(Y11, X11, 12(AX))
	VZEROUPPER
	RET
