// exactness: the AVX-512 VNNI variants of kquant_amd64.s's K-quant
// kernels: the same integers in the same lanes (VPDPWSSD is VPMADDWD plus
// VPADDD in one exact step) and the same float operations in the same
// order, so the same bits as the AVX2 kernels (TestKQuantVNNIMatchesAVX2).

#include "textflag.h"
#include "kquant_amd64.h"

// KQ6VCHUNK is KQ6CHUNK with AVX-512 VNNI: VPDPWSSD does VPMADDWD's
// exact int16-pair products and VPADDD's add in one step (no saturation,
// int32 lanes as before), so the same integers and bits.
#define KQ6VCHUNK(Q, OFF, IS) \
	VPMADDUBSW OFF(DI), Q, Q                     \
	VPSHUFB    kq4shuf<>+(32*(IS))(SB), Y12, Y11 \
	VPDPWSSD   Y11, Q, Y3

// KQ6VHALF is KQ6HALF with KQ6VCHUNK.
#define KQ6VHALF(J) \
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
	KQ6VCHUNK(Y7, 128*J, 4*J)        \
	KQ6VCHUNK(Y8, 128*J+32, 4*J+1)   \
	KQ6VCHUNK(Y9, 128*J+64, 4*J+2)   \
	KQ6VCHUNK(Y10, 128*J+96, 4*J+3)

// func q6KRowsVNNI(w *byte, xq *int8, xd *float32, xbs *int16, nb int, rows int, out *float32)
// q6KRowsAVX2 with AVX-512 VNNI (VPDPWSSD).
TEXT ·q6KRowsVNNI(SB), NOSPLIT, $0-56
	MOVQ    w+0(FP), SI
	MOVQ    rows+40(FP), R13
	MOVQ    out+48(FP), R12
	VMOVDQU kqm4<>(SB), Y15

q6Kvrow:
	MOVQ    xq+8(FP), DI
	MOVQ    xd+16(FP), DX
	MOVQ    xbs+24(FP), BX
	MOVQ    nb+32(FP), CX
	VXORPS  Y14, Y14, Y14

q6Kvloop:
	VMOVDQU   192(SI), X0
	VPMOVSXBW X0, Y1
	VMOVDQU   (BX), Y2
	VPMADDWD  Y1, Y2, Y2
	VPSLLD    $5, Y2, Y2
	VPSHUFB   kq6eo<>(SB), X0, X0
	VPMOVSXBW X0, Y12
	VPXOR     Y3, Y3, Y3
	KQ6VHALF(0)
	KQ6VHALF(1)
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
	JNZ          q6Kvloop
	HSUM8
	VMOVSS       X0, (R12)
	ADDQ         $4, R12
	DECQ         R13
	JNZ          q6Kvrow
	VZEROUPPER
	RET

// kq5bit: bit s of every byte at 32*s (the qh bit of sub-block s); kq16:
// the 16 that bit adds to a q5_K quant.
DATA kq5bit<>+0(SB)/8, $0x0101010101010101
DATA kq5bit<>+8(SB)/8, $0x0101010101010101
DATA kq5bit<>+16(SB)/8, $0x0101010101010101
DATA kq5bit<>+24(SB)/8, $0x0101010101010101
DATA kq5bit<>+32(SB)/8, $0x0202020202020202
DATA kq5bit<>+40(SB)/8, $0x0202020202020202
DATA kq5bit<>+48(SB)/8, $0x0202020202020202
DATA kq5bit<>+56(SB)/8, $0x0202020202020202
DATA kq5bit<>+64(SB)/8, $0x0404040404040404
DATA kq5bit<>+72(SB)/8, $0x0404040404040404
DATA kq5bit<>+80(SB)/8, $0x0404040404040404
DATA kq5bit<>+88(SB)/8, $0x0404040404040404
DATA kq5bit<>+96(SB)/8, $0x0808080808080808
DATA kq5bit<>+104(SB)/8, $0x0808080808080808
DATA kq5bit<>+112(SB)/8, $0x0808080808080808
DATA kq5bit<>+120(SB)/8, $0x0808080808080808
DATA kq5bit<>+128(SB)/8, $0x1010101010101010
DATA kq5bit<>+136(SB)/8, $0x1010101010101010
DATA kq5bit<>+144(SB)/8, $0x1010101010101010
DATA kq5bit<>+152(SB)/8, $0x1010101010101010
DATA kq5bit<>+160(SB)/8, $0x2020202020202020
DATA kq5bit<>+168(SB)/8, $0x2020202020202020
DATA kq5bit<>+176(SB)/8, $0x2020202020202020
DATA kq5bit<>+184(SB)/8, $0x2020202020202020
DATA kq5bit<>+192(SB)/8, $0x4040404040404040
DATA kq5bit<>+200(SB)/8, $0x4040404040404040
DATA kq5bit<>+208(SB)/8, $0x4040404040404040
DATA kq5bit<>+216(SB)/8, $0x4040404040404040
DATA kq5bit<>+224(SB)/8, $0x8080808080808080
DATA kq5bit<>+232(SB)/8, $0x8080808080808080
DATA kq5bit<>+240(SB)/8, $0x8080808080808080
DATA kq5bit<>+248(SB)/8, $0x8080808080808080
GLOBL kq5bit<>(SB), RODATA|NOPTR, $256
DATA kq16<>+0(SB)/8, $0x1010101010101010
DATA kq16<>+8(SB)/8, $0x1010101010101010
DATA kq16<>+16(SB)/8, $0x1010101010101010
DATA kq16<>+24(SB)/8, $0x1010101010101010
GLOBL kq16<>(SB), RODATA|NOPTR, $32

// KQ5VCHUNK is KQ5CHUNK with AVX-512: VPTESTMB picks the values whose qh
// bit is set and a masked VPADDB adds their 16 (the bytes KQ5CHUNK's
// and/shift/add make, Y11 left unshifted), and VPDPWSSD scales and adds the
// exact int16 pair sums into int32, low sub-block into Y3, high into Y9.
#define KQ5VCHUNK(R) \
	VMOVDQU    (48+32*(R))(SI), Y4               \
	VPAND      Y15, Y4, Y5                       \
	VPSRLW     $4, Y4, Y4                        \
	VPAND      Y15, Y4, Y4                       \
	VPTESTMB   kq5bit<>+(64*(R))(SB), Y11, K1    \
	VPTESTMB   kq5bit<>+(64*(R)+32)(SB), Y11, K2 \
	VPADDB     Y12, Y5, K1, Y5                   \
	VPADDB     Y12, Y4, K2, Y4                   \
	VPMADDUBSW (64*(R))(DI), Y5, Y5              \
	VPMADDUBSW (64*(R)+32)(DI), Y4, Y4           \
	VPSHUFB    kq4shuf<>+(64*(R))(SB), Y1, Y6    \
	VPSHUFB    kq4shuf<>+(64*(R)+32)(SB), Y1, Y7 \
	VPDPWSSD   Y6, Y5, Y3                        \
	VPDPWSSD   Y7, Y4, Y9

// func q5KRowsVNNI(w *byte, xq *int8, xd *float32, xbs *int16, nb int, rows int, out *float32)
// q5KRowsAVX2 with AVX-512: the high bits by mask, VPDPWSSD. Frame: the
// out pointer.
TEXT ·q5KRowsVNNI(SB), NOSPLIT, $8-56
	MOVQ    w+0(FP), SI
	MOVQ    rows+40(FP), R8
	MOVQ    out+48(FP), AX
	MOVQ    AX, 0(SP)
	VMOVDQU kqm4<>(SB), Y15
	VMOVDQU kq16<>(SB), Y12

q5Kvrow:
	MOVQ    xq+8(FP), DI
	MOVQ    xd+16(FP), DX
	MOVQ    xbs+24(FP), BX
	MOVQ    nb+32(FP), CX
	VXORPS  Y14, Y14, Y14
	VXORPS  X13, X13, X13

q5Kvloop:
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
	VPXOR       Y9, Y9, Y9
	KQ5VCHUNK(0)
	KQ5VCHUNK(1)
	KQ5VCHUNK(2)
	KQ5VCHUNK(3)
	VPADDD       Y9, Y3, Y3
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
	JNZ          q5Kvloop
	HSUM8
	VADDSS       X13, X0, X0
	MOVQ         0(SP), AX
	VMOVSS       X0, (AX)
	ADDQ         $4, AX
	MOVQ         AX, 0(SP)
	DECQ         R8
	JNZ          q5Kvrow
	VZEROUPPER
	RET

