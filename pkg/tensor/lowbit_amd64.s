// exactness: the integer core of the lowbit.go types' kernels
// (lowbit_dot.go). Integer sums are exact, so only which values land in
// which lane matters: lane l of a 32-value chunk holds values 4l..4l+3, as
// in ggml's AVX2 kernels.

#include "textflag.h"

// func i8LanesAVX2(v, q *int8, sc *int16, nchunk, per int, out *int32)
// For each group of per 32-value chunks, out gets 8 int32 lanes:
// lane l = sum over the group's chunks c and k < 4 of
// v[32c+4l+k] * sc[(32c+4l+k)/16] * q[32c+4l+k].
TEXT ·i8LanesAVX2(SB), NOSPLIT, $0-48
	MOVQ v+0(FP), SI
	MOVQ q+8(FP), DI
	MOVQ sc+16(FP), R8
	MOVQ nchunk+24(FP), CX
	MOVQ per+32(FP), DX
	MOVQ out+40(FP), R9
	TESTQ CX, CX
	JE done
group:
	VPXOR Y4, Y4, Y4
	VPXOR Y5, Y5, Y5
	MOVQ DX, BX
chunk:
	VPMOVSXBW (SI), Y0
	VPMOVSXBW 16(SI), Y1
	VPMOVSXBW (DI), Y2
	VPMOVSXBW 16(DI), Y3
	VPBROADCASTW (R8), Y6
	VPBROADCASTW 2(R8), Y7
	VPMULLW Y6, Y0, Y0
	VPMULLW Y7, Y1, Y1
	VPMADDWD Y2, Y0, Y0
	VPMADDWD Y3, Y1, Y1
	VPADDD Y0, Y4, Y4
	VPADDD Y1, Y5, Y5
	ADDQ $32, SI
	ADDQ $32, DI
	ADDQ $4, R8
	DECQ CX
	DECQ BX
	JNZ chunk
	// Y4 holds pair sums of values 0-15, Y5 of 16-31 (summed over the
	// group): hadd gives lanes 0 1 4 5 | 2 3 6 7, the permute 0..7.
	VPHADDD Y5, Y4, Y6
	VPERMQ $0xD8, Y6, Y6
	VMOVDQU Y6, (R9)
	ADDQ $32, R9
	TESTQ CX, CX
	JNE group
done:
	VZEROUPPER
	RET

// func fmaLanesAVX2(acc *[8]float32, d *float32, lanes *int32, n int)
// For each of n blocks: acc = fma(d[b], float(lanes[8b:8b+8]), acc), the
// _mm256_fmadd_ps of ggml's AVX2 kernels.
TEXT ·fmaLanesAVX2(SB), NOSPLIT, $0-32
	MOVQ acc+0(FP), AX
	MOVQ d+8(FP), SI
	MOVQ lanes+16(FP), DI
	MOVQ n+24(FP), CX
	VMOVUPS (AX), Y0
	TESTQ CX, CX
	JE fdone
floop:
	VBROADCASTSS (SI), Y1
	VCVTDQ2PS (DI), Y2
	VFMADD231PS Y2, Y1, Y0
	ADDQ $4, SI
	ADDQ $32, DI
	DECQ CX
	JNZ floop
fdone:
	VMOVUPS Y0, (AX)
	VZEROUPPER
	RET
