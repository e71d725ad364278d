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


// kq6zaff: VGF2P8AFFINEQB matrices moving a q6_K block's high-bit pairs
// to bits 4-5 of each byte (bit i of the result is the parity of the
// input and byte 7-i of the qword): kq6zaff+0 for the low nibbles' 64
// values (bits 0-1 in the low 256 bits, the values l; bits 2-3 in the high
// ones, the values l+32), kq6zaff+64 for the high nibbles' (bits 4-5 and
// 6-7: values l+64 and l+96).
DATA kq6zaff<>+0(SB)/8, $0x0000000001020000
DATA kq6zaff<>+8(SB)/8, $0x0000000001020000
DATA kq6zaff<>+16(SB)/8, $0x0000000001020000
DATA kq6zaff<>+24(SB)/8, $0x0000000001020000
DATA kq6zaff<>+32(SB)/8, $0x0000000004080000
DATA kq6zaff<>+40(SB)/8, $0x0000000004080000
DATA kq6zaff<>+48(SB)/8, $0x0000000004080000
DATA kq6zaff<>+56(SB)/8, $0x0000000004080000
DATA kq6zaff<>+64(SB)/8, $0x0000000010200000
DATA kq6zaff<>+72(SB)/8, $0x0000000010200000
DATA kq6zaff<>+80(SB)/8, $0x0000000010200000
DATA kq6zaff<>+88(SB)/8, $0x0000000010200000
DATA kq6zaff<>+96(SB)/8, $0x0000000040800000
DATA kq6zaff<>+104(SB)/8, $0x0000000040800000
DATA kq6zaff<>+112(SB)/8, $0x0000000040800000
DATA kq6zaff<>+120(SB)/8, $0x0000000040800000
GLOBL kq6zaff<>(SB), RODATA|NOPTR, $128

// kq6zperm: VPERMW indexes for the 64 values 64P.. (P = 0..3) of a
// block: 128-bit lane L of kq6zperm+64P takes scale 4P+L of the 16.
DATA kq6zperm<>+0(SB)/8, $0x0000000000000000
DATA kq6zperm<>+8(SB)/8, $0x0000000000000000
DATA kq6zperm<>+16(SB)/8, $0x0001000100010001
DATA kq6zperm<>+24(SB)/8, $0x0001000100010001
DATA kq6zperm<>+32(SB)/8, $0x0002000200020002
DATA kq6zperm<>+40(SB)/8, $0x0002000200020002
DATA kq6zperm<>+48(SB)/8, $0x0003000300030003
DATA kq6zperm<>+56(SB)/8, $0x0003000300030003
DATA kq6zperm<>+64(SB)/8, $0x0004000400040004
DATA kq6zperm<>+72(SB)/8, $0x0004000400040004
DATA kq6zperm<>+80(SB)/8, $0x0005000500050005
DATA kq6zperm<>+88(SB)/8, $0x0005000500050005
DATA kq6zperm<>+96(SB)/8, $0x0006000600060006
DATA kq6zperm<>+104(SB)/8, $0x0006000600060006
DATA kq6zperm<>+112(SB)/8, $0x0007000700070007
DATA kq6zperm<>+120(SB)/8, $0x0007000700070007
DATA kq6zperm<>+128(SB)/8, $0x0008000800080008
DATA kq6zperm<>+136(SB)/8, $0x0008000800080008
DATA kq6zperm<>+144(SB)/8, $0x0009000900090009
DATA kq6zperm<>+152(SB)/8, $0x0009000900090009
DATA kq6zperm<>+160(SB)/8, $0x000a000a000a000a
DATA kq6zperm<>+168(SB)/8, $0x000a000a000a000a
DATA kq6zperm<>+176(SB)/8, $0x000b000b000b000b
DATA kq6zperm<>+184(SB)/8, $0x000b000b000b000b
DATA kq6zperm<>+192(SB)/8, $0x000c000c000c000c
DATA kq6zperm<>+200(SB)/8, $0x000c000c000c000c
DATA kq6zperm<>+208(SB)/8, $0x000d000d000d000d
DATA kq6zperm<>+216(SB)/8, $0x000d000d000d000d
DATA kq6zperm<>+224(SB)/8, $0x000e000e000e000e
DATA kq6zperm<>+232(SB)/8, $0x000e000e000e000e
DATA kq6zperm<>+240(SB)/8, $0x000f000f000f000f
DATA kq6zperm<>+248(SB)/8, $0x000f000f000f000f
GLOBL kq6zperm<>(SB), RODATA|NOPTR, $256

// KQ6ZHALF(H): the 128 values 128H.. of a block in two 512-bit registers.
// Z9 gets the 64 values 128H+0..63 (the low nibbles of quant bytes 64H..,
// the high-bit pairs from GFNI on qh 32H.. broadcast to both halves), Z10
// the 64 values 128H+64..127 (the high nibbles); each against its 64
// activation bytes, scaled per 16 values and added into Z3 / Z13. Dword
// lane m of Z9 holds values 4m..4m+3 of its 64, which are lane m mod 8 of
// q6KRowsVNNI's Y3 (values 4k.. of every 32); the final fold adds lanes
// m and m+8, so each lane sums exactly the same integers.
#define KQ6ZHALF(H, P0, P1, FIRST0, FIRST1) \
	VMOVDQU64       (64*(H))(SI), Z4        \
	VBROADCASTI64X4 (128+32*(H))(SI), Z6    \
	VGF2P8AFFINEQB  $0, Z16, Z6, Z9         \
	VGF2P8AFFINEQB  $0, Z17, Z6, Z10        \
	VPSRLW          $4, Z4, Z5              \
	VPTERNLOGD      $0xF8, Z15, Z4, Z9      \
	VPTERNLOGD      $0xF8, Z15, Z5, Z10     \
	VPMADDUBSW      (128*(H))(DI), Z9, Z9   \
	VPMADDUBSW      (128*(H)+64)(DI), Z10, Z10 \
	VPERMW          Z1, P0, Z11             \
	FIRST0          Z11, Z9, Z3             \
	VPERMW          Z1, P1, Z12             \
	FIRST1          Z12, Z10, Z13

// func q6KRowsZ(w *byte, xq *int8, xd *float32, xbs *int16, nb int, rows int, out *float32)
// q6KRowsVNNI with 512-bit registers and GFNI: half the instructions per
// block, the same integers in each of Y3's lanes (KQ6ZHALF), then the same
// float steps, so the same bits. At one thread q6KRowsVNNI was bound by
// its instructions, not memory: 34 GB/s with its matrix in cache, 24 GB/s
// in a decode step where q4Kx8GemvVNNI read 31. No dense software
// prefetch: four PREFETCHT0 4 KB ahead per block made a stream of matrices
// 10-15% slower than the hardware prefetcher alone (4 KB and huge pages
// alike), and one line 8 or 12 KB ahead per block was slower too. One line
// 12 KB ahead every eighth block (CX counts a row's blocks down; 1680
// bytes apart) is a lead for the L2 streamer, which starts over in every
// 4 KB page (see Q4KFARPREFETCH): over a 1-thread decode step's weight
// stream the q6_K part took 0.78 of the time without it (every fourth
// block: 0.95; once per row, 12 or 20 KB ahead: 0.84).
TEXT ·q6KRowsZ(SB), NOSPLIT, $0-56
	MOVQ         w+0(FP), SI
	MOVQ         rows+40(FP), R13
	MOVQ         out+48(FP), R12
	VPBROADCASTQ kqm4<>(SB), Z15
	VMOVDQU64    kq6zaff<>+0(SB), Z16
	VMOVDQU64    kq6zaff<>+64(SB), Z17
	VMOVDQU64    kq6zperm<>+0(SB), Z18
	VMOVDQU64    kq6zperm<>+64(SB), Z19
	VMOVDQU64    kq6zperm<>+128(SB), Z20
	VMOVDQU64    kq6zperm<>+192(SB), Z21

q6Kzrow:
	MOVQ    xq+8(FP), DI
	MOVQ    xd+16(FP), DX
	MOVQ    xbs+24(FP), BX
	MOVQ    nb+32(FP), CX
	VXORPS  Y14, Y14, Y14

q6Kzloop:
	TESTQ      $7, CX
	JNZ        q6Kzblock
	PREFETCHT0 12288(SI)

q6Kzblock:
	VMOVDQU   192(SI), X0
	VPMOVSXBW X0, Y1
	VMOVDQU   (BX), Y2
	VPMADDWD  Y1, Y2, Y2
	VPSLLD    $5, Y2, Y2
	KQ6ZHALF(0, Z18, Z19, VPMADDWD, VPMADDWD)
	KQ6ZHALF(1, Z20, Z21, VPDPWSSD, VPDPWSSD)
	VPADDD        Z13, Z3, Z3
	VEXTRACTI64X4 $1, Z3, Y4
	VPADDD        Y4, Y3, Y3
	VPSUBD        Y2, Y3, Y3
	VCVTDQ2PS     Y3, Y3
	FP16(208(SI), X4)
	VMULSS        (DX), X4, X4
	VBROADCASTSS  X4, Y4
	VFMADD231PS   Y3, Y4, Y14
	ADDQ          $210, SI
	ADDQ          $256, DI
	ADDQ          $4, DX
	ADDQ          $32, BX
	DECQ          CX
	JNZ           q6Kzloop
	HSUM8
	VMOVSS        X0, (R12)
	ADDQ          $4, R12
	DECQ          R13
	JNZ           q6Kzrow
	VZEROUPPER
	RET
