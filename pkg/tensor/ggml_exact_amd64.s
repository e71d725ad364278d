// exactness: AVX2+FMA kernels that round exactly as llama.cpp's ggml-cpu
// builds do (see ggml_exact.go). A 16-lane AVX-512 accumulator is held in
// two YMM registers (lanes 0-7, 8-15): lanes are independent, so the sums
// are bit-identical to the AVX-512 code.

#include "textflag.h"

// (c0+c2)+(c1+c3) of X0's four lanes into X0[0]: the tail of
// _mm512_reduce_add_ps and of sgemm.cpp's hsum(__m128).
#define HSUM4 \
	VMOVHLPS  X0, X0, X1 \
	VADDPS    X1, X0, X0 \
	VMOVSHDUP X0, X1     \
	VADDSS    X1, X0, X0

// One step of ggml_vec_dot_f16's vector loop over SI, DI (CX counts
// down): 4 accumulators x 16 lanes (Y0..Y7) over 64 halves, or x 8 lanes
// (Y0..Y3) over 32.
#define F16DOT16STEP \
	VCVTPH2PS   (SI), Y8 \
	VCVTPH2PS   (DI), Y9 \
	VFMADD231PS Y9, Y8, Y0 \
	VCVTPH2PS   16(SI), Y8 \
	VCVTPH2PS   16(DI), Y9 \
	VFMADD231PS Y9, Y8, Y1 \
	VCVTPH2PS   32(SI), Y8 \
	VCVTPH2PS   32(DI), Y9 \
	VFMADD231PS Y9, Y8, Y2 \
	VCVTPH2PS   48(SI), Y8 \
	VCVTPH2PS   48(DI), Y9 \
	VFMADD231PS Y9, Y8, Y3 \
	VCVTPH2PS   64(SI), Y8 \
	VCVTPH2PS   64(DI), Y9 \
	VFMADD231PS Y9, Y8, Y4 \
	VCVTPH2PS   80(SI), Y8 \
	VCVTPH2PS   80(DI), Y9 \
	VFMADD231PS Y9, Y8, Y5 \
	VCVTPH2PS   96(SI), Y8 \
	VCVTPH2PS   96(DI), Y9 \
	VFMADD231PS Y9, Y8, Y6 \
	VCVTPH2PS   112(SI), Y8 \
	VCVTPH2PS   112(DI), Y9 \
	VFMADD231PS Y9, Y8, Y7 \
	ADDQ        $128, SI \
	ADDQ        $128, DI \
	SUBQ        $64, CX

#define F16DOT8STEP \
	VCVTPH2PS   (SI), Y8 \
	VCVTPH2PS   (DI), Y9 \
	VFMADD231PS Y9, Y8, Y0 \
	VCVTPH2PS   16(SI), Y8 \
	VCVTPH2PS   16(DI), Y9 \
	VFMADD231PS Y9, Y8, Y1 \
	VCVTPH2PS   32(SI), Y8 \
	VCVTPH2PS   32(DI), Y9 \
	VFMADD231PS Y9, Y8, Y2 \
	VCVTPH2PS   48(SI), Y8 \
	VCVTPH2PS   48(DI), Y9 \
	VFMADD231PS Y9, Y8, Y3 \
	ADDQ        $64, SI \
	ADDQ        $64, DI \
	SUBQ        $32, CX

// ggml's reduce of the accumulators into X0: 4 x 16 lanes, or 4 x 8.
#define REDUCE16 \
	VADDPS       Y4, Y0, Y0 \
	VADDPS       Y6, Y2, Y2 \
	VADDPS       Y2, Y0, Y0 \
	VADDPS       Y5, Y1, Y1 \
	VADDPS       Y7, Y3, Y3 \
	VADDPS       Y3, Y1, Y1 \
	VADDPS       Y1, Y0, Y0 \
	VEXTRACTF128 $1, Y0, X1 \
	VADDPS       X1, X0, X0 \
	HSUM4

#define REDUCE8 \
	VADDPS       Y2, Y0, Y0 \
	VADDPS       Y3, Y1, Y1 \
	VADDPS       Y1, Y0, Y0 \
	VEXTRACTF128 $1, Y0, X1 \
	VADDPS       X1, X0, X0 \
	VHADDPS      X0, X0, X0 \
	VHADDPS      X0, X0, X0

// func ggmlDotF32x16AVX2(a, b *float32, n int) float32
// ggml_vec_dot_f32 of the AVX-512 builds: 4 accumulators x 16 lanes over
// steps of 64, reduce, leftovers unfused in groups of 8, then fused.
TEXT ·ggmlDotF32x16AVX2(SB), NOSPLIT, $0-28
	MOVQ   a+0(FP), SI
	MOVQ   b+8(FP), DI
	MOVQ   n+16(FP), CX
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	VXORPS Y4, Y4, Y4
	VXORPS Y5, Y5, Y5
	VXORPS Y6, Y6, Y6
	VXORPS Y7, Y7, Y7

d16loop:
	CMPQ        CX, $64
	JLT         d16reduce
	VMOVUPS     (SI), Y8
	VFMADD231PS (DI), Y8, Y0
	VMOVUPS     32(SI), Y9
	VFMADD231PS 32(DI), Y9, Y1
	VMOVUPS     64(SI), Y10
	VFMADD231PS 64(DI), Y10, Y2
	VMOVUPS     96(SI), Y11
	VFMADD231PS 96(DI), Y11, Y3
	VMOVUPS     128(SI), Y8
	VFMADD231PS 128(DI), Y8, Y4
	VMOVUPS     160(SI), Y9
	VFMADD231PS 160(DI), Y9, Y5
	VMOVUPS     192(SI), Y10
	VFMADD231PS 192(DI), Y10, Y6
	VMOVUPS     224(SI), Y11
	VFMADD231PS 224(DI), Y11, Y7
	ADDQ        $256, SI
	ADDQ        $256, DI
	SUBQ        $64, CX
	JMP         d16loop

d16reduce:
	// acc j = (Y(2j), Y(2j+1)); x0 = (x0+x2)+(x1+x3), then the 512-bit
	// horizontal sum: hi256+lo256, hi128+lo128, (0+2)+(1+3).
	REDUCE16
	MOVQ         CX, BX
	ANDQ         $-8, BX

d16nf:
	TESTQ       BX, BX
	JEQ         d16fu
	VMOVSS      (SI), X1
	VMULSS      (DI), X1, X1
	VADDSS      X1, X0, X0
	ADDQ        $4, SI
	ADDQ        $4, DI
	DECQ        BX
	DECQ        CX
	JMP         d16nf

d16fu:
	TESTQ       CX, CX
	JEQ         d16done
	VMOVSS      (SI), X1
	VFMADD231SS (DI), X1, X0
	ADDQ        $4, SI
	ADDQ        $4, DI
	DECQ        CX
	JMP         d16fu

d16done:
	VZEROUPPER
	MOVSS        X0, ret+24(FP)
	RET

// func ggmlDotF32x8AVX2(a, b *float32, n int) float32
// ggml_vec_dot_f32 of the AVX2 builds: 4 accumulators x 8 lanes over steps
// of 32, reduce with two hadds, leftovers unfused in groups of 4, then fused.
TEXT ·ggmlDotF32x8AVX2(SB), NOSPLIT, $0-28
	MOVQ   a+0(FP), SI
	MOVQ   b+8(FP), DI
	MOVQ   n+16(FP), CX
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3

d8loop:
	CMPQ        CX, $32
	JLT         d8reduce
	VMOVUPS     (SI), Y8
	VFMADD231PS (DI), Y8, Y0
	VMOVUPS     32(SI), Y9
	VFMADD231PS 32(DI), Y9, Y1
	VMOVUPS     64(SI), Y10
	VFMADD231PS 64(DI), Y10, Y2
	VMOVUPS     96(SI), Y11
	VFMADD231PS 96(DI), Y11, Y3
	ADDQ        $128, SI
	ADDQ        $128, DI
	SUBQ        $32, CX
	JMP         d8loop

d8reduce:
	REDUCE8
	MOVQ         CX, BX
	ANDQ         $-4, BX

d8nf:
	TESTQ       BX, BX
	JEQ         d8fu
	VMOVSS      (SI), X1
	VMULSS      (DI), X1, X1
	VADDSS      X1, X0, X0
	ADDQ        $4, SI
	ADDQ        $4, DI
	DECQ        BX
	DECQ        CX
	JMP         d8nf

d8fu:
	TESTQ       CX, CX
	JEQ         d8done
	VMOVSS      (SI), X1
	VFMADD231SS (DI), X1, X0
	ADDQ        $4, SI
	ADDQ        $4, DI
	DECQ        CX
	JMP         d8fu

d8done:
	VZEROUPPER
	MOVSS        X0, ret+24(FP)
	RET

// func ggmlSgemmF32x16AVX2(a, b *float32, n int) float32
// One output of llamafile's tinyBLAS<16>: a single 16-lane accumulator
// over n (a multiple of 16), then _mm512_reduce_add_ps.
TEXT ·ggmlSgemmF32x16AVX2(SB), NOSPLIT, $0-28
	MOVQ   a+0(FP), SI
	MOVQ   b+8(FP), DI
	MOVQ   n+16(FP), CX
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1

s16loop:
	CMPQ        CX, $16
	JLT         s16reduce
	VMOVUPS     (SI), Y8
	VFMADD231PS (DI), Y8, Y0
	VMOVUPS     32(SI), Y9
	VFMADD231PS 32(DI), Y9, Y1
	ADDQ        $64, SI
	ADDQ        $64, DI
	SUBQ        $16, CX
	JMP         s16loop

s16reduce:
	VADDPS       Y1, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VADDPS       X1, X0, X0
	HSUM4
	VZEROUPPER
	MOVSS        X0, ret+24(FP)
	RET

// func ggmlSgemmF32x8AVX2(a, b *float32, n int) float32
// One output of llamafile's tinyBLAS<8>: one 8-lane accumulator, then
// hsum(__m256): halves added, then (0+2)+(1+3).
TEXT ·ggmlSgemmF32x8AVX2(SB), NOSPLIT, $0-28
	MOVQ   a+0(FP), SI
	MOVQ   b+8(FP), DI
	MOVQ   n+16(FP), CX
	VXORPS Y0, Y0, Y0

s8loop:
	CMPQ        CX, $8
	JLT         s8reduce
	VMOVUPS     (SI), Y8
	VFMADD231PS (DI), Y8, Y0
	ADDQ        $32, SI
	ADDQ        $32, DI
	SUBQ        $8, CX
	JMP         s8loop

s8reduce:
	VEXTRACTF128 $1, Y0, X1
	VADDPS       X1, X0, X0
	HSUM4
	VZEROUPPER
	MOVSS        X0, ret+24(FP)
	RET

// func ggmlDotF16TailAVX2(x, y unsafe.Pointer, n int, sum float64) float64
// The leftovers of ggml_vec_dot_f16: sum += float64(f32(x[i]) * f32(y[i]))
// in order. Four products are formed at once (each is exact in float32);
// the additions stay sequential.
TEXT ·ggmlDotF16TailAVX2(SB), NOSPLIT, $0-40
	MOVQ  x+0(FP), SI
	MOVQ  y+8(FP), DI
	MOVQ  n+16(FP), CX
	MOVSD sum+24(FP), X0

f16quad:
	CMPQ         CX, $4
	JLT          f16tail
	VCVTPH2PS    (SI), X1
	VCVTPH2PS    (DI), X2
	VMULPS       X2, X1, X1
	VCVTPS2PD    X1, Y1
	VADDSD       X1, X0, X0
	VPERMILPD    $1, X1, X2
	VADDSD       X2, X0, X0
	VEXTRACTF128 $1, Y1, X1
	VADDSD       X1, X0, X0
	VPERMILPD    $1, X1, X2
	VADDSD       X2, X0, X0
	ADDQ         $8, SI
	ADDQ         $8, DI
	SUBQ         $4, CX
	JMP          f16quad

f16tail:
	TESTQ     CX, CX
	JEQ       f16tdone
	MOVWLZX   (SI), AX
	VMOVD     AX, X1
	VCVTPH2PS X1, X1
	MOVWLZX   (DI), AX
	VMOVD     AX, X2
	VCVTPH2PS X2, X2
	VMULSS    X2, X1, X1
	VCVTSS2SD X1, X1, X1
	VADDSD    X1, X0, X0
	ADDQ      $2, SI
	ADDQ      $2, DI
	DECQ      CX
	JMP       f16tail

f16tdone:
	VZEROUPPER
	MOVSD X0, ret+32(FP)
	RET

// func ggmlDotF16x16AVX2(x, y unsafe.Pointer, n int) float32
// The vector part of ggml_vec_dot_f16 (AVX-512 builds) over n, a multiple
// of 64: 4 accumulators x 16 lanes of converted halves, then the reduce.
TEXT ·ggmlDotF16x16AVX2(SB), NOSPLIT, $0-28
	MOVQ   x+0(FP), SI
	MOVQ   y+8(FP), DI
	MOVQ   n+16(FP), CX
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	VXORPS Y4, Y4, Y4
	VXORPS Y5, Y5, Y5
	VXORPS Y6, Y6, Y6
	VXORPS Y7, Y7, Y7

h16loop:
	CMPQ        CX, $64
	JLT         h16reduce
	F16DOT16STEP
	JMP         h16loop

h16reduce:
	REDUCE16
	VZEROUPPER
	MOVSS        X0, ret+24(FP)
	RET

// func ggmlDotF16x8AVX2(x, y unsafe.Pointer, n int) float32
// The vector part of ggml_vec_dot_f16 (AVX2 builds) over n, a multiple of
// 32: 4 accumulators x 8 lanes, reduce with two hadds.
TEXT ·ggmlDotF16x8AVX2(SB), NOSPLIT, $0-28
	MOVQ   x+0(FP), SI
	MOVQ   y+8(FP), DI
	MOVQ   n+16(FP), CX
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3

h8loop:
	CMPQ        CX, $32
	JLT         h8reduce
	F16DOT8STEP
	JMP         h8loop

h8reduce:
	REDUCE8
	VZEROUPPER
	MOVSS        X0, ret+24(FP)
	RET

// One element of four rows for ggmlDotF16Rows4AVX2: X8 holds q[i] as f32.
#define ROWSTEP(R, ACC) \
	MOVWLZX   (R)(DX*2), AX \
	VMOVD     AX, X9        \
	VCVTPH2PS X9, X9        \
	VMULSS    X8, X9, X9    \
	VCVTSS2SD X9, X9, X9    \
	VADDSD    X9, ACC, ACC

// Four elements of one row: X8 holds q[i..i+3] as f32; the products are
// exact, their float64 additions stay in element order.
#define ROWQUAD(R, ACC) \
	VCVTPH2PS    (R)(DX*2), X9 \
	VMULPS       X8, X9, X9    \
	VCVTPS2PD    X9, Y9        \
	VADDSD       X9, ACC, ACC  \
	VPERMILPD    $1, X9, X10   \
	VADDSD       X10, ACC, ACC \
	VEXTRACTF128 $1, Y9, X9    \
	VADDSD       X9, ACC, ACC  \
	VPERMILPD    $1, X9, X10   \
	VADDSD       X10, ACC, ACC

// func ggmlDotF16Rows4AVX2(r0, r1, r2, r3, q unsafe.Pointer, n int, out *[4]float32)
// ggml_vec_dot_f16 for n < one vector step (all leftovers) of four rows
// against q at once: four independent float64 sums, each in element order.
TEXT ·ggmlDotF16Rows4AVX2(SB), NOSPLIT, $0-56
	MOVQ   r0+0(FP), R8
	MOVQ   r1+8(FP), R9
	MOVQ   r2+16(FP), R10
	MOVQ   r3+24(FP), R11
	MOVQ   q+32(FP), SI
	MOVQ   n+40(FP), CX
	VXORPD X0, X0, X0
	VXORPD X1, X1, X1
	VXORPD X2, X2, X2
	VXORPD X3, X3, X3
	XORQ   DX, DX

rows4quad:
	LEAQ      4(DX), AX
	CMPQ      AX, CX
	JGT       rows4loop
	VCVTPH2PS (SI)(DX*2), X8
	ROWQUAD(R8, X0)
	ROWQUAD(R9, X1)
	ROWQUAD(R10, X2)
	ROWQUAD(R11, X3)
	ADDQ      $4, DX
	JMP       rows4quad

rows4loop:
	CMPQ      DX, CX
	JGE       rows4done
	MOVWLZX   (SI)(DX*2), AX
	VMOVD     AX, X8
	VCVTPH2PS X8, X8
	ROWSTEP(R8, X0)
	ROWSTEP(R9, X1)
	ROWSTEP(R10, X2)
	ROWSTEP(R11, X3)
	INCQ      DX
	JMP       rows4loop

rows4done:
	MOVQ      out+48(FP), DI
	VCVTSD2SS X0, X0, X0
	VMOVSS    X0, (DI)
	VCVTSD2SS X1, X1, X1
	VMOVSS    X1, 4(DI)
	VCVTSD2SS X2, X2, X2
	VMOVSS    X2, 8(DI)
	VCVTSD2SS X3, X3, X3
	VMOVSS    X3, 12(DI)
	VZEROUPPER
	RET

// func ggmlFlashAccF16AVX2(acc, v unsafe.Pointer, offs *int, ms, vs *float32, n, hd int)
// The value accumulation of ggml's one-chunk flash attention over an f16
// cache, for 8 columns at a time (columns are independent): for each key
// j, acc = f16(acc*ms[j]) when ms[j] != 1 (ggml_vec_scale_f16 on a new
// maximum), then acc = f16(fma(v_j, vs[j], acc)) (ggml_vec_mad_f16).
// hd must be a multiple of 8.
TEXT ·ggmlFlashAccF16AVX2(SB), NOSPLIT, $0-56
	MOVQ         acc+0(FP), DI
	MOVQ         v+8(FP), SI
	MOVQ         hd+48(FP), R12
	MOVL         $0x3f800000, AX
	VMOVD        AX, X7              // 1.0
	XORQ         R13, R13            // column

faccol:
	CMPQ      R13, R12
	JGE       facdone
	VCVTPH2PS (DI)(R13*2), Y0
	MOVQ      offs+16(FP), R8
	MOVQ      ms+24(FP), R9
	MOVQ      vs+32(FP), R10
	MOVQ      n+40(FP), CX

fackey:
	TESTQ        CX, CX
	JEQ          faccolend
	VMOVSS       (R9), X1
	VUCOMISS     X7, X1
	JNE          facscale
	JPS          facscale

facmad:
	MOVQ         (R8), R11
	ADDQ         R13, R11
	VCVTPH2PS    (SI)(R11*2), Y2
	VBROADCASTSS (R10), Y1
	VFMADD231PS  Y1, Y2, Y0
	VCVTPS2PH    $0, Y0, X2
	VCVTPH2PS    X2, Y0
	ADDQ         $8, R8
	ADDQ         $4, R9
	ADDQ         $4, R10
	DECQ         CX
	JMP          fackey

facscale:
	VBROADCASTSS X1, Y1
	VMULPS       Y1, Y0, Y0
	VCVTPS2PH    $0, Y0, X2
	VCVTPH2PS    X2, Y0
	JMP          facmad

faccolend:
	VCVTPS2PH $0, Y0, (DI)(R13*2)
	ADDQ      $8, R13
	JMP       faccol

facdone:
	VZEROUPPER
	RET

// One column block of 8 in ggmlFlashAcc64AVX2: ACC = f16(fma(v, Y8, ACC)),
// v the 8 halves at OFF(R11); T/XT a temporary.
#define FAMAD(OFF, ACC, T, XT) \
	VCVTPH2PS   OFF(R11), T \
	VFMADD231PS Y8, T, ACC  \
	VCVTPS2PH   $0, ACC, XT \
	VCVTPH2PS   XT, ACC

// ACC = f16(ACC * Y8).
#define FASCALE(ACC, XT) \
	VMULPS    Y8, ACC, ACC \
	VCVTPS2PH $0, ACC, XT  \
	VCVTPH2PS XT, ACC

// func ggmlFlashAcc64AVX2(acc, v unsafe.Pointer, offs *int, ms, vs *float32, n int)
// ggmlFlashAccF16AVX2 for 64 columns at once: the eight 8-column blocks
// are independent chains, run side by side key by key instead of one
// after another, so a key costs the blocks' throughput rather than eight
// times the convert-FMA-convert latency. Same operations per column.
TEXT ·ggmlFlashAcc64AVX2(SB), NOSPLIT, $0-48
	MOVQ      acc+0(FP), DI
	MOVQ      v+8(FP), SI
	MOVQ      offs+16(FP), R8
	MOVQ      ms+24(FP), R9
	MOVQ      vs+32(FP), R10
	MOVQ      n+40(FP), CX
	MOVL      $0x3f800000, AX
	VMOVD     AX, X15            // 1.0
	VCVTPH2PS 0(DI), Y0
	VCVTPH2PS 16(DI), Y1
	VCVTPH2PS 32(DI), Y2
	VCVTPH2PS 48(DI), Y3
	VCVTPH2PS 64(DI), Y4
	VCVTPH2PS 80(DI), Y5
	VCVTPH2PS 96(DI), Y6
	VCVTPH2PS 112(DI), Y7

fa64key:
	TESTQ    CX, CX
	JEQ      fa64done
	VMOVSS   (R9), X8
	VUCOMISS X15, X8
	JNE      fa64scale
	JPS      fa64scale

fa64mad:
	MOVQ         (R8), R11
	LEAQ         (SI)(R11*2), R11
	VBROADCASTSS (R10), Y8
	FAMAD(0, Y0, Y9, X9)
	FAMAD(16, Y1, Y10, X10)
	FAMAD(32, Y2, Y11, X11)
	FAMAD(48, Y3, Y12, X12)
	FAMAD(64, Y4, Y9, X9)
	FAMAD(80, Y5, Y10, X10)
	FAMAD(96, Y6, Y11, X11)
	FAMAD(112, Y7, Y12, X12)
	ADDQ         $8, R8
	ADDQ         $4, R9
	ADDQ         $4, R10
	DECQ         CX
	JMP          fa64key

fa64scale:
	VBROADCASTSS X8, Y8
	FASCALE(Y0, X9)
	FASCALE(Y1, X10)
	FASCALE(Y2, X11)
	FASCALE(Y3, X12)
	FASCALE(Y4, X9)
	FASCALE(Y5, X10)
	FASCALE(Y6, X11)
	FASCALE(Y7, X12)
	JMP fa64mad

fa64done:
	VCVTPS2PH $0, Y0, 0(DI)
	VCVTPS2PH $0, Y1, 16(DI)
	VCVTPS2PH $0, Y2, 32(DI)
	VCVTPS2PH $0, Y3, 48(DI)
	VCVTPS2PH $0, Y4, 64(DI)
	VCVTPS2PH $0, Y5, 80(DI)
	VCVTPS2PH $0, Y6, 96(DI)
	VCVTPS2PH $0, Y7, 112(DI)
	VZEROUPPER
	RET

// func ggmlSgemmF16x16AVX2(a, b unsafe.Pointer, n int) float32
// tinyBLAS<16> over IEEE halves (llama.cpp's f16 weights times activations
// converted to f16): one 16-lane accumulator, then _mm512_reduce_add_ps.
TEXT ·ggmlSgemmF16x16AVX2(SB), NOSPLIT, $0-28
	MOVQ   a+0(FP), SI
	MOVQ   b+8(FP), DI
	MOVQ   n+16(FP), CX
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1

t16loop:
	CMPQ        CX, $16
	JLT         t16reduce
	VCVTPH2PS   (SI), Y8
	VCVTPH2PS   (DI), Y9
	VFMADD231PS Y9, Y8, Y0
	VCVTPH2PS   16(SI), Y8
	VCVTPH2PS   16(DI), Y9
	VFMADD231PS Y9, Y8, Y1
	ADDQ        $32, SI
	ADDQ        $32, DI
	SUBQ        $16, CX
	JMP         t16loop

t16reduce:
	VADDPS       Y1, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VADDPS       X1, X0, X0
	HSUM4
	VZEROUPPER
	MOVSS        X0, ret+24(FP)
	RET

// func ggmlSgemmF16x8AVX2(a, b unsafe.Pointer, n int) float32
// tinyBLAS<8> over IEEE halves.
TEXT ·ggmlSgemmF16x8AVX2(SB), NOSPLIT, $0-28
	MOVQ   a+0(FP), SI
	MOVQ   b+8(FP), DI
	MOVQ   n+16(FP), CX
	VXORPS Y0, Y0, Y0

t8loop:
	CMPQ        CX, $8
	JLT         t8reduce
	VCVTPH2PS   (SI), Y8
	VCVTPH2PS   (DI), Y9
	VFMADD231PS Y9, Y8, Y0
	ADDQ        $16, SI
	ADDQ        $16, DI
	SUBQ        $8, CX
	JMP         t8loop

t8reduce:
	VEXTRACTF128 $1, Y0, X1
	VADDPS       X1, X0, X0
	HSUM4
	VZEROUPPER
	MOVSS        X0, ret+24(FP)
	RET

// func ggmlF16ToF32AVX2(dst *float32, src unsafe.Pointer, n int)
TEXT ·ggmlF16ToF32AVX2(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n+16(FP), CX

cvt8:
	CMPQ      CX, $8
	JLT       cvt1
	VCVTPH2PS (SI), Y0
	VMOVUPS   Y0, (DI)
	ADDQ      $16, SI
	ADDQ      $32, DI
	SUBQ      $8, CX
	JMP       cvt8

cvt1:
	TESTQ     CX, CX
	JEQ       cvtdone
	MOVWLZX   (SI), AX
	VMOVD     AX, X0
	VCVTPH2PS X0, X0
	VMOVSS    X0, (DI)
	ADDQ      $2, SI
	ADDQ      $4, DI
	DECQ      CX
	JMP       cvt1

cvtdone:
	VZEROUPPER
	RET

// func ggmlF32ToF16AVX2(dst *uint16, src *float32, n int)
// VCVTPS2PH with immediate 0 rounds to nearest even whatever MXCSR says,
// as F32ToF16 does.
TEXT ·ggmlF32ToF16AVX2(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n+16(FP), CX

narrow8:
	CMPQ      CX, $8
	JLT       narrow1
	VMOVUPS   (SI), Y0
	VCVTPS2PH $0, Y0, X0
	VMOVDQU   X0, (DI)
	ADDQ      $32, SI
	ADDQ      $16, DI
	SUBQ      $8, CX
	JMP       narrow8

narrow1:
	TESTQ     CX, CX
	JEQ       narrowdone
	VMOVSS    (SI), X0
	VCVTPS2PH $0, X0, X0
	VMOVD     X0, AX
	MOVW      AX, (DI)
	ADDQ      $4, SI
	ADDQ      $2, DI
	DECQ      CX
	JMP       narrow1

narrowdone:
	VZEROUPPER
	RET

// For the row loops (R8 base, R9 offs, R10 rows, R11 q, R12 n, R13 out):
// a row's start (SI its keys, DI q, CX n, four accumulators cleared)
// and its end (store X0, next offset and output).
#define ROWSETUP \
	MOVQ   (R9), SI \
	LEAQ   (R8)(SI*2), SI \
	MOVQ   R11, DI \
	MOVQ   R12, CX \
	VXORPS Y0, Y0, Y0 \
	VXORPS Y1, Y1, Y1 \
	VXORPS Y2, Y2, Y2 \
	VXORPS Y3, Y3, Y3

#define ROWNEXT \
	VMOVSS       X0, (R13) \
	ADDQ         $8, R9 \
	ADDQ         $4, R13 \
	DECQ         R10

// func ggmlDotF16RowsX16AVX2(base unsafe.Pointer, offs *int, rows int, q unsafe.Pointer, n int, out *float32)
// ggmlDotF16x16AVX2 of q against rows rows of base (row r at element
// offs[r]), n a multiple of 64: the same accumulators, order and reduce
// per row, without a call per row (decode attention scores one key at a
// time over thousands of keys).
TEXT ·ggmlDotF16RowsX16AVX2(SB), NOSPLIT, $0-48
	MOVQ base+0(FP), R8
	MOVQ offs+8(FP), R9
	MOVQ rows+16(FP), R10
	MOVQ q+24(FP), R11
	MOVQ n+32(FP), R12
	MOVQ out+40(FP), R13

r16row:
	TESTQ  R10, R10
	JZ     r16done
	ROWSETUP
	VXORPS Y4, Y4, Y4
	VXORPS Y5, Y5, Y5
	VXORPS Y6, Y6, Y6
	VXORPS Y7, Y7, Y7

r16loop:
	F16DOT16STEP
	JNZ         r16loop

	REDUCE16
	ROWNEXT
	JMP          r16row

r16done:
	VZEROUPPER
	RET

// func ggmlDotF16RowsX8AVX2(base unsafe.Pointer, offs *int, rows int, q unsafe.Pointer, n int, out *float32)
// ggmlDotF16x8AVX2 per row, as ggmlDotF16RowsX16AVX2 (n a multiple of 32).
TEXT ·ggmlDotF16RowsX8AVX2(SB), NOSPLIT, $0-48
	MOVQ base+0(FP), R8
	MOVQ offs+8(FP), R9
	MOVQ rows+16(FP), R10
	MOVQ q+24(FP), R11
	MOVQ n+32(FP), R12
	MOVQ out+40(FP), R13

r8row:
	TESTQ  R10, R10
	JZ     r8done
	ROWSETUP

r8loop:
	F16DOT8STEP
	JNZ         r8loop

	REDUCE8
	ROWNEXT
	JMP          r8row

r8done:
	VZEROUPPER
	RET
