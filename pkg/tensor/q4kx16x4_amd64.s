// exactness: two packed q4_K groups (q4kx8.go's layout) per 512-bit register;
// per lane the integers and float steps of q4kx8x4_amd64.s's kernels.

#include "textflag.h"
#include "q4kx16_amd64.h"

// The 512-bit kernels below compute two consecutive packed groups (16
// rows: group g in lanes 0-7, group g+1 in lanes 8-15, R14 bytes apart)
// against four tokens. Both groups' column C takes the same activation
// dword, so one broadcast VPDPBUSD serves 16 rows; every lane's integers
// and float steps are those of the 256-bit kernels on its own group, so
// the same bits. Frame: acc[t] at 64t, accMin[t] at 256+64t.

// ZCOL: column C of both groups (the second loaded into the upper half;
// YW0 is W0's lower half).
#define ZCOL(C, XOFF, YW0, W0, W1, A0, A1, A2, A3, A4, A5, A6, A7) \
	VMOVDQU       (160+32*(C))(SI), YW0                   \
	VINSERTI64X4  $1, (160+32*(C))(SI)(R14*1), W0, W0     \
	VPSRLW        $4, W0, W1                              \
	VPANDQ        Z15, W0, W0                             \
	VPANDQ        Z15, W1, W1                             \
	VPDPBUSD.BCST (XOFF)(DI), W0, A0                      \
	VPDPBUSD.BCST (XOFF+32)(DI), W1, A1                   \
	VPDPBUSD.BCST (XOFF)(DI)(R8*1), W0, A2                \
	VPDPBUSD.BCST (XOFF+32)(DI)(R8*1), W1, A3             \
	VPDPBUSD.BCST (XOFF)(DI)(R8*2), W0, A4                \
	VPDPBUSD.BCST (XOFF+32)(DI)(R8*2), W1, A5             \
	VPDPBUSD.BCST (XOFF)(DI)(R9*1), W0, A6                \
	VPDPBUSD.BCST (XOFF+32)(DI)(R9*1), W1, A7

#define ZEVEN(C, XOFF) ZCOL(C, XOFF, Y8, Z8, Z9, Z0, Z1, Z2, Z3, Z4, Z5, Z6, Z7)
#define ZODD(C, XOFF) ZCOL(C, XOFF, Y10, Z10, Z11, Z16, Z17, Z18, Z19, Z20, Z21, Z22, Z23)

#define ZMINS(ADDR0, ADDR1, ZOUT) \
	VPBROADCASTD ADDR0, Z10   \
	VPMADDWD     Z8, Z10, Z10 \
	VPBROADCASTD ADDR1, Z11   \
	VPMADDWD     Z9, Z11, Z11 \
	VPADDD       Z11, Z10, ZOUT

// ZCHUNK(J): X4VCHUNK(J) for both groups; isum of token t in Z(2t), imin
// in Z(2t+1).
#define ZCHUNK(J) \
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
	ZEVEN(8*(J)+0, 64*(J)+0)           \
	ZODD(8*(J)+1, 64*(J)+4)            \
	ZEVEN(8*(J)+2, 64*(J)+8)           \
	ZODD(8*(J)+3, 64*(J)+12)           \
	ZEVEN(8*(J)+4, 64*(J)+16)          \
	ZODD(8*(J)+5, 64*(J)+20)           \
	ZEVEN(8*(J)+6, 64*(J)+24)          \
	ZODD(8*(J)+7, 64*(J)+28)           \
	VPADDD  Z16, Z0, Z0                \
	VPADDD  Z17, Z1, Z1                \
	VPADDD  Z18, Z2, Z2                \
	VPADDD  Z19, Z3, Z3                \
	VPADDD  Z20, Z4, Z4                \
	VPADDD  Z21, Z5, Z5                \
	VPADDD  Z22, Z6, Z6                \
	VPADDD  Z23, Z7, Z7                \
	Q16BYTES16(32+16*(J), Z24)           \
	Q16BYTES16(40+16*(J), Z25)           \
	Q16SCALE(Z0, Z1)                     \
	Q16SCALE(Z2, Z3)                     \
	Q16SCALE(Z4, Z5)                     \
	Q16SCALE(Z6, Z7)                     \
	Q16DUP(96+16*(J), Z8)                \
	Q16DUP(104+16*(J), Z9)               \
	ZMINS((8*(J))(BX), (8*(J)+4)(BX), Z1)                   \
	ZMINS((8*(J))(BX)(R12*1), (8*(J)+4)(BX)(R12*1), Z3)     \
	ZMINS((8*(J))(BX)(R12*2), (8*(J)+4)(BX)(R12*2), Z5)     \
	ZMINS((8*(J))(BX)(R13*1), (8*(J)+4)(BX)(R13*1), Z7)

// ZFUSE: X4FUSE over 16 lanes.
#define ZFUSE \
	Q16DMIN                                 \
	Q16FUSE1((DX), Z0, Z1, 0, 256)          \
	Q16FUSE1((DX)(R10*1), Z2, Z3, 64, 256)  \
	Q16FUSE1((DX)(R10*2), Z4, Z5, 128, 256) \
	Q16FUSE1((DX)(R11*1), Z6, Z7, 192, 256)

// ZTOTAL / ZADD / ZADDLAST keep the gemv's per-super-block integer sums
// in Z26-Z31, Z12, Z13.
#define ZTOTAL \
	VMOVDQA64 Z0, Z26 \
	VMOVDQA64 Z1, Z27 \
	VMOVDQA64 Z2, Z28 \
	VMOVDQA64 Z3, Z29 \
	VMOVDQA64 Z4, Z30 \
	VMOVDQA64 Z5, Z31 \
	VMOVDQA64 Z6, Z12 \
	VMOVDQA64 Z7, Z13

#define ZADD \
	VPADDD Z0, Z26, Z26 \
	VPADDD Z1, Z27, Z27 \
	VPADDD Z2, Z28, Z28 \
	VPADDD Z3, Z29, Z29 \
	VPADDD Z4, Z30, Z30 \
	VPADDD Z5, Z31, Z31 \
	VPADDD Z6, Z12, Z12 \
	VPADDD Z7, Z13, Z13

#define ZADDLAST \
	VPADDD Z26, Z0, Z0 \
	VPADDD Z27, Z1, Z1 \
	VPADDD Z28, Z2, Z2 \
	VPADDD Z29, Z3, Z3 \
	VPADDD Z30, Z4, Z4 \
	VPADDD Z31, Z5, Z5 \
	VPADDD Z12, Z6, Z6 \
	VPADDD Z13, Z7, Z7

#define ZSETUP \
	Q16ARGS                      \
	VPXORD  Z0, Z0, Z0           \
	VMOVUPS Z0, 0(SP)            \
	VMOVUPS Z0, 64(SP)           \
	VMOVUPS Z0, 128(SP)          \
	VMOVUPS Z0, 192(SP)          \
	VMOVUPS Z0, 256(SP)          \
	VMOVUPS Z0, 320(SP)          \
	VMOVUPS Z0, 384(SP)          \
	VMOVUPS Z0, 448(SP)

// out[16t+r] = acc[t][r] - accMin[t][r].
#define ZDONE \
	MOVQ    out+48(FP), AX   \
	VMOVUPS 0(SP), Z0        \
	VSUBPS  256(SP), Z0, Z0  \
	VMOVUPS Z0, 0(AX)        \
	VMOVUPS 64(SP), Z0       \
	VSUBPS  320(SP), Z0, Z0  \
	VMOVUPS Z0, 64(AX)       \
	VMOVUPS 128(SP), Z0      \
	VSUBPS  384(SP), Z0, Z0  \
	VMOVUPS Z0, 128(AX)      \
	VMOVUPS 192(SP), Z0      \
	VSUBPS  448(SP), Z0, Z0  \
	VMOVUPS Z0, 192(AX)      \
	VZEROUPPER               \
	RET


// func q4Kx16x4GemvVNNI(w *byte, gstride int, nb int, xq *int8, xd *float32, bs *int16, out *[64]float32)
// q4Kx8x4GemvVNNI of groups w and w+gstride at once: out[16t+r] is token
// t, row r (r >= 8: the second group's row r-8).
TEXT ·q4Kx16x4GemvVNNI(SB), 0, $512-56
	ZSETUP

zgemvloop:
	ZCHUNK(0)
	ZTOTAL
	ZCHUNK(1)
	ZADD
	ZCHUNK(2)
	ZADD
	ZCHUNK(3)
	ZADDLAST
	ZFUSE
	Q16NEXT
	JNZ zgemvloop
	ZDONE

// func q4Kx16x4GemmVNNI(w *byte, gstride int, nb int, xq *int8, xd *float32, bs *int16, out *[64]float32)
// q4Kx8x4GemmVNNI of two groups at once, as q4Kx16x4GemvVNNI.
TEXT ·q4Kx16x4GemmVNNI(SB), 0, $512-56
	ZSETUP

zgemmloop:
	ZCHUNK(0)
	ZFUSE
	ZCHUNK(1)
	ZFUSE
	ZCHUNK(2)
	ZFUSE
	ZCHUNK(3)
	ZFUSE
	Q16NEXT
	JNZ zgemmloop
	ZDONE
