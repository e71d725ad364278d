// Decode attention over an f16 cache with the query heads of one KV head
// in one pass over the keys (see decodef16_amd64.go): every key row is
// loaded and converted once for up to four heads, and the heads' chains
// run side by side. Each head's numbers are those of ggml_vec_dot_f16 and
// of ggml's f16 value accumulation, operation for operation.

#include "textflag.h"

// One 64-element step of ggml_vec_dot_f16 (four 16-lane accumulators)
// for one head: the key's four vectors (Z12..Z15) times the head's f32
// query at OFF(DI) (the query's halves widened, exactly).
#define DOTSTEP(QADDR0, QADDR1, QADDR2, QADDR3, A0, A1, A2, A3) \
	VFMADD231PS QADDR0, Z12, A0 \
	VFMADD231PS QADDR1, Z13, A1 \
	VFMADD231PS QADDR2, Z14, A2 \
	VFMADD231PS QADDR3, Z15, A3

// ggml's reduce of four 16-lane accumulators (GGML_F32x16_REDUCE: (0+2) +
// (1+3), then _mm512_reduce_add_ps: 256-bit halves, 128-bit halves,
// (0+2)+(1+3)) into the float at OUT.
#define DOTREDUCE(A0, A1, A2, A3, YA0, YA1, XA0, XA1, OUT) \
	VADDPS        A2, A0, A0   \
	VADDPS        A3, A1, A1   \
	VADDPS        A1, A0, A0   \
	VEXTRACTF64X4 $1, A0, YA1  \
	VADDPS        YA1, YA0, YA0 \
	VEXTRACTF128  $1, YA0, XA1 \
	VADDPS        XA1, XA0, XA0 \
	VMOVHLPS      XA0, XA0, XA1 \
	VADDPS        XA1, XA0, XA0 \
	VMOVSHDUP     XA0, XA1     \
	VADDSS        XA1, XA0, XA0 \
	VMOVSS        XA0, OUT

// func dotF16HeadsAVX512(base unsafe.Pointer, offs *int, rows int, q *float32, n, heads int, out *float32, ostride int)
// For every row r (the key at element offs[r] of base) and head h < heads
// (1..4): out[h*ostride+r] = ggml_vec_dot_f16(key, q[h*n:]) with q the
// heads' f16 queries widened to f32; n a multiple of 64.
TEXT ·dotF16HeadsAVX512(SB), NOSPLIT, $0-64
	MOVQ base+0(FP), R8
	MOVQ offs+8(FP), R9
	MOVQ rows+16(FP), R10
	MOVQ q+24(FP), R11
	MOVQ n+32(FP), R12
	MOVQ heads+40(FP), BX
	MOVQ out+48(FP), R13
	MOVQ ostride+56(FP), R14
	SHLQ $2, R14                 // bytes between heads' outputs
	MOVQ R12, R15
	SHLQ $2, R15                 // bytes between heads' queries

dhrow:
	TESTQ  R10, R10
	JZ     dhdone
	MOVQ   (R9), SI
	LEAQ   (R8)(SI*2), SI
	MOVQ   R11, DI
	MOVQ   R12, CX
	LEAQ   (DI)(R15*2), DX       // head 2's query
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
	VXORPS Z16, Z16, Z16
	VXORPS Z17, Z17, Z17
	VXORPS Z18, Z18, Z18
	VXORPS Z19, Z19, Z19

dhstep:
	VCVTPH2PS (SI), Z12
	VCVTPH2PS 32(SI), Z13
	VCVTPH2PS 64(SI), Z14
	VCVTPH2PS 96(SI), Z15
	DOTSTEP((DI), 64(DI), 128(DI), 192(DI), Z0, Z1, Z2, Z3)
	CMPQ      BX, $2
	JLT       dhnext
	DOTSTEP((DI)(R15*1), 64(DI)(R15*1), 128(DI)(R15*1), 192(DI)(R15*1), Z4, Z5, Z6, Z7)
	CMPQ      BX, $3
	JLT       dhnext
	DOTSTEP((DX), 64(DX), 128(DX), 192(DX), Z8, Z9, Z10, Z11)
	CMPQ      BX, $4
	JLT       dhnext
	DOTSTEP((DX)(R15*1), 64(DX)(R15*1), 128(DX)(R15*1), 192(DX)(R15*1), Z16, Z17, Z18, Z19)

dhnext:
	ADDQ $128, SI
	ADDQ $256, DI
	ADDQ $256, DX
	SUBQ $64, CX
	JNZ  dhstep

	DOTREDUCE(Z0, Z1, Z2, Z3, Y0, Y1, X0, X1, (R13))
	CMPQ BX, $2
	JLT  dhrowend
	DOTREDUCE(Z4, Z5, Z6, Z7, Y4, Y5, X4, X5, (R13)(R14*1))
	CMPQ BX, $3
	JLT  dhrowend
	DOTREDUCE(Z8, Z9, Z10, Z11, Y8, Y9, X8, X9, (R13)(R14*2))
	CMPQ BX, $4
	JLT  dhrowend
	// Head 3: its accumulators moved to Z0..Z3 (head 0 is stored), so
	// the reduce's scalar steps use VEX registers.
	VMOVAPS Z16, Z0
	VMOVAPS Z17, Z1
	VMOVAPS Z18, Z2
	VMOVAPS Z19, Z3
	LEAQ    (R13)(R14*2), AX
	ADDQ    R14, AX
	DOTREDUCE(Z0, Z1, Z2, Z3, Y0, Y1, X0, X1, (AX))

dhrowend:
	ADDQ $8, R9
	ADDQ $4, R13
	DECQ R10
	JMP  dhrow

dhdone:
	VZEROUPPER
	RET

// One head's f16 value step: ACC = f16(fma(v, B, ACC)) on the four
// 16-column blocks (the key's values in Z12..Z15), T an f16 temporary.
#define ACCMAD(B, A0, A1, A2, A3) \
	VFMADD231PS B, Z12, A0  \
	VFMADD231PS B, Z13, A1  \
	VFMADD231PS B, Z14, A2  \
	VFMADD231PS B, Z15, A3  \
	VCVTPS2PH   $0, A0, Y20 \
	VCVTPS2PH   $0, A1, Y21 \
	VCVTPS2PH   $0, A2, Y22 \
	VCVTPS2PH   $0, A3, Y23 \
	VCVTPH2PS   Y20, A0     \
	VCVTPH2PS   Y21, A1     \
	VCVTPH2PS   Y22, A2     \
	VCVTPH2PS   Y23, A3

// ACC = f16(ACC * B) (ggml_vec_scale_f16 at a new running maximum).
#define ACCSCALE(B, A0, A1, A2, A3) \
	VMULPS    B, A0, A0   \
	VMULPS    B, A1, A1   \
	VMULPS    B, A2, A2   \
	VMULPS    B, A3, A3   \
	VCVTPS2PH $0, A0, Y20 \
	VCVTPS2PH $0, A1, Y21 \
	VCVTPS2PH $0, A2, Y22 \
	VCVTPS2PH $0, A3, Y23 \
	VCVTPH2PS Y20, A0     \
	VCVTPH2PS Y21, A1     \
	VCVTPH2PS Y22, A2     \
	VCVTPH2PS Y23, A3

#define LOADACC(ADDR0, ADDR1, ADDR2, ADDR3, A0, A1, A2, A3) \
	VCVTPH2PS ADDR0, A0 \
	VCVTPH2PS ADDR1, A1 \
	VCVTPH2PS ADDR2, A2 \
	VCVTPH2PS ADDR3, A3

#define STOREACC(A0, A1, A2, A3, ADDR0, ADDR1, ADDR2, ADDR3) \
	VCVTPS2PH $0, A0, ADDR0 \
	VCVTPS2PH $0, A1, ADDR1 \
	VCVTPS2PH $0, A2, ADDR2 \
	VCVTPS2PH $0, A3, ADDR3

// func flashAccHeadsAVX512(acc, v unsafe.Pointer, offs *int, ms, vs *float32, n, heads, astride int)
// ggmlFlashAcc64AVX2 for 64 columns of up to four heads (1..4) at once:
// head h's f16 accumulator at acc + h*astride halves, its per-key rescale
// and weight at ms[h*n:], vs[h*n:]. For each key j in order and each head:
// acc = f16(acc*ms) when ms != 1, then acc = f16(fma(v, vs, acc)).
TEXT ·flashAccHeadsAVX512(SB), NOSPLIT, $0-64
	MOVQ acc+0(FP), DI
	MOVQ v+8(FP), SI
	MOVQ offs+16(FP), R8
	MOVQ ms+24(FP), R9
	MOVQ vs+32(FP), R10
	MOVQ n+40(FP), CX
	MOVQ heads+48(FP), BX
	MOVQ astride+56(FP), R14
	SHLQ $1, R14                 // bytes between heads' accumulators
	MOVQ CX, R12
	SHLQ $2, R12                 // bytes between heads' ms (and vs) rows
	LEAQ (DI)(R14*2), DX         // head 2's accumulator
	LOADACC((DI), 32(DI), 64(DI), 96(DI), Z0, Z1, Z2, Z3)
	CMPQ BX, $2
	JLT  fhloaded
	LOADACC((DI)(R14*1), 32(DI)(R14*1), 64(DI)(R14*1), 96(DI)(R14*1), Z4, Z5, Z6, Z7)
	CMPQ BX, $3
	JLT  fhloaded
	LOADACC((DX), 32(DX), 64(DX), 96(DX), Z8, Z9, Z10, Z11)
	CMPQ BX, $4
	JLT  fhloaded
	LOADACC((DX)(R14*1), 32(DX)(R14*1), 64(DX)(R14*1), 96(DX)(R14*1), Z16, Z17, Z18, Z19)

fhloaded:
	LEAQ (R9)(R12*2), R13        // head 2's ms
	LEAQ (R10)(R12*2), R15       // head 2's vs

fhkey:
	TESTQ     CX, CX
	JEQ       fhdone
	MOVQ      (R8), R11
	LEAQ      (SI)(R11*2), R11
	VCVTPH2PS (R11), Z12
	VCVTPH2PS 32(R11), Z13
	VCVTPH2PS 64(R11), Z14
	VCVTPH2PS 96(R11), Z15

	MOVL         (R9), AX
	CMPL         AX, $0x3f800000
	JEQ          fhmad0
	VBROADCASTSS (R9), Z24
	ACCSCALE(Z24, Z0, Z1, Z2, Z3)

fhmad0:
	VBROADCASTSS (R10), Z25
	ACCMAD(Z25, Z0, Z1, Z2, Z3)
	CMPQ         BX, $2
	JLT          fhnext
	MOVL         (R9)(R12*1), AX
	CMPL         AX, $0x3f800000
	JEQ          fhmad1
	VBROADCASTSS (R9)(R12*1), Z26
	ACCSCALE(Z26, Z4, Z5, Z6, Z7)

fhmad1:
	VBROADCASTSS (R10)(R12*1), Z27
	ACCMAD(Z27, Z4, Z5, Z6, Z7)
	CMPQ         BX, $3
	JLT          fhnext
	MOVL         (R13), AX
	CMPL         AX, $0x3f800000
	JEQ          fhmad2
	VBROADCASTSS (R13), Z28
	ACCSCALE(Z28, Z8, Z9, Z10, Z11)

fhmad2:
	VBROADCASTSS (R15), Z29
	ACCMAD(Z29, Z8, Z9, Z10, Z11)
	CMPQ         BX, $4
	JLT          fhnext
	MOVL         (R13)(R12*1), AX
	CMPL         AX, $0x3f800000
	JEQ          fhmad3
	VBROADCASTSS (R13)(R12*1), Z30
	ACCSCALE(Z30, Z16, Z17, Z18, Z19)

fhmad3:
	VBROADCASTSS (R15)(R12*1), Z31
	ACCMAD(Z31, Z16, Z17, Z18, Z19)

fhnext:
	ADDQ $8, R8
	ADDQ $4, R9
	ADDQ $4, R10
	ADDQ $4, R13
	ADDQ $4, R15
	DECQ CX
	JMP  fhkey

fhdone:
	STOREACC(Z0, Z1, Z2, Z3, (DI), 32(DI), 64(DI), 96(DI))
	CMPQ BX, $2
	JLT  fhret
	STOREACC(Z4, Z5, Z6, Z7, (DI)(R14*1), 32(DI)(R14*1), 64(DI)(R14*1), 96(DI)(R14*1))
	CMPQ BX, $3
	JLT  fhret
	STOREACC(Z8, Z9, Z10, Z11, (DX), 32(DX), 64(DX), 96(DX))
	CMPQ BX, $4
	JLT  fhret
	STOREACC(Z16, Z17, Z18, Z19, (DX)(R14*1), 32(DX)(R14*1), 64(DX)(R14*1), 96(DX)(R14*1))

fhret:
	VZEROUPPER
	RET
