// Constants and macros shared by the 16-row q4_K kernels (q4kx16x4_amd64.s,
// q4kx16x8_amd64.s): two consecutive packed groups (q4kx8.go's layout) per
// 512-bit register, group g in lanes 0-7 and g+1 in lanes 8-15, R14 bytes
// apart. Each file gets its own copy of the constant.

DATA q16m4<>+0(SB)/8, $0x0f0f0f0f0f0f0f0f
GLOBL q16m4<>(SB), RODATA|NOPTR, $8

// Q16ARGS loads the arguments (w *byte, gstride int, nb int, xq *int8,
// xd *float32, bs *int16, ...) and the strides between consecutive
// tokens' operands: R8 / R9 one and three tokens' xq (nb*256 bytes), R10 /
// R11 their xd (nb*4), R12 / R13 their bs (nb*32); Z15 the nibble mask.
#define Q16ARGS \
	MOVQ    w+0(FP), SI         \
	MOVQ    gstride+8(FP), R14  \
	MOVQ    nb+16(FP), CX       \
	MOVQ    xq+24(FP), DI       \
	MOVQ    xd+32(FP), DX       \
	MOVQ    bs+40(FP), BX       \
	MOVQ    CX, R8              \
	SHLQ    $8, R8              \
	LEAQ    (R8)(R8*2), R9      \
	MOVQ    CX, R10             \
	SHLQ    $2, R10             \
	LEAQ    (R10)(R10*2), R11   \
	MOVQ    CX, R12             \
	SHLQ    $5, R12             \
	LEAQ    (R12)(R12*2), R13   \
	VPBROADCASTQ q16m4<>(SB), Z15

// Q16NEXT moves to the next super-block and counts it down.
#define Q16NEXT \
	ADDQ $1184, SI \
	ADDQ $256, DI  \
	ADDQ $4, DX    \
	ADDQ $32, BX   \
	DECQ CX

// Q16BYTES16: the eight bytes at OFF of group g, then those of group g+1,
// as 16 dwords in Z.
#define Q16BYTES16(OFF, Z) \
	VMOVQ      (OFF)(SI), X14                 \
	VPINSRQ    $1, (OFF)(SI)(R14*1), X14, X14 \
	VPMOVZXBD  X14, Z

// Q16DUP: Q16BYTES16 with each byte twice as int16 (X4DUP).
#define Q16DUP(OFF, Z) \
	Q16BYTES16(OFF, Z)  \
	VPSLLD  $16, Z, Z10 \
	VPORD   Z10, Z, Z

// Q16SCALE: a token's low / high sub-block sums times the scales in Z24 /
// Z25, summed into ZL.
#define Q16SCALE(ZL, ZH) \
	VPMULLD Z24, ZL, ZL \
	VPMULLD Z25, ZH, ZH \
	VPADDD  ZH, ZL, ZL

// Q16DMIN: both groups' row d into Z24 and dmin into Z25.
#define Q16DMIN \
	VMOVDQU     (SI), X14                   \
	VINSERTI128 $1, (SI)(R14*1), Y14, Y14   \
	VCVTPH2PS   Y14, Z24                    \
	VMOVDQU     16(SI), X14                 \
	VINSERTI128 $1, 16(SI)(R14*1), Y14, Y14 \
	VCVTPH2PS   Y14, Z25

// Q16FUSE1: one token's isum ZI / imin ZM times d*dy / dmin*dy (Z24 / Z25:
// d, dmin) fused into acc at OFF(SP) / accMin at MINOFF+OFF(SP).
#define Q16FUSE1(DYADDR, ZI, ZM, OFF, MINOFF) \
	VBROADCASTSS DYADDR, Z10                \
	VMULPS       Z10, Z24, Z11              \
	VMULPS       Z10, Z25, Z10              \
	VCVTDQ2PS    ZI, ZI                     \
	VCVTDQ2PS    ZM, ZM                     \
	VFMADD213PS  (OFF)(SP), Z11, ZI         \
	VMOVUPS      ZI, (OFF)(SP)              \
	VFMADD213PS  (MINOFF+OFF)(SP), Z10, ZM  \
	VMOVUPS      ZM, (MINOFF+OFF)(SP)
