// exactness: the packed eight-row q4_K kernels of q4kx8_amd64.s for four
// tokens at once (consecutive rows of a q8_K batch): each weight byte is
// loaded and split into nibbles once for the four tokens. Per token the
// integer sums are the same integers (computed as exact int16/int32
// multiply-adds in another grouping) and the float steps are those of
// q4Kx8GemvAVX2 / q4Kx8GemmAVX2, in the same order, so each token's eight
// results are bit-identical to the one-token kernel's.

#include "textflag.h"

DATA x4m4<>+0(SB)/8, $0x0f0f0f0f0f0f0f0f
DATA x4m4<>+8(SB)/8, $0x0f0f0f0f0f0f0f0f
DATA x4m4<>+16(SB)/8, $0x0f0f0f0f0f0f0f0f
DATA x4m4<>+24(SB)/8, $0x0f0f0f0f0f0f0f0f
GLOBL x4m4<>(SB), RODATA|NOPTR, $32

// Frame: float accumulators acc[t] at 32t, accMin[t] at 128+32t; the
// gemv's integer sums isum[t] at 256+32t, imin[t] at 384+32t.

// Token t's activation bytes are at DI + t*R8 (R9 = 3*R8), its scales at
// DX + t*R10 (R11 = 3*R10), its 16-value sums at BX + t*R12 (R13 = 3*R12).

// One four-byte column C of chunk J (XOFF = 64J+4K): low nibbles against
// each token's bytes XOFF.., high nibbles against XOFF+32.., int16 sums
// into Y0..Y7 (token t: Y(2t) low, Y(2t+1) high; each lane at most 16
// products of 15*128: no overflow). X4COLFIRST, for a chunk's first
// column, writes the products instead of adding them.
#define X4COL(C, XOFF) \
	VMOVDQU      (160+32*(C))(SI), Y8       \
	VPSRLW       $4, Y8, Y9                 \
	VPAND        Y15, Y8, Y8                \
	VPAND        Y15, Y9, Y9                \
	VPBROADCASTD (XOFF)(DI), Y10            \
	VPMADDUBSW   Y10, Y8, Y10               \
	VPADDW       Y10, Y0, Y0                \
	VPBROADCASTD (XOFF+32)(DI), Y11         \
	VPMADDUBSW   Y11, Y9, Y11               \
	VPADDW       Y11, Y1, Y1                \
	VPBROADCASTD (XOFF)(DI)(R8*1), Y12      \
	VPMADDUBSW   Y12, Y8, Y12               \
	VPADDW       Y12, Y2, Y2                \
	VPBROADCASTD (XOFF+32)(DI)(R8*1), Y13   \
	VPMADDUBSW   Y13, Y9, Y13               \
	VPADDW       Y13, Y3, Y3                \
	VPBROADCASTD (XOFF)(DI)(R8*2), Y10      \
	VPMADDUBSW   Y10, Y8, Y10               \
	VPADDW       Y10, Y4, Y4                \
	VPBROADCASTD (XOFF+32)(DI)(R8*2), Y11   \
	VPMADDUBSW   Y11, Y9, Y11               \
	VPADDW       Y11, Y5, Y5                \
	VPBROADCASTD (XOFF)(DI)(R9*1), Y12      \
	VPMADDUBSW   Y12, Y8, Y12               \
	VPADDW       Y12, Y6, Y6                \
	VPBROADCASTD (XOFF+32)(DI)(R9*1), Y13   \
	VPMADDUBSW   Y13, Y9, Y13               \
	VPADDW       Y13, Y7, Y7

#define X4COLFIRST(C, XOFF) \
	VMOVDQU      (160+32*(C))(SI), Y8       \
	VPSRLW       $4, Y8, Y9                 \
	VPAND        Y15, Y8, Y8                \
	VPAND        Y15, Y9, Y9                \
	VPBROADCASTD (XOFF)(DI), Y0             \
	VPMADDUBSW   Y0, Y8, Y0                 \
	VPBROADCASTD (XOFF+32)(DI), Y1          \
	VPMADDUBSW   Y1, Y9, Y1                 \
	VPBROADCASTD (XOFF)(DI)(R8*1), Y2       \
	VPMADDUBSW   Y2, Y8, Y2                 \
	VPBROADCASTD (XOFF+32)(DI)(R8*1), Y3    \
	VPMADDUBSW   Y3, Y9, Y3                 \
	VPBROADCASTD (XOFF)(DI)(R8*2), Y4       \
	VPMADDUBSW   Y4, Y8, Y4                 \
	VPBROADCASTD (XOFF+32)(DI)(R8*2), Y5    \
	VPMADDUBSW   Y5, Y9, Y5                 \
	VPBROADCASTD (XOFF)(DI)(R9*1), Y6       \
	VPMADDUBSW   Y6, Y8, Y6                 \
	VPBROADCASTD (XOFF+32)(DI)(R9*1), Y7    \
	VPMADDUBSW   Y7, Y9, Y7

// X4DUP loads the eight bytes at ADDR (one sub-block's scale or min for
// rows 0..7) as eight dwords each holding the byte twice as int16, so that
// VPMADDWD against a row's pair of int16 sums gives byte * (their sum).
#define X4DUP(ADDR, Y) \
	VPMOVZXBD ADDR, Y       \
	VPSLLD    $16, Y, Y10   \
	VPOR      Y10, Y, Y

// X4MINS: token t's mins term of chunk J into YOUT: per row
// mn[2J]*(bs[4J]+bs[4J+1]) + mn[2J+1]*(bs[4J+2]+bs[4J+3]), Y8/Y9 the
// doubled mins.
#define X4MINS(ADDR0, ADDR1, YOUT) \
	VPBROADCASTD ADDR0, Y10   \
	VPMADDWD     Y8, Y10, Y10 \
	VPBROADCASTD ADDR1, Y11   \
	VPMADDWD     Y9, Y11, Y11 \
	VPADDD       Y11, Y10, YOUT

// X4CHUNK(J): chunk J's integer sums for the four tokens: isum in Y(2t),
// imin in Y(2t+1), eight rows a lane each.
#define X4CHUNK(J) \
	X4COLFIRST(8*(J)+0, 64*(J)+0)       \
	X4COL(8*(J)+1, 64*(J)+4)            \
	X4COL(8*(J)+2, 64*(J)+8)            \
	X4COL(8*(J)+3, 64*(J)+12)           \
	X4COL(8*(J)+4, 64*(J)+16)           \
	X4COL(8*(J)+5, 64*(J)+20)           \
	X4COL(8*(J)+6, 64*(J)+24)           \
	X4COL(8*(J)+7, 64*(J)+28)           \
	X4DUP((32+16*(J))(SI), Y8)          \
	X4DUP((40+16*(J))(SI), Y9)          \
	VPMADDWD Y8, Y0, Y0                 \
	VPMADDWD Y9, Y1, Y1                 \
	VPADDD   Y1, Y0, Y0                 \
	VPMADDWD Y8, Y2, Y2                 \
	VPMADDWD Y9, Y3, Y3                 \
	VPADDD   Y3, Y2, Y2                 \
	VPMADDWD Y8, Y4, Y4                 \
	VPMADDWD Y9, Y5, Y5                 \
	VPADDD   Y5, Y4, Y4                 \
	VPMADDWD Y8, Y6, Y6                 \
	VPMADDWD Y9, Y7, Y7                 \
	VPADDD   Y7, Y6, Y6                 \
	X4DUP((96+16*(J))(SI), Y8)          \
	X4DUP((104+16*(J))(SI), Y9)         \
	X4MINS((8*(J))(BX), (8*(J)+4)(BX), Y1)                   \
	X4MINS((8*(J))(BX)(R12*1), (8*(J)+4)(BX)(R12*1), Y3)     \
	X4MINS((8*(J))(BX)(R12*2), (8*(J)+4)(BX)(R12*2), Y5)     \
	X4MINS((8*(J))(BX)(R13*1), (8*(J)+4)(BX)(R13*1), Y7)

// X4FUSE1: token t (scale at DYADDR, sums in YI / YM) fused into its
// accumulators as the one-token kernel does: acc += isum*(d*dy),
// accMin += imin*(dmin*dy). Y8 / Y9 hold the rows' d / dmin.
#define X4FUSE1(DYADDR, YI, YM, OFF) \
	VBROADCASTSS DYADDR, Y10            \
	VMULPS       Y10, Y8, Y11           \
	VMULPS       Y10, Y9, Y10           \
	VCVTDQ2PS    YI, YI                 \
	VCVTDQ2PS    YM, YM                 \
	VFMADD213PS  (OFF)(SP), Y11, YI     \
	VMOVUPS      YI, (OFF)(SP)          \
	VFMADD213PS  (128+OFF)(SP), Y10, YM \
	VMOVUPS      YM, (128+OFF)(SP)

#define X4FUSE \
	VCVTPH2PS (SI), Y8                       \
	VCVTPH2PS 16(SI), Y9                     \
	X4FUSE1((DX), Y0, Y1, 0)                 \
	X4FUSE1((DX)(R10*1), Y2, Y3, 32)         \
	X4FUSE1((DX)(R10*2), Y4, Y5, 64)         \
	X4FUSE1((DX)(R11*1), Y6, Y7, 96)

// X4STORE / X4ADD keep the gemv's per-super-block integer sums in the
// frame; X4ADDLAST adds them into the registers for X4FUSE.
#define X4STORE \
	VMOVDQU Y0, 256(SP) \
	VMOVDQU Y1, 384(SP) \
	VMOVDQU Y2, 288(SP) \
	VMOVDQU Y3, 416(SP) \
	VMOVDQU Y4, 320(SP) \
	VMOVDQU Y5, 448(SP) \
	VMOVDQU Y6, 352(SP) \
	VMOVDQU Y7, 480(SP)

#define X4ADDLAST \
	VPADDD 256(SP), Y0, Y0 \
	VPADDD 384(SP), Y1, Y1 \
	VPADDD 288(SP), Y2, Y2 \
	VPADDD 416(SP), Y3, Y3 \
	VPADDD 320(SP), Y4, Y4 \
	VPADDD 448(SP), Y5, Y5 \
	VPADDD 352(SP), Y6, Y6 \
	VPADDD 480(SP), Y7, Y7

#define X4ADD \
	X4ADDLAST \
	X4STORE

#define X4SETUP \
	MOVQ    w+0(FP), SI          \
	MOVQ    nb+8(FP), CX         \
	MOVQ    xq+16(FP), DI        \
	MOVQ    xd+24(FP), DX        \
	MOVQ    bs+32(FP), BX        \
	MOVQ    CX, R8               \
	SHLQ    $8, R8               \
	LEAQ    (R8)(R8*2), R9       \
	MOVQ    CX, R10              \
	SHLQ    $2, R10              \
	LEAQ    (R10)(R10*2), R11    \
	MOVQ    CX, R12              \
	SHLQ    $5, R12              \
	LEAQ    (R12)(R12*2), R13    \
	VMOVDQU x4m4<>(SB), Y15   \
	VXORPS  Y0, Y0, Y0           \
	VMOVUPS Y0, 0(SP)            \
	VMOVUPS Y0, 32(SP)           \
	VMOVUPS Y0, 64(SP)           \
	VMOVUPS Y0, 96(SP)           \
	VMOVUPS Y0, 128(SP)          \
	VMOVUPS Y0, 160(SP)          \
	VMOVUPS Y0, 192(SP)          \
	VMOVUPS Y0, 224(SP)

#define X4NEXT \
	ADDQ $1184, SI \
	ADDQ $256, DI  \
	ADDQ $4, DX    \
	ADDQ $32, BX   \
	DECQ CX

// out[8t+r] = acc[t][r] - accMin[t][r].
#define X4DONE \
	MOVQ    out+40(FP), AX  \
	VMOVUPS 0(SP), Y0       \
	VSUBPS  128(SP), Y0, Y0 \
	VMOVUPS Y0, 0(AX)       \
	VMOVUPS 32(SP), Y0      \
	VSUBPS  160(SP), Y0, Y0 \
	VMOVUPS Y0, 32(AX)      \
	VMOVUPS 64(SP), Y0      \
	VSUBPS  192(SP), Y0, Y0 \
	VMOVUPS Y0, 64(AX)      \
	VMOVUPS 96(SP), Y0      \
	VSUBPS  224(SP), Y0, Y0 \
	VMOVUPS Y0, 96(AX)      \
	VZEROUPPER              \
	RET

// func q4Kx8x4GemvAVX2(w *byte, nb int, xq *int8, xd *float32, bs *int16, out *[32]float32)
TEXT ·q4Kx8x4GemvAVX2(SB), 0, $512-48
	X4SETUP

x4gemvloop:
	X4CHUNK(0)
	X4STORE
	X4CHUNK(1)
	X4ADD
	X4CHUNK(2)
	X4ADD
	X4CHUNK(3)
	X4ADDLAST
	X4FUSE
	X4NEXT
	JNZ x4gemvloop
	X4DONE

// func q4Kx8x4GemmAVX2(w *byte, nb int, xq *int8, xd *float32, bs *int16, out *[32]float32)
TEXT ·q4Kx8x4GemmAVX2(SB), 0, $512-48
	X4SETUP

x4gemmloop:
	X4CHUNK(0)
	X4FUSE
	X4CHUNK(1)
	X4FUSE
	X4CHUNK(2)
	X4FUSE
	X4CHUNK(3)
	X4FUSE
	X4NEXT
	JNZ x4gemmloop
	X4DONE

// X4VCOL is X4COL with AVX-512 VNNI: VPDPBUSD adds each row lane's four
// nibble-times-activation products of token t straight into int32 (A0..A7:
// token t's low / high nibble sums in A(2t) / A(2t+1); W0/W1 temps). The
// same exact integers as VPMADDUBSW + VPADDW + VPMADDWD (no int16 step can
// saturate there: at most 16 products of 15*128 per word), so the same bits.
#define X4VCOL(C, XOFF, W0, W1, A0, A1, A2, A3, A4, A5, A6, A7) \
	VMOVDQU       (160+32*(C))(SI), W0            \
	VPSRLW        $4, W0, W1                      \
	VPAND         Y15, W0, W0                     \
	VPAND         Y15, W1, W1                     \
	VPDPBUSD.BCST (XOFF)(DI), W0, A0              \
	VPDPBUSD.BCST (XOFF+32)(DI), W1, A1           \
	VPDPBUSD.BCST (XOFF)(DI)(R8*1), W0, A2        \
	VPDPBUSD.BCST (XOFF+32)(DI)(R8*1), W1, A3     \
	VPDPBUSD.BCST (XOFF)(DI)(R8*2), W0, A4        \
	VPDPBUSD.BCST (XOFF+32)(DI)(R8*2), W1, A5     \
	VPDPBUSD.BCST (XOFF)(DI)(R9*1), W0, A6        \
	VPDPBUSD.BCST (XOFF+32)(DI)(R9*1), W1, A7

#define X4VEVEN(C, XOFF) X4VCOL(C, XOFF, Y8, Y9, Y0, Y1, Y2, Y3, Y4, Y5, Y6, Y7)
#define X4VODD(C, XOFF) X4VCOL(C, XOFF, Y10, Y11, Y16, Y17, Y18, Y19, Y20, Y21, Y22, Y23)

// X4VSCALE: token t's sub-block sums times the rows' scales (Y8 / Y9, as
// dwords), summed into Y(2t) — X4CHUNK's VPMADDWD by the doubled scales.
#define X4VSCALE(YL, YH) \
	VPMULLD Y8, YL, YL \
	VPMULLD Y9, YH, YH \
	VPADDD  YH, YL, YL

// X4VCHUNK(J) is X4CHUNK(J) with X4VCOL: even columns into Y0..Y7, odd ones
// into Y16..Y23 (two chains per sum, added exactly at the end); isum in
// Y(2t), imin in Y(2t+1) as there.
#define X4VCHUNK(J) \
	VPXOR   Y0, Y0, Y0                 \
	VPXOR   Y1, Y1, Y1                 \
	VPXOR   Y2, Y2, Y2                 \
	VPXOR   Y3, Y3, Y3                 \
	VPXOR   Y4, Y4, Y4                 \
	VPXOR   Y5, Y5, Y5                 \
	VPXOR   Y6, Y6, Y6                 \
	VPXOR   Y7, Y7, Y7                 \
	VPXORD  Y16, Y16, Y16              \
	VPXORD  Y17, Y17, Y17              \
	VPXORD  Y18, Y18, Y18              \
	VPXORD  Y19, Y19, Y19              \
	VPXORD  Y20, Y20, Y20              \
	VPXORD  Y21, Y21, Y21              \
	VPXORD  Y22, Y22, Y22              \
	VPXORD  Y23, Y23, Y23              \
	X4VEVEN(8*(J)+0, 64*(J)+0)         \
	X4VODD(8*(J)+1, 64*(J)+4)          \
	X4VEVEN(8*(J)+2, 64*(J)+8)         \
	X4VODD(8*(J)+3, 64*(J)+12)         \
	X4VEVEN(8*(J)+4, 64*(J)+16)        \
	X4VODD(8*(J)+5, 64*(J)+20)         \
	X4VEVEN(8*(J)+6, 64*(J)+24)        \
	X4VODD(8*(J)+7, 64*(J)+28)         \
	VPADDD  Y16, Y0, Y0                \
	VPADDD  Y17, Y1, Y1                \
	VPADDD  Y18, Y2, Y2                \
	VPADDD  Y19, Y3, Y3                \
	VPADDD  Y20, Y4, Y4                \
	VPADDD  Y21, Y5, Y5                \
	VPADDD  Y22, Y6, Y6                \
	VPADDD  Y23, Y7, Y7                \
	VPMOVZXBD (32+16*(J))(SI), Y8      \
	VPMOVZXBD (40+16*(J))(SI), Y9      \
	X4VSCALE(Y0, Y1)                   \
	X4VSCALE(Y2, Y3)                   \
	X4VSCALE(Y4, Y5)                   \
	X4VSCALE(Y6, Y7)                   \
	X4DUP((96+16*(J))(SI), Y8)         \
	X4DUP((104+16*(J))(SI), Y9)        \
	X4MINS((8*(J))(BX), (8*(J)+4)(BX), Y1)                   \
	X4MINS((8*(J))(BX)(R12*1), (8*(J)+4)(BX)(R12*1), Y3)     \
	X4MINS((8*(J))(BX)(R12*2), (8*(J)+4)(BX)(R12*2), Y5)     \
	X4MINS((8*(J))(BX)(R13*1), (8*(J)+4)(BX)(R13*1), Y7)

// func q4Kx8x4GemvVNNI(w *byte, nb int, xq *int8, xd *float32, bs *int16, out *[32]float32)
// q4Kx8x4GemvAVX2 with AVX-512 VNNI.
TEXT ·q4Kx8x4GemvVNNI(SB), 0, $512-48
	X4SETUP

x4vgemvloop:
	X4VCHUNK(0)
	X4STORE
	X4VCHUNK(1)
	X4ADD
	X4VCHUNK(2)
	X4ADD
	X4VCHUNK(3)
	X4ADDLAST
	X4FUSE
	X4NEXT
	JNZ x4vgemvloop
	X4DONE

// func q4Kx8x4GemmVNNI(w *byte, nb int, xq *int8, xd *float32, bs *int16, out *[32]float32)
// q4Kx8x4GemmAVX2 with AVX-512 VNNI.
TEXT ·q4Kx8x4GemmVNNI(SB), 0, $512-48
	X4SETUP

x4vgemmloop:
	X4VCHUNK(0)
	X4FUSE
	X4VCHUNK(1)
	X4FUSE
	X4VCHUNK(2)
	X4FUSE
	X4VCHUNK(3)
	X4FUSE
	X4NEXT
	JNZ x4vgemmloop
	X4DONE
