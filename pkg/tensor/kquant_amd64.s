// exactness: K-quant dot products with llama.cpp's rounding (kquant.go):
// each kernel runs the integer steps of ggml's AVX2 kernel (so integers
// land in the same lanes) and then the same float operations in the same
// order. One weight row against one q8_K activation row.

#include "textflag.h"
#include "kquant_amd64.h"

// func q4KDotAVX2(w *byte, xq *int8, xd *float32, xbs *int16, nb int, gemm int) float32
// ggml_gemv_q4_K_8x8_q8_K (gemm == 0: acc += isum*(d*dy) per super-block)
// or ggml_gemm_q4_K_8x8_q8_K (gemm != 0: once per 64-value chunk), the
// mins likewise into their own chain, acc - accMin at the end.
TEXT ·q4KDotAVX2(SB), NOSPLIT, $0-52
	MOVQ    w+0(FP), SI
	MOVQ    xq+8(FP), DI
	MOVQ    xd+16(FP), DX
	MOVQ    xbs+24(FP), BX
	MOVQ    nb+32(FP), CX
	MOVQ    gemm+40(FP), R8
	VMOVDQU kqm4<>(SB), Y15
	VXORPS  X14, X14, X14
	VXORPS  X13, X13, X13

q4Kloop:
	KSCALES
	KMINS
	KPAIR4(16, 0, 0, Y8)
	KPAIR4(48, 64, 1, Y9)
	KPAIR4(80, 128, 2, Y10)
	KPAIR4(112, 192, 3, Y11)
	// [isum of chunk 0, 1, 2, 3] in X8.
	VPHADDD      Y9, Y8, Y8
	VPHADDD      Y11, Y10, Y10
	VPHADDD      Y10, Y8, Y8
	VEXTRACTI128 $1, Y8, X9
	VPADDD       X9, X8, X8
	FP16(0(SI), X4)
	FP16(2(SI), X5)
	VMOVSS       (DX), X6
	VMULSS       X6, X4, X4
	VMULSS       X6, X5, X5
	TESTQ        R8, R8
	JNZ          q4Kgemm
	VPSHUFD      $0x4e, X8, X7
	VPADDD       X7, X8, X8
	VPSHUFD      $0xb1, X8, X7
	VPADDD       X7, X8, X8
	VPSHUFD      $0x4e, X2, X7
	VPADDD       X7, X2, X2
	VPSHUFD      $0xb1, X2, X7
	VPADDD       X7, X2, X2
	VCVTDQ2PS    X8, X8
	VCVTDQ2PS    X2, X2
	VFMADD231SS  X4, X8, X14
	VFMADD231SS  X5, X2, X13
	JMP          q4Knext

q4Kgemm:
	VCVTDQ2PS   X8, X8
	VCVTDQ2PS   X2, X2
	VFMADD231SS X4, X8, X14
	VFMADD231SS X5, X2, X13
	VPSHUFD     $0x55, X8, X7
	VPSHUFD     $0x55, X2, X3
	VFMADD231SS X4, X7, X14
	VFMADD231SS X5, X3, X13
	VPSHUFD     $0xaa, X8, X7
	VPSHUFD     $0xaa, X2, X3
	VFMADD231SS X4, X7, X14
	VFMADD231SS X5, X3, X13
	VPSHUFD     $0xff, X8, X7
	VPSHUFD     $0xff, X2, X3
	VFMADD231SS X4, X7, X14
	VFMADD231SS X5, X3, X13

q4Knext:
	ADDQ $144, SI
	ADDQ $256, DI
	ADDQ $4, DX
	ADDQ $32, BX
	DECQ CX
	JNZ  q4Kloop
	VSUBSS     X13, X14, X0
	VMOVSS     X0, ret+48(FP)
	VZEROUPPER
	RET

// KQ5CHUNK(R): chunk R of a q5_K block (quants at 48+32R, high bits 2R
// and 2R+1 of the qh bytes in Y11, shifted down as the chunks pass), its
// scales words 2R / 2R+1 of Y1, into the lanes Y3.
#define KQ5CHUNK(R) \
	VMOVDQU    (48+32*(R))(SI), Y4            \
	VPAND      Y15, Y4, Y5                    \
	VPSRLW     $4, Y4, Y4                     \
	VPAND      Y15, Y4, Y4                    \
	VPAND      Y12, Y11, Y6                   \
	VPSLLW     $4, Y6, Y6                     \
	VPADDB     Y6, Y5, Y5                     \
	VPSRLW     $1, Y11, Y11                   \
	VPAND      Y12, Y11, Y6                   \
	VPSLLW     $4, Y6, Y6                     \
	VPADDB     Y6, Y4, Y4                     \
	VPSRLW     $1, Y11, Y11                   \
	VPMADDUBSW (64*(R))(DI), Y5, Y5           \
	VPMADDUBSW (64*(R)+32)(DI), Y4, Y4        \
	VPSHUFB    kq4shuf<>+(64*(R))(SB), Y1, Y6 \
	VPSHUFB    kq4shuf<>+(64*(R)+32)(SB), Y1, Y7 \
	VPMADDWD   Y6, Y5, Y5                     \
	VPMADDWD   Y7, Y4, Y4                     \
	VPADDD     Y4, Y5, Y5                     \
	VPADDD     Y5, Y3, Y3

// func q5KRowsAVX2(w *byte, xq *int8, xd *float32, xbs *int16, nb int, rows int, out *float32)
// The AVX2 ggml_vec_dot_q5_K_q8_K for rows consecutive rows (nb blocks
// each) against one token: out[r] is row r. Frame: the out pointer.
TEXT ·q5KRowsAVX2(SB), NOSPLIT, $8-56
	MOVQ    w+0(FP), SI
	MOVQ    rows+40(FP), R8
	MOVQ    out+48(FP), AX
	MOVQ    AX, 0(SP)
	VMOVDQU kqm4<>(SB), Y15
	VMOVDQU kqone<>(SB), Y12

q5Krow:
	MOVQ    xq+8(FP), DI
	MOVQ    xd+16(FP), DX
	MOVQ    xbs+24(FP), BX
	MOVQ    nb+32(FP), CX
	VXORPS  Y14, Y14, Y14
	VXORPS  X13, X13, X13

q5Kloop:
	KSCALES
	KMINS
	// summs += -(dy*dmin) * (sum of the four), fused.
	VPSHUFD     $0x4e, X2, X7
	VPADDD      X7, X2, X2
	VPSHUFD     $0xb1, X2, X7
	VPADDD      X7, X2, X2
	VCVTDQ2PS   X2, X2
	FP16(2(SI), X5)
	VMULSS      (DX), X5, X5
	MOVL        $0x80000000, AX
	VMOVD       AX, X6
	VXORPS      X6, X5, X5
	VFMADD231SS X2, X5, X13
	VMOVDQU     16(SI), Y11
	VPXOR       Y3, Y3, Y3
	KQ5CHUNK(0)
	KQ5CHUNK(1)
	KQ5CHUNK(2)
	KQ5CHUNK(3)
	FP16(0(SI), X4)
	VMULSS       (DX), X4, X4
	VBROADCASTSS X4, Y4
	VCVTDQ2PS    Y3, Y3
	VFMADD231PS  Y3, Y4, Y14
	ADDQ         $176, SI
	ADDQ         $256, DI
	ADDQ         $4, DX
	ADDQ         $32, BX
	DECQ         CX
	JNZ          q5Kloop
	HSUM8
	VADDSS       X13, X0, X0
	MOVQ         0(SP), AX
	VMOVSS       X0, (AX)
	ADDQ         $4, AX
	MOVQ         AX, 0(SP)
	DECQ         R8
	JNZ          q5Krow
	VZEROUPPER
	RET

// KQ6CHUNK: q8 products of one 32-value chunk Q (unsigned quants) at
// OFF(DI), scaled by the int16 scales 2*IS and 2*IS+1 (word IS of the low
// and the high lane of Y12) per half.
#define KQ6CHUNK(Q, OFF, IS) \
	VPMADDUBSW OFF(DI), Q, Q                  \
	VPSHUFB    kq4shuf<>+(32*(IS))(SB), Y12, Y11 \
	VPMADDWD   Y11, Q, Q                      \
	VPADDD     Q, Y3, Y3

// KQ6HALF: the 128 values of half J (ql at 64J, qh at 128+32J).
#define KQ6HALF(J) \
	VMOVDQU (64*J)(SI), Y4          \
	VMOVDQU (64*J+32)(SI), Y5       \
	VMOVDQU (128+32*J)(SI), Y6      \
	VPAND   kqm3<>(SB), Y6, Y7      \
	VPSLLW  $4, Y7, Y7              \
	VPAND   kqm12<>(SB), Y6, Y8     \
	VPSLLW  $2, Y8, Y8              \
	VPAND   kqm48<>(SB), Y6, Y9     \
	VPAND   kqmc0<>(SB), Y6, Y10    \
	VPSRLW  $2, Y10, Y10            \
	VPAND   Y15, Y4, Y11            \
	VPOR    Y11, Y7, Y7             \
	VPAND   Y15, Y5, Y11            \
	VPOR    Y11, Y8, Y8             \
	VPSRLW  $4, Y4, Y4              \
	VPAND   Y15, Y4, Y4             \
	VPOR    Y4, Y9, Y9              \
	VPSRLW  $4, Y5, Y5              \
	VPAND   Y15, Y5, Y5             \
	VPOR    Y5, Y10, Y10            \
	KQ6CHUNK(Y7, 128*J, 4*J)        \
	KQ6CHUNK(Y8, 128*J+32, 4*J+1)   \
	KQ6CHUNK(Y9, 128*J+64, 4*J+2)   \
	KQ6CHUNK(Y10, 128*J+96, 4*J+3)

// func q6KRowsAVX2(w *byte, xq *int8, xd *float32, xbs *int16, nb int, rows int, out *float32)
// The AVX2 ggml_vec_dot_q6_K_q8_K for rows consecutive rows (nb blocks
// each) against one token: out[r] is row r.
TEXT ·q6KRowsAVX2(SB), NOSPLIT, $0-56
	MOVQ    w+0(FP), SI
	MOVQ    rows+40(FP), R13
	MOVQ    out+48(FP), R12
	VMOVDQU kqm4<>(SB), Y15

q6Krow:
	MOVQ    xq+8(FP), DI
	MOVQ    xd+16(FP), DX
	MOVQ    xbs+24(FP), BX
	MOVQ    nb+32(FP), CX
	VXORPS  Y14, Y14, Y14

q6Kloop:
	VMOVDQU   192(SI), X0
	VPMOVSXBW X0, Y1
	VMOVDQU   (BX), Y2
	VPMADDWD  Y1, Y2, Y2
	VPSLLD    $5, Y2, Y2
	VPSHUFB   kq6eo<>(SB), X0, X0
	VPMOVSXBW X0, Y12
	VPXOR     Y3, Y3, Y3
	KQ6HALF(0)
	KQ6HALF(1)
	VPSUBD       Y2, Y3, Y3
	VCVTDQ2PS    Y3, Y3
	FP16(208(SI), X4)
	VMULSS       (DX), X4, X4
	VBROADCASTSS X4, Y4
	VFMADD231PS  Y3, Y4, Y14
	ADDQ         $210, SI
	ADDQ         $256, DI
	ADDQ         $4, DX
	ADDQ         $32, BX
	DECQ         CX
	JNZ          q6Kloop
	HSUM8
	VMOVSS       X0, (R12)
	ADDQ         $4, R12
	DECQ         R13
	JNZ          q6Krow
	VZEROUPPER
	RET

// KX4SETUP loads the arguments of a four-token kernel (w, xq, xd, xbs,
// nb) and the token strides: token t's activation bytes at DI + t*R8
// (R9 = 3*R8), its scales at DX + t*R10 (R11 = 3*R10), its 16-value sums
// at BX + t*R12 (R13 = 3*R12); Y15 the nibble mask, Y11-Y14 (the tokens'
// float accumulators) zero.
#define KX4SETUP \
	MOVQ    w+0(FP), SI       \
	MOVQ    xq+8(FP), DI      \
	MOVQ    xd+16(FP), DX     \
	MOVQ    xbs+24(FP), BX    \
	MOVQ    nb+32(FP), CX     \
	MOVQ    CX, R8            \
	SHLQ    $8, R8            \
	LEAQ    (R8)(R8*2), R9    \
	MOVQ    CX, R10           \
	SHLQ    $2, R10           \
	LEAQ    (R10)(R10*2), R11 \
	MOVQ    CX, R12           \
	SHLQ    $5, R12           \
	LEAQ    (R12)(R12*2), R13 \
	VMOVDQU kqm4<>(SB), Y15   \
	VXORPS  Y11, Y11, Y11     \
	VXORPS  Y12, Y12, Y12     \
	VXORPS  Y13, Y13, Y13     \
	VXORPS  Y14, Y14, Y14

// Q6X4TOK: token t's products with chunk Q (its activation bytes at
// AADDR) scaled by Y8, into its lanes YACC.
#define Q6X4TOK(AADDR, YACC) \
	VPMADDUBSW AADDR, Y7, Y10 \
	VPMADDWD   Y8, Y10, Y10   \
	VPADDD     Y10, YACC, YACC

// Q6X4CHUNK: chunk CH (0..7, activation bytes at 32*CH) of the four
// tokens; Y7 holds its unsigned quants, Y9 the block's scales as int16
// (even ones in the low lane, odd ones in the high one), so word CH of
// each lane is the scale of the chunk's first / second 16 values.
#define Q6X4CHUNK(CH) \
	VPSHUFB kq4shuf<>+(32*(CH))(SB), Y9, Y8 \
	Q6X4TOK((32*(CH))(DI), Y0)              \
	Q6X4TOK((32*(CH))(DI)(R8*1), Y1)        \
	Q6X4TOK((32*(CH))(DI)(R8*2), Y2)        \
	Q6X4TOK((32*(CH))(DI)(R9*1), Y3)

// Q6X4HALF(J): the 128 values of half J (ql at 64J, qh at 128+32J),
// decoded as KQ6HALF does, one chunk at a time.
#define Q6X4HALF(J) \
	VMOVDQU (64*J)(SI), Y4          \
	VMOVDQU (64*J+32)(SI), Y5       \
	VMOVDQU (128+32*J)(SI), Y6      \
	VPAND   kqm3<>(SB), Y6, Y7      \
	VPSLLW  $4, Y7, Y7              \
	VPAND   Y15, Y4, Y10            \
	VPOR    Y10, Y7, Y7             \
	Q6X4CHUNK(4*J)                  \
	VPAND   kqm12<>(SB), Y6, Y7     \
	VPSLLW  $2, Y7, Y7              \
	VPAND   Y15, Y5, Y10            \
	VPOR    Y10, Y7, Y7             \
	Q6X4CHUNK(4*J+1)                \
	VPAND   kqm48<>(SB), Y6, Y7     \
	VPSRLW  $4, Y4, Y4              \
	VPAND   Y15, Y4, Y4             \
	VPOR    Y4, Y7, Y7              \
	Q6X4CHUNK(4*J+2)                \
	VPAND   kqmc0<>(SB), Y6, Y7     \
	VPSRLW  $2, Y7, Y7              \
	VPSRLW  $4, Y5, Y5              \
	VPAND   Y15, Y5, Y5             \
	VPOR    Y5, Y7, Y7              \
	Q6X4CHUNK(4*J+3)

// Q6X4FUSE1: token t's lanes YI fused into its accumulators YF with
// d*dy (X9 = the block's d).
#define Q6X4FUSE1(DYADDR, YI, YF) \
	VMULSS       DYADDR, X9, X10 \
	VBROADCASTSS X10, Y10        \
	VCVTDQ2PS    YI, YI          \
	VFMADD231PS  YI, Y10, YF

// Q6X4HSUM: ggml's hsum_float_8 of YF (X-form XF) into OUT.
#define Q6X4HSUM(YF, XF, OUT) \
	KHSUM(YF, XF) \
	VMOVSS X0, OUT

// Q6X4VTOK is Q6X4TOK with AVX-512 VNNI: VPDPWSSD multiplies by the scales
// and adds into the lanes in one instruction (the same int32 lanes as
// VPMADDWD + VPADDD), as q6KRowsVNNI does for one token.
#define Q6X4VTOK(AADDR, YACC) \
	VPMADDUBSW AADDR, Y7, Y10 \
	VPDPWSSD   Y8, Y10, YACC

#define Q6X4VCHUNK(CH) \
	VPSHUFB kq4shuf<>+(32*(CH))(SB), Y9, Y8 \
	Q6X4VTOK((32*(CH))(DI), Y0)              \
	Q6X4VTOK((32*(CH))(DI)(R8*1), Y1)        \
	Q6X4VTOK((32*(CH))(DI)(R8*2), Y2)        \
	Q6X4VTOK((32*(CH))(DI)(R9*1), Y3)

#define Q6X4VHALF(J) \
	VMOVDQU (64*J)(SI), Y4          \
	VMOVDQU (64*J+32)(SI), Y5       \
	VMOVDQU (128+32*J)(SI), Y6      \
	VPAND   kqm3<>(SB), Y6, Y7      \
	VPSLLW  $4, Y7, Y7              \
	VPAND   Y15, Y4, Y10            \
	VPOR    Y10, Y7, Y7             \
	Q6X4VCHUNK(4*J)                 \
	VPAND   kqm12<>(SB), Y6, Y7     \
	VPSLLW  $2, Y7, Y7              \
	VPAND   Y15, Y5, Y10            \
	VPOR    Y10, Y7, Y7             \
	Q6X4VCHUNK(4*J+1)               \
	VPAND   kqm48<>(SB), Y6, Y7     \
	VPSRLW  $4, Y4, Y4              \
	VPAND   Y15, Y4, Y4             \
	VPOR    Y4, Y7, Y7              \
	Q6X4VCHUNK(4*J+2)               \
	VPAND   kqmc0<>(SB), Y6, Y7     \
	VPSRLW  $2, Y7, Y7              \
	VPSRLW  $4, Y5, Y5              \
	VPAND   Y15, Y5, Y5             \
	VPOR    Y5, Y7, Y7              \
	Q6X4VCHUNK(4*J+3)

// Q6X4BLOCK is one block of the four-token q6_K kernel, its halves decoded
// with HALF (Q6X4HALF, or Q6X4VHALF with AVX-512 VNNI). Each token's lanes
// start at -32*(bs[2l]*sc[2l] + bs[2l+1]*sc[2l+1]).
#define Q6X4BLOCK(HALF) \
	VMOVDQU   192(SI), X8 \
	VPMOVSXBW X8, Y7 \
	VPXOR     Y9, Y9, Y9 \
	VPSUBW    Y7, Y9, Y7 \
	VPMADDWD  (BX), Y7, Y0 \
	VPSLLD    $5, Y0, Y0 \
	VPMADDWD  (BX)(R12*1), Y7, Y1 \
	VPSLLD    $5, Y1, Y1 \
	VPMADDWD  (BX)(R12*2), Y7, Y2 \
	VPSLLD    $5, Y2, Y2 \
	VPMADDWD  (BX)(R13*1), Y7, Y3 \
	VPSLLD    $5, Y3, Y3 \
	VPSHUFB   kq6eo<>(SB), X8, X8 \
	VPMOVSXBW X8, Y9 \
	HALF(0) \
	HALF(1) \
	FP16(208(SI), X9) \
	Q6X4FUSE1((DX), Y0, Y11) \
	Q6X4FUSE1((DX)(R10*1), Y1, Y12) \
	Q6X4FUSE1((DX)(R10*2), Y2, Y13) \
	Q6X4FUSE1((DX)(R11*1), Y3, Y14) \
	ADDQ $210, SI \
	ADDQ $256, DI \
	ADDQ $4, DX \
	ADDQ $32, BX \
	DECQ CX

// func q6KDotx4AVX2(w *byte, xq *int8, xd *float32, xbs *int16, nb int, out *[4]float32)
// The AVX2 ggml_vec_dot_q6_K_q8_K of one row against four consecutive
// tokens (token t's quants at xq + t*256*nb, scales at xd + t*nb, sums at
// xbs + t*16*nb): each token's lanes hold the same integers, fused and
// reduced in the same order, as q6KRowsAVX2 on that token alone.
TEXT ·q6KDotx4AVX2(SB), NOSPLIT, $0-48
	KX4SETUP

q6x4loop:
	Q6X4BLOCK(Q6X4HALF)
	JNZ  q6x4loop
	MOVQ out+40(FP), AX
	Q6X4HSUM(Y11, X11, 0(AX))
	Q6X4HSUM(Y12, X12, 4(AX))
	Q6X4HSUM(Y13, X13, 8(AX))
	Q6X4HSUM(Y14, X14, 12(AX))
	VZEROUPPER
	RET

// func q6KDotx4VNNI(w *byte, xq *int8, xd *float32, xbs *int16, nb int, out *[4]float32)
// q6KDotx4AVX2 with AVX-512 VNNI (Q6X4VTOK): the same lane integers and
// float steps, so the same bits.
TEXT ·q6KDotx4VNNI(SB), NOSPLIT, $0-48
	KX4SETUP

q6x4vloop:
	Q6X4BLOCK(Q6X4VHALF)
	JNZ  q6x4vloop
	MOVQ out+40(FP), AX
	Q6X4HSUM(Y11, X11, 0(AX))
	Q6X4HSUM(Y12, X12, 4(AX))
	Q6X4HSUM(Y13, X13, 8(AX))
	Q6X4HSUM(Y14, X14, 12(AX))
	VZEROUPPER
	RET

DATA kqsign<>+0(SB)/4, $0x80000000
DATA kqsign<>+4(SB)/4, $0x80000000
DATA kqsign<>+8(SB)/4, $0x80000000
DATA kqsign<>+12(SB)/4, $0x80000000
GLOBL kqsign<>(SB), RODATA|NOPTR, $16

// Q5X4SCALES: KSCALES with two registers (AX, CX): X4 = the 12 scale bytes
// at 4(SI) unpacked to scales 0-7, mins 0-7.
#define Q5X4SCALES \
	MOVL    4(SI), AX           \
	ANDL    $0x3f3f3f3f, AX     \
	VMOVD   AX, X4              \
	MOVL    4(SI), AX           \
	SHRL    $6, AX              \
	ANDL    $0x03030303, AX     \
	SHLL    $4, AX              \
	MOVL    12(SI), CX          \
	ANDL    $0x0f0f0f0f, CX     \
	ORL     CX, AX              \
	VPINSRD $1, AX, X4, X4      \
	MOVL    8(SI), AX           \
	ANDL    $0x3f3f3f3f, AX     \
	VPINSRD $2, AX, X4, X4      \
	MOVL    8(SI), AX           \
	SHRL    $6, AX              \
	ANDL    $0x03030303, AX     \
	SHLL    $4, AX              \
	MOVL    12(SI), CX          \
	SHRL    $4, CX              \
	ANDL    $0x0f0f0f0f, CX     \
	ORL     CX, AX              \
	VPINSRD $3, AX, X4, X4

// Q5X4MIN: KMINS for one token (sums at BADDR, mins in X4) into XOUT.
#define Q5X4MIN(BADDR, XOUT) \
	VMOVDQU      BADDR, Y6    \
	VEXTRACTI128 $1, Y6, X10  \
	VPHADDW      X10, X6, X6  \
	VPMADDWD     X6, X4, XOUT

// Q5X4TOK: token t's products with chunk R's low (Y4) and high (Y5)
// quants, scaled by the frame's per-chunk scale vectors, into YL.
#define Q5X4TOK(LO, HI, R, YL) \
	VPMADDUBSW LO, Y4, Y6           \
	VPMADDWD   (64*(R))(SP), Y6, Y6 \
	VPMADDUBSW HI, Y5, Y10          \
	VPMADDWD   (64*(R)+32)(SP), Y10, Y10 \
	VPADDD     Y6, YL, YL           \
	VPADDD     Y10, YL, YL

// Q5X4CHUNK(R): chunk R (quants at 48+32R, high bits 2R and 2R+1 of the
// qh bytes in Y8, shifted down as the chunks pass).
#define Q5X4CHUNK(R) \
	VMOVDQU    (48+32*(R))(SI), Y4   \
	VPSRLW     $4, Y4, Y5            \
	VPAND      Y15, Y4, Y4           \
	VPAND      Y15, Y5, Y5           \
	VPAND      kqone<>(SB), Y8, Y6   \
	VPSLLW     $4, Y6, Y6            \
	VPADDB     Y6, Y4, Y4            \
	VPSRLW     $1, Y8, Y8            \
	VPAND      kqone<>(SB), Y8, Y6   \
	VPSLLW     $4, Y6, Y6            \
	VPADDB     Y6, Y5, Y5            \
	VPSRLW     $1, Y8, Y8            \
	Q5X4TOK((64*(R))(DI), (64*(R)+32)(DI), R, Y0)                   \
	Q5X4TOK((64*(R))(DI)(R8*1), (64*(R)+32)(DI)(R8*1), R, Y1)       \
	Q5X4TOK((64*(R))(DI)(R8*2), (64*(R)+32)(DI)(R8*2), R, Y2)       \
	Q5X4TOK((64*(R))(DI)(R9*1), (64*(R)+32)(DI)(R9*1), R, Y3)

// Q5X4HSUM: hsum_float_8 of token T's accumulators YF plus its summs
// (element T of X7) into OUT.
#define Q5X4HSUM(YF, XF, T, OUT) \
	KHSUM(YF, XF)                       \
	VPSHUFD      $(0x55*(T)), X7, X1    \
	VADDSS       X1, X0, X0             \
	VMOVSS       X0, OUT

// func q5KDotx4AVX2(w *byte, xq *int8, xd *float32, xbs *int16, nb int, out *[4]float32)
// The AVX2 ggml_vec_dot_q5_K_q8_K of one row against four consecutive
// tokens (laid out as for q6KDotx4AVX2): per token the same lane integers,
// the same fused float steps in the same order as q5KDotAVX2 (the four
// tokens' scalar summs chains side by side in X7's elements). Frame: the
// block's eight per-half scale vectors at 32i, the block count at 256.
TEXT ·q5KDotx4AVX2(SB), 0, $264-48
	KX4SETUP
	MOVQ    CX, 256(SP)
	VXORPS  X7, X7, X7

q5x4loop:
	Q5X4SCALES
	VPMOVZXBW    X4, Y4
	VPERMQ       $0x44, Y4, Y5
	VEXTRACTI128 $1, Y4, X4
	VPSHUFB      kq4shuf<>+0(SB), Y5, Y6
	VMOVDQU      Y6, 0(SP)
	VPSHUFB      kq4shuf<>+32(SB), Y5, Y6
	VMOVDQU      Y6, 32(SP)
	VPSHUFB      kq4shuf<>+64(SB), Y5, Y6
	VMOVDQU      Y6, 64(SP)
	VPSHUFB      kq4shuf<>+96(SB), Y5, Y6
	VMOVDQU      Y6, 96(SP)
	VPSHUFB      kq4shuf<>+128(SB), Y5, Y6
	VMOVDQU      Y6, 128(SP)
	VPSHUFB      kq4shuf<>+160(SB), Y5, Y6
	VMOVDQU      Y6, 160(SP)
	VPSHUFB      kq4shuf<>+192(SB), Y5, Y6
	VMOVDQU      Y6, 192(SP)
	VPSHUFB      kq4shuf<>+224(SB), Y5, Y6
	VMOVDQU      Y6, 224(SP)
	// summs[t] += -(dmin*dy[t]) * imin[t], fused, for the four tokens.
	Q5X4MIN((BX), X0)
	Q5X4MIN((BX)(R12*1), X1)
	Q5X4MIN((BX)(R12*2), X2)
	Q5X4MIN((BX)(R13*1), X3)
	VPHADDD      X1, X0, X0
	VPHADDD      X3, X2, X2
	VPHADDD      X2, X0, X0
	VCVTDQ2PS    X0, X0
	FP16(2(SI), X5)
	VBROADCASTSS X5, X5
	VMOVSS       (DX), X6
	VINSERTPS    $0x10, (DX)(R10*1), X6, X6
	VINSERTPS    $0x20, (DX)(R10*2), X6, X6
	VINSERTPS    $0x30, (DX)(R11*1), X6, X6
	VMULPS       X6, X5, X5
	VXORPS       kqsign<>(SB), X5, X5
	VFMADD231PS  X0, X5, X7
	VPXOR        Y0, Y0, Y0
	VPXOR        Y1, Y1, Y1
	VPXOR        Y2, Y2, Y2
	VPXOR        Y3, Y3, Y3
	VMOVDQU      16(SI), Y8
	Q5X4CHUNK(0)
	Q5X4CHUNK(1)
	Q5X4CHUNK(2)
	Q5X4CHUNK(3)
	FP16(0(SI), X6)
	VMULSS       (DX), X6, X10
	VBROADCASTSS X10, Y10
	VCVTDQ2PS    Y0, Y0
	VFMADD231PS  Y0, Y10, Y11
	VMULSS       (DX)(R10*1), X6, X10
	VBROADCASTSS X10, Y10
	VCVTDQ2PS    Y1, Y1
	VFMADD231PS  Y1, Y10, Y12
	VMULSS       (DX)(R10*2), X6, X10
	VBROADCASTSS X10, Y10
	VCVTDQ2PS    Y2, Y2
	VFMADD231PS  Y2, Y10, Y13
	VMULSS       (DX)(R11*1), X6, X10
	VBROADCASTSS X10, Y10
	VCVTDQ2PS    Y3, Y3
	VFMADD231PS  Y3, Y10, Y14
	ADDQ         $176, SI
	ADDQ         $256, DI
	ADDQ         $4, DX
	ADDQ         $32, BX
	DECQ         256(SP)
	JNZ          q5x4loop
	MOVQ         out+40(FP), AX
	Q5X4HSUM(Y11, X11, 0, 0(AX))
	Q5X4HSUM(Y12, X12, 1, 4(AX))
	Q5X4HSUM(Y13, X13, 2, 8(AX))
	Q5X4HSUM(Y14, X14, 3, 12(AX))
	VZEROUPPER
	RET
