// The query-blocked tiled flash-attention kernels of fablock_amd64.s with
// 512-bit vectors: six query vectors per pass, 64 columns (four ZMM
// registers) per row, 24 accumulators. Each output element is still its
// own FMA chain in the same order, so the bits are those of the AVX2
// kernels and of ggml's chains; a full-width AVX-512 core does twice the
// multiply-adds per instruction.

#include "textflag.h"

// One key-dimension step of the score kernel: broadcast q[row][d] and
// multiply-add it into the row's four column accumulators.
#define KQROW(QADDR, B, A0, A1, A2, A3) \
	VBROADCASTSS QADDR, B      \
	VFMADD231PS  B, Z24, A0    \
	VFMADD231PS  B, Z25, A1    \
	VFMADD231PS  B, Z26, A2    \
	VFMADD231PS  B, Z27, A3

// func faKQ6AVX512(out, kt, q *float32, dk int, scale float32)
// out [6][64] = scale * (q [6][dk] x kt [dk][64]).
TEXT ·faKQ6AVX512(SB), NOSPLIT, $0-36
	MOVQ   out+0(FP), DI
	MOVQ   kt+8(FP), SI
	MOVQ   q+16(FP), DX
	MOVQ   dk+24(FP), CX
	MOVQ   CX, R8
	SHLQ   $2, R8            // q row stride in bytes
	LEAQ   (DX)(R8*2), R10
	ADDQ   R8, R10           // row 3
	VXORPS Z0, Z0, Z0
	VXORPS Z1, Z1, Z1
	VXORPS Z2, Z2, Z2
	VXORPS Z3, Z3, Z3
	VXORPS Z4, Z4, Z4
	VXORPS Z5, Z5, Z5
	VXORPS Z6, Z6, Z6
	VXORPS Z7, Z7, Z7
	VXORPS Z8, Z8, Z8
	VXORPS Z9, Z9, Z9
	VXORPS Z10, Z10, Z10
	VXORPS Z11, Z11, Z11
	VXORPS Z12, Z12, Z12
	VXORPS Z13, Z13, Z13
	VXORPS Z14, Z14, Z14
	VXORPS Z15, Z15, Z15
	VXORPS Z16, Z16, Z16
	VXORPS Z17, Z17, Z17
	VXORPS Z18, Z18, Z18
	VXORPS Z19, Z19, Z19
	VXORPS Z20, Z20, Z20
	VXORPS Z21, Z21, Z21
	VXORPS Z22, Z22, Z22
	VXORPS Z23, Z23, Z23

kq512d:
	VMOVUPS (SI), Z24
	VMOVUPS 64(SI), Z25
	VMOVUPS 128(SI), Z26
	VMOVUPS 192(SI), Z27
	KQROW((DX), Z28, Z0, Z1, Z2, Z3)
	KQROW((DX)(R8*1), Z29, Z4, Z5, Z6, Z7)
	KQROW((DX)(R8*2), Z30, Z8, Z9, Z10, Z11)
	KQROW((R10), Z31, Z12, Z13, Z14, Z15)
	KQROW((R10)(R8*1), Z28, Z16, Z17, Z18, Z19)
	KQROW((R10)(R8*2), Z29, Z20, Z21, Z22, Z23)
	ADDQ    $256, SI
	ADDQ    $4, DX
	ADDQ    $4, R10
	DECQ    CX
	JNZ     kq512d

	VBROADCASTSS scale+32(FP), Z31
	VMULPS       Z31, Z0, Z0
	VMULPS       Z31, Z1, Z1
	VMULPS       Z31, Z2, Z2
	VMULPS       Z31, Z3, Z3
	VMULPS       Z31, Z4, Z4
	VMULPS       Z31, Z5, Z5
	VMULPS       Z31, Z6, Z6
	VMULPS       Z31, Z7, Z7
	VMULPS       Z31, Z8, Z8
	VMULPS       Z31, Z9, Z9
	VMULPS       Z31, Z10, Z10
	VMULPS       Z31, Z11, Z11
	VMULPS       Z31, Z12, Z12
	VMULPS       Z31, Z13, Z13
	VMULPS       Z31, Z14, Z14
	VMULPS       Z31, Z15, Z15
	VMULPS       Z31, Z16, Z16
	VMULPS       Z31, Z17, Z17
	VMULPS       Z31, Z18, Z18
	VMULPS       Z31, Z19, Z19
	VMULPS       Z31, Z20, Z20
	VMULPS       Z31, Z21, Z21
	VMULPS       Z31, Z22, Z22
	VMULPS       Z31, Z23, Z23
	VMOVUPS      Z0, (DI)
	VMOVUPS      Z1, 64(DI)
	VMOVUPS      Z2, 128(DI)
	VMOVUPS      Z3, 192(DI)
	VMOVUPS      Z4, 256(DI)
	VMOVUPS      Z5, 320(DI)
	VMOVUPS      Z6, 384(DI)
	VMOVUPS      Z7, 448(DI)
	VMOVUPS      Z8, 512(DI)
	VMOVUPS      Z9, 576(DI)
	VMOVUPS      Z10, 640(DI)
	VMOVUPS      Z11, 704(DI)
	VMOVUPS      Z12, 768(DI)
	VMOVUPS      Z13, 832(DI)
	VMOVUPS      Z14, 896(DI)
	VMOVUPS      Z15, 960(DI)
	VMOVUPS      Z16, 1024(DI)
	VMOVUPS      Z17, 1088(DI)
	VMOVUPS      Z18, 1152(DI)
	VMOVUPS      Z19, 1216(DI)
	VMOVUPS      Z20, 1280(DI)
	VMOVUPS      Z21, 1344(DI)
	VMOVUPS      Z22, 1408(DI)
	VMOVUPS      Z23, 1472(DI)
	VZEROUPPER
	RET

// Four moves (one row's 64-column accumulators to or from memory).
#define MOV4(S0, S1, S2, S3, D0, D1, D2, D3) \
	VMOVUPS S0, D0 \
	VMOVUPS S1, D1 \
	VMOVUPS S2, D2 \
	VMOVUPS S3, D3

// One key of the value kernel for one row: broadcast p[row][k] and
// multiply-add the key's value columns (Z24..Z27) into the row.
#define VAKEY(PADDR, B, A0, A1, A2, A3) \
	VBROADCASTSS PADDR, B   \
	VFMADD231PS  B, Z24, A0 \
	VFMADD231PS  B, Z25, A1 \
	VFMADD231PS  B, Z26, A2 \
	VFMADD231PS  B, Z27, A3

// func faVAcc6AVX512(acc, v, p *float32, dv int)
// acc [6][dv] += p [6][64] x v [64][dv]; dv a multiple of 64.
TEXT ·faVAcc6AVX512(SB), NOSPLIT, $0-32
	MOVQ dv+24(FP), R8
	SHLQ $2, R8              // row stride of acc and v in bytes
	XORQ R13, R13            // column byte offset

va512col:
	CMPQ R13, R8
	JGE  va512done
	MOVQ acc+0(FP), DI
	ADDQ R13, DI
	LEAQ (DI)(R8*2), R10
	ADDQ R8, R10             // row 3
	MOV4((DI), 64(DI), 128(DI), 192(DI), Z0, Z1, Z2, Z3)
	VMOVUPS (DI)(R8*1), Z4
	VMOVUPS 64(DI)(R8*1), Z5
	VMOVUPS 128(DI)(R8*1), Z6
	VMOVUPS 192(DI)(R8*1), Z7
	VMOVUPS (DI)(R8*2), Z8
	VMOVUPS 64(DI)(R8*2), Z9
	VMOVUPS 128(DI)(R8*2), Z10
	VMOVUPS 192(DI)(R8*2), Z11
	MOV4((R10), 64(R10), 128(R10), 192(R10), Z12, Z13, Z14, Z15)
	VMOVUPS (R10)(R8*1), Z16
	VMOVUPS 64(R10)(R8*1), Z17
	VMOVUPS 128(R10)(R8*1), Z18
	VMOVUPS 192(R10)(R8*1), Z19
	VMOVUPS (R10)(R8*2), Z20
	VMOVUPS 64(R10)(R8*2), Z21
	VMOVUPS 128(R10)(R8*2), Z22
	VMOVUPS 192(R10)(R8*2), Z23
	MOVQ    v+8(FP), SI
	ADDQ    R13, SI
	MOVQ    p+16(FP), DX
	MOVQ    $64, CX

va512k:
	VMOVUPS (SI), Z24
	VMOVUPS 64(SI), Z25
	VMOVUPS 128(SI), Z26
	VMOVUPS 192(SI), Z27
	VAKEY((DX), Z28, Z0, Z1, Z2, Z3)
	VAKEY(256(DX), Z29, Z4, Z5, Z6, Z7)
	VAKEY(512(DX), Z30, Z8, Z9, Z10, Z11)
	VAKEY(768(DX), Z31, Z12, Z13, Z14, Z15)
	VAKEY(1024(DX), Z28, Z16, Z17, Z18, Z19)
	VAKEY(1280(DX), Z29, Z20, Z21, Z22, Z23)
	ADDQ    R8, SI
	ADDQ    $4, DX
	DECQ    CX
	JNZ     va512k

	MOV4(Z0, Z1, Z2, Z3, (DI), 64(DI), 128(DI), 192(DI))
	VMOVUPS Z4, (DI)(R8*1)
	VMOVUPS Z5, 64(DI)(R8*1)
	VMOVUPS Z6, 128(DI)(R8*1)
	VMOVUPS Z7, 192(DI)(R8*1)
	VMOVUPS Z8, (DI)(R8*2)
	VMOVUPS Z9, 64(DI)(R8*2)
	VMOVUPS Z10, 128(DI)(R8*2)
	VMOVUPS Z11, 192(DI)(R8*2)
	MOV4(Z12, Z13, Z14, Z15, (R10), 64(R10), 128(R10), 192(R10))
	VMOVUPS Z16, (R10)(R8*1)
	VMOVUPS Z17, 64(R10)(R8*1)
	VMOVUPS Z18, 128(R10)(R8*1)
	VMOVUPS Z19, 192(R10)(R8*1)
	VMOVUPS Z20, (R10)(R8*2)
	VMOVUPS Z21, 64(R10)(R8*2)
	VMOVUPS Z22, 128(R10)(R8*2)
	VMOVUPS Z23, 192(R10)(R8*2)
	ADDQ    $256, R13
	JMP     va512col

va512done:
	VZEROUPPER
	RET
