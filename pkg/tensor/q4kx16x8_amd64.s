// exactness: per lane the integers and float steps of q4kx16x4_amd64.s's
// kernels, for eight tokens instead of four.

#include "textflag.h"
#include "q4kx16_amd64.h"

// The kernels below are q4Kx16x4GemvVNNI / q4Kx16x4GemmVNNI against eight
// tokens: each 16-row weight column is loaded and split into nibbles once
// for eight tokens' broadcast VPDPBUSDs instead of four. Integer sums are
// exact in any order; the float steps per token, chunk and super-block are
// the four-token kernels', so the same bits. Tokens 0-3 are addressed from
// DI / BX / DX, tokens 4-7 from AX, set to token 4's row of the operand before
// each use. Frame: acc[t] at 64t, accMin[t] at 512+64t.

// YCOL: column C of both groups against the eight tokens; isum parts of
// token t in Z(2t) (low nibbles) and Z(2t+1) (high) for t < 4, in
// Z(16+2(t-4)) and Z(17+2(t-4)) for t >= 4.
#define YCOL(C, XOFF, YW0, W0, W1) \
	VMOVDQU       (160+32*(C))(SI), YW0               \
	VINSERTI64X4  $1, (160+32*(C))(SI)(R14*1), W0, W0 \
	VPSRLW        $4, W0, W1                          \
	VPANDQ        Z15, W0, W0                         \
	VPANDQ        Z15, W1, W1                         \
	VPDPBUSD.BCST (XOFF)(DI), W0, Z0                  \
	VPDPBUSD.BCST (XOFF+32)(DI), W1, Z1               \
	VPDPBUSD.BCST (XOFF)(DI)(R8*1), W0, Z2            \
	VPDPBUSD.BCST (XOFF+32)(DI)(R8*1), W1, Z3         \
	VPDPBUSD.BCST (XOFF)(DI)(R8*2), W0, Z4            \
	VPDPBUSD.BCST (XOFF+32)(DI)(R8*2), W1, Z5         \
	VPDPBUSD.BCST (XOFF)(DI)(R9*1), W0, Z6            \
	VPDPBUSD.BCST (XOFF+32)(DI)(R9*1), W1, Z7         \
	VPDPBUSD.BCST (XOFF)(AX), W0, Z16                 \
	VPDPBUSD.BCST (XOFF+32)(AX), W1, Z17              \
	VPDPBUSD.BCST (XOFF)(AX)(R8*1), W0, Z18           \
	VPDPBUSD.BCST (XOFF+32)(AX)(R8*1), W1, Z19        \
	VPDPBUSD.BCST (XOFF)(AX)(R8*2), W0, Z20           \
	VPDPBUSD.BCST (XOFF+32)(AX)(R8*2), W1, Z21        \
	VPDPBUSD.BCST (XOFF)(AX)(R9*1), W0, Z22           \
	VPDPBUSD.BCST (XOFF+32)(AX)(R9*1), W1, Z23

// Consecutive columns alternate between two weight register pairs, so a
// column's loads need not wait for the previous one's multiplies.
#define YEVEN(C, XOFF) YCOL(C, XOFF, Y8, Z8, Z9)
#define YODD(C, XOFF) YCOL(C, XOFF, Y10, Z10, Z11)

// YMINS: one token's mins of the chunk's two sub-blocks (Z8, Z9: the mins
// as Q16DUP; ADDR0 / ADDR1: the token's two 16-value sums of each) into
// ZOUT; YMINSADD adds them to ZOUT. One VPDPWSSD per sub-block is the
// VPMADDWD and VPADDD of q4kx16x4_amd64.s's ZMINS: the same integers.
#define YMINS(ADDR0, ADDR1, ZOUT) \
	VPXORD          ZOUT, ZOUT, ZOUT \
	YMINSADD(ADDR0, ADDR1, ZOUT)

#define YMINSADD(ADDR0, ADDR1, ZOUT) \
	VPDPWSSD.BCST ADDR0, Z8, ZOUT \
	VPDPWSSD.BCST ADDR1, Z9, ZOUT

// YCHUNK(J): chunk J's scaled integer sums: token t's isum in the even
// register of its pair (Z0, Z2, Z4, Z6, Z16, Z18, Z20, Z22).
#define YCHUNK(J) \
	VPXORD  Z0, Z0, Z0                 \
	VPXORD  Z1, Z1, Z1                 \
	VPXORD  Z2, Z2, Z2                 \
	VPXORD  Z3, Z3, Z3                 \
	VPXORD  Z4, Z4, Z4                 \
	VPXORD  Z5, Z5, Z5                 \
	VPXORD  Z6, Z6, Z6                 \
	VPXORD  Z7, Z7, Z7                 \
	VPXORD  Z16, Z16, Z16              \
	VPXORD  Z17, Z17, Z17              \
	VPXORD  Z18, Z18, Z18              \
	VPXORD  Z19, Z19, Z19              \
	VPXORD  Z20, Z20, Z20              \
	VPXORD  Z21, Z21, Z21              \
	VPXORD  Z22, Z22, Z22              \
	VPXORD  Z23, Z23, Z23              \
	LEAQ    (DI)(R8*4), AX             \
	YEVEN(8*(J)+0, 64*(J)+0)           \
	YODD(8*(J)+1, 64*(J)+4)            \
	YEVEN(8*(J)+2, 64*(J)+8)           \
	YODD(8*(J)+3, 64*(J)+12)           \
	YEVEN(8*(J)+4, 64*(J)+16)          \
	YODD(8*(J)+5, 64*(J)+20)           \
	YEVEN(8*(J)+6, 64*(J)+24)          \
	YODD(8*(J)+7, 64*(J)+28)           \
	Q16BYTES16(32+16*(J), Z24)           \
	Q16BYTES16(40+16*(J), Z25)           \
	Q16SCALE(Z0, Z1)                     \
	Q16SCALE(Z2, Z3)                     \
	Q16SCALE(Z4, Z5)                     \
	Q16SCALE(Z6, Z7)                     \
	Q16SCALE(Z16, Z17)                   \
	Q16SCALE(Z18, Z19)                   \
	Q16SCALE(Z20, Z21)                   \
	Q16SCALE(Z22, Z23)

// YMINCHUNK(J, OP): chunk J's mins of every token, OP (YMINS or YMINSADD)
// into the odd register of its pair.
#define YMINCHUNK(J, OP) \
	Q16DUP(96+16*(J), Z8)                                  \
	Q16DUP(104+16*(J), Z9)                                 \
	OP((8*(J))(BX), (8*(J)+4)(BX), Z1)                   \
	OP((8*(J))(BX)(R12*1), (8*(J)+4)(BX)(R12*1), Z3)     \
	OP((8*(J))(BX)(R12*2), (8*(J)+4)(BX)(R12*2), Z5)     \
	OP((8*(J))(BX)(R13*1), (8*(J)+4)(BX)(R13*1), Z7)     \
	LEAQ (BX)(R12*4), AX                                 \
	OP((8*(J))(AX), (8*(J)+4)(AX), Z17)                  \
	OP((8*(J))(AX)(R12*1), (8*(J)+4)(AX)(R12*1), Z19)    \
	OP((8*(J))(AX)(R12*2), (8*(J)+4)(AX)(R12*2), Z21)    \
	OP((8*(J))(AX)(R13*1), (8*(J)+4)(AX)(R13*1), Z23)

// YFUSE: ZFUSE of q4kx16x4_amd64.s over eight tokens.
#define YFUSE \
	Q16DMIN                                 \
	Q16FUSE1((DX), Z0, Z1, 0, 512)                 \
	Q16FUSE1((DX)(R10*1), Z2, Z3, 64, 512)         \
	Q16FUSE1((DX)(R10*2), Z4, Z5, 128, 512)        \
	Q16FUSE1((DX)(R11*1), Z6, Z7, 192, 512)        \
	LEAQ (DX)(R10*4), AX                    \
	Q16FUSE1((AX), Z16, Z17, 256, 512)             \
	Q16FUSE1((AX)(R10*1), Z18, Z19, 320, 512)      \
	Q16FUSE1((AX)(R10*2), Z20, Z21, 384, 512)      \
	Q16FUSE1((AX)(R11*1), Z22, Z23, 448, 512)

// YTOTAL / YADD / YADDLAST keep the gemv's per-super-block isums in
// Z26-Z31, Z12, Z13 (its mins are summed over the super-block after the
// last chunk, YMINCHUNK).
#define YTOTAL \
	VMOVDQA64 Z0, Z26  \
	VMOVDQA64 Z2, Z27  \
	VMOVDQA64 Z4, Z28  \
	VMOVDQA64 Z6, Z29  \
	VMOVDQA64 Z16, Z30 \
	VMOVDQA64 Z18, Z31 \
	VMOVDQA64 Z20, Z12 \
	VMOVDQA64 Z22, Z13

#define YADD \
	VPADDD Z0, Z26, Z26  \
	VPADDD Z2, Z27, Z27  \
	VPADDD Z4, Z28, Z28  \
	VPADDD Z6, Z29, Z29  \
	VPADDD Z16, Z30, Z30 \
	VPADDD Z18, Z31, Z31 \
	VPADDD Z20, Z12, Z12 \
	VPADDD Z22, Z13, Z13

#define YADDLAST \
	VPADDD Z26, Z0, Z0   \
	VPADDD Z27, Z2, Z2   \
	VPADDD Z28, Z4, Z4   \
	VPADDD Z29, Z6, Z6   \
	VPADDD Z30, Z16, Z16 \
	VPADDD Z31, Z18, Z18 \
	VPADDD Z12, Z20, Z20 \
	VPADDD Z13, Z22, Z22

#define YSETUP \
	Q16ARGS                      \
	VPXORD  Z0, Z0, Z0           \
	VMOVUPS Z0, 0(SP)            \
	VMOVUPS Z0, 64(SP)           \
	VMOVUPS Z0, 128(SP)          \
	VMOVUPS Z0, 192(SP)          \
	VMOVUPS Z0, 256(SP)          \
	VMOVUPS Z0, 320(SP)          \
	VMOVUPS Z0, 384(SP)          \
	VMOVUPS Z0, 448(SP)          \
	VMOVUPS Z0, 512(SP)          \
	VMOVUPS Z0, 576(SP)          \
	VMOVUPS Z0, 640(SP)          \
	VMOVUPS Z0, 704(SP)          \
	VMOVUPS Z0, 768(SP)          \
	VMOVUPS Z0, 832(SP)          \
	VMOVUPS Z0, 896(SP)          \
	VMOVUPS Z0, 960(SP)

#define YOUT(OFF) \
	VMOVUPS OFF(SP), Z0          \
	VSUBPS  (512+OFF)(SP), Z0, Z0 \
	VMOVUPS Z0, OFF(AX)

// out[16t+r] = acc[t][r] - accMin[t][r].
#define YDONE \
	MOVQ out+48(FP), AX \
	YOUT(0)             \
	YOUT(64)            \
	YOUT(128)           \
	YOUT(192)           \
	YOUT(256)           \
	YOUT(320)           \
	YOUT(384)           \
	YOUT(448)           \
	VZEROUPPER          \
	RET

// func q4Kx16x8GemvVNNI(w *byte, gstride int, nb int, xq *int8, xd *float32, bs *int16, out *[128]float32)
// q4Kx16x4GemvVNNI against eight tokens: out[16t+r] is token t, row r.
TEXT ·q4Kx16x8GemvVNNI(SB), 0, $1024-56
	YSETUP

ygemvloop:
	YCHUNK(0)
	YTOTAL
	YCHUNK(1)
	YADD
	YCHUNK(2)
	YADD
	YCHUNK(3)
	YADDLAST
	YMINCHUNK(0, YMINS)
	YMINCHUNK(1, YMINSADD)
	YMINCHUNK(2, YMINSADD)
	YMINCHUNK(3, YMINSADD)
	YFUSE
	Q16NEXT
	JNZ ygemvloop
	YDONE

// func q4Kx16x8GemmVNNI(w *byte, gstride int, nb int, xq *int8, xd *float32, bs *int16, out *[128]float32)
// q4Kx16x4GemmVNNI against eight tokens, as q4Kx16x8GemvVNNI.
TEXT ·q4Kx16x8GemmVNNI(SB), 0, $1024-56
	YSETUP

ygemmloop:
	YCHUNK(0)
	YMINCHUNK(0, YMINS)
	YFUSE
	YCHUNK(1)
	YMINCHUNK(1, YMINS)
	YFUSE
	YCHUNK(2)
	YMINCHUNK(2, YMINS)
	YFUSE
	YCHUNK(3)
	YMINCHUNK(3, YMINS)
	YFUSE
	Q16NEXT
	JNZ ygemmloop
	YDONE
