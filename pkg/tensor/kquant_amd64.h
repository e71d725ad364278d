// Constants and macros shared by the K-quant kernels (kquant_amd64.s,
// kquant_vnni_amd64.s); each file gets its own copy of the constants.

// kq4shuf: VPSHUFB masks broadcasting int16 i (of eight) of each lane to
// every word of that lane.
DATA kq4shuf<>+0(SB)/8, $0x0100010001000100
DATA kq4shuf<>+8(SB)/8, $0x0100010001000100
DATA kq4shuf<>+16(SB)/8, $0x0100010001000100
DATA kq4shuf<>+24(SB)/8, $0x0100010001000100
DATA kq4shuf<>+32(SB)/8, $0x0302030203020302
DATA kq4shuf<>+40(SB)/8, $0x0302030203020302
DATA kq4shuf<>+48(SB)/8, $0x0302030203020302
DATA kq4shuf<>+56(SB)/8, $0x0302030203020302
DATA kq4shuf<>+64(SB)/8, $0x0504050405040504
DATA kq4shuf<>+72(SB)/8, $0x0504050405040504
DATA kq4shuf<>+80(SB)/8, $0x0504050405040504
DATA kq4shuf<>+88(SB)/8, $0x0504050405040504
DATA kq4shuf<>+96(SB)/8, $0x0706070607060706
DATA kq4shuf<>+104(SB)/8, $0x0706070607060706
DATA kq4shuf<>+112(SB)/8, $0x0706070607060706
DATA kq4shuf<>+120(SB)/8, $0x0706070607060706
DATA kq4shuf<>+128(SB)/8, $0x0908090809080908
DATA kq4shuf<>+136(SB)/8, $0x0908090809080908
DATA kq4shuf<>+144(SB)/8, $0x0908090809080908
DATA kq4shuf<>+152(SB)/8, $0x0908090809080908
DATA kq4shuf<>+160(SB)/8, $0x0b0a0b0a0b0a0b0a
DATA kq4shuf<>+168(SB)/8, $0x0b0a0b0a0b0a0b0a
DATA kq4shuf<>+176(SB)/8, $0x0b0a0b0a0b0a0b0a
DATA kq4shuf<>+184(SB)/8, $0x0b0a0b0a0b0a0b0a
DATA kq4shuf<>+192(SB)/8, $0x0d0c0d0c0d0c0d0c
DATA kq4shuf<>+200(SB)/8, $0x0d0c0d0c0d0c0d0c
DATA kq4shuf<>+208(SB)/8, $0x0d0c0d0c0d0c0d0c
DATA kq4shuf<>+216(SB)/8, $0x0d0c0d0c0d0c0d0c
DATA kq4shuf<>+224(SB)/8, $0x0f0e0f0e0f0e0f0e
DATA kq4shuf<>+232(SB)/8, $0x0f0e0f0e0f0e0f0e
DATA kq4shuf<>+240(SB)/8, $0x0f0e0f0e0f0e0f0e
DATA kq4shuf<>+248(SB)/8, $0x0f0e0f0e0f0e0f0e
GLOBL kq4shuf<>(SB), RODATA|NOPTR, $256
DATA kqm4<>+0(SB)/8, $0x0f0f0f0f0f0f0f0f
DATA kqm4<>+8(SB)/8, $0x0f0f0f0f0f0f0f0f
DATA kqm4<>+16(SB)/8, $0x0f0f0f0f0f0f0f0f
DATA kqm4<>+24(SB)/8, $0x0f0f0f0f0f0f0f0f
GLOBL kqm4<>(SB), RODATA|NOPTR, $32
DATA kqm3<>+0(SB)/8, $0x0303030303030303
DATA kqm3<>+8(SB)/8, $0x0303030303030303
DATA kqm3<>+16(SB)/8, $0x0303030303030303
DATA kqm3<>+24(SB)/8, $0x0303030303030303
GLOBL kqm3<>(SB), RODATA|NOPTR, $32
DATA kqm12<>+0(SB)/8, $0x0c0c0c0c0c0c0c0c
DATA kqm12<>+8(SB)/8, $0x0c0c0c0c0c0c0c0c
DATA kqm12<>+16(SB)/8, $0x0c0c0c0c0c0c0c0c
DATA kqm12<>+24(SB)/8, $0x0c0c0c0c0c0c0c0c
GLOBL kqm12<>(SB), RODATA|NOPTR, $32
DATA kqm48<>+0(SB)/8, $0x3030303030303030
DATA kqm48<>+8(SB)/8, $0x3030303030303030
DATA kqm48<>+16(SB)/8, $0x3030303030303030
DATA kqm48<>+24(SB)/8, $0x3030303030303030
GLOBL kqm48<>(SB), RODATA|NOPTR, $32
DATA kqmc0<>+0(SB)/8, $0xc0c0c0c0c0c0c0c0
DATA kqmc0<>+8(SB)/8, $0xc0c0c0c0c0c0c0c0
DATA kqmc0<>+16(SB)/8, $0xc0c0c0c0c0c0c0c0
DATA kqmc0<>+24(SB)/8, $0xc0c0c0c0c0c0c0c0
GLOBL kqmc0<>(SB), RODATA|NOPTR, $32
DATA kqone<>+0(SB)/8, $0x0101010101010101
DATA kqone<>+8(SB)/8, $0x0101010101010101
DATA kqone<>+16(SB)/8, $0x0101010101010101
DATA kqone<>+24(SB)/8, $0x0101010101010101
GLOBL kqone<>(SB), RODATA|NOPTR, $32

// KSCALES decodes the 12 scale bytes at 4(SI) of a q4_K/q5_K block into
// Y0 = 16 int16 (scales 0-7, mins 0-7), Y1 = scales 0-7 in both halves and
// X2 = mins 0-7 (ggml's kmask1/2/3 unpacking). Clobbers AX, R9-R13.
#define KSCALES \
	MOVL         4(SI), AX          \
	MOVL         8(SI), R9          \
	MOVL         12(SI), R10        \
	MOVL         R10, R11           \
	SHRL         $4, R11            \
	ANDL         $0x0f0f0f0f, R11   \
	MOVL         R9, R12            \
	SHRL         $6, R12            \
	ANDL         $0x03030303, R12   \
	SHLL         $4, R12            \
	ORL          R12, R11           \
	MOVL         R9, R12            \
	ANDL         $0x3f3f3f3f, R12   \
	MOVL         R10, R13           \
	ANDL         $0x0f0f0f0f, R13   \
	MOVL         AX, R9             \
	SHRL         $6, R9             \
	ANDL         $0x03030303, R9    \
	SHLL         $4, R9             \
	ORL          R9, R13            \
	ANDL         $0x3f3f3f3f, AX    \
	VMOVD        AX, X0             \
	VPINSRD      $1, R13, X0, X0    \
	VPINSRD      $2, R12, X0, X0    \
	VPINSRD      $3, R11, X0, X0    \
	VPMOVZXBW    X0, Y0             \
	VPERMQ       $0x44, Y0, Y1      \
	VEXTRACTI128 $1, Y0, X2

// KMINS: X2 = the four int32 mins[2j]*S[2j] + mins[2j+1]*S[2j+1], S the
// 32-value sums of the activation block (bsums at BX, paired).
#define KMINS \
	VMOVDQU      (BX), Y3           \
	VEXTRACTI128 $1, Y3, X4         \
	VPHADDW      X4, X3, X3         \
	VPMADDWD     X3, X2, X2

// KPAIR4: the 64 values of chunk J of a q4_K block (quants at QS, one byte
// holding value l and l+32) against q8 at OFF(DI): OUT = 8 int32 lanes of
// scale[2J]*(low products) + scale[2J+1]*(high products), 4 per lane.
#define KPAIR4(QS, OFF, J, OUT) \
	VMOVDQU    QS(SI), Y4                  \
	VPAND      Y15, Y4, Y5                 \
	VPSRLW     $4, Y4, Y4                  \
	VPAND      Y15, Y4, Y4                 \
	VPMADDUBSW OFF(DI), Y5, Y5             \
	VPMADDUBSW OFF+32(DI), Y4, Y4          \
	VPSHUFB    kq4shuf<>+(64*(J))(SB), Y1, Y6    \
	VPSHUFB    kq4shuf<>+(64*(J)+32)(SB), Y1, Y7 \
	VPMADDWD   Y6, Y5, Y5                  \
	VPMADDWD   Y7, Y4, Y4                  \
	VPADDD     Y4, Y5, OUT

// FP16 loads the f16 at ADDR as float32 into XD (via AX).
#define FP16(ADDR, XD) \
	MOVWLZX   ADDR, AX \
	VMOVD     AX, XD   \
	VCVTPH2PS XD, XD

// KHSUM reduces YF (X-form XF) into X0 as ggml's hsum_float_8 (X1
// clobbered); HSUM8 is KHSUM of Y14.
#define KHSUM(YF, XF) \
	VEXTRACTF128 $1, YF, X0 \
	VADDPS       XF, X0, X0 \
	VMOVHLPS     X0, X0, X1 \
	VADDPS       X1, X0, X0 \
	VMOVSHDUP    X0, X1     \
	VADDSS       X1, X0, X0

#define HSUM8 KHSUM(Y14, X14)

// kq6eo: VPSHUFB mask putting a q6_K block's even scales in bytes 0-7 and
// its odd ones in bytes 8-15.
DATA kq6eo<>+0(SB)/8, $0x0e0c0a0806040200
DATA kq6eo<>+8(SB)/8, $0x0f0d0b0907050301
GLOBL kq6eo<>(SB), RODATA|NOPTR, $16

