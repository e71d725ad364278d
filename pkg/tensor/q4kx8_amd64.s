// exactness: q4_K products over the packed eight-row layout (q4kx8.go)
// with llama.cpp's repacked-q4_K rounding: per row the exact integer sums,
// converted and fused as acc += isum*(d*dy), accMin += imin*(dmin*dy), once
// per super-block (gemv) or per 64-value chunk (gemm). Lane r is row r.

#include "textflag.h"

DATA q4kx8m4<>+0(SB)/8, $0x0f0f0f0f0f0f0f0f
DATA q4kx8m4<>+8(SB)/8, $0x0f0f0f0f0f0f0f0f
DATA q4kx8m4<>+16(SB)/8, $0x0f0f0f0f0f0f0f0f
DATA q4kx8m4<>+24(SB)/8, $0x0f0f0f0f0f0f0f0f
GLOBL q4kx8m4<>(SB), RODATA|NOPTR, $32

DATA q4kx8ones<>+0(SB)/8, $0x0001000100010001
DATA q4kx8ones<>+8(SB)/8, $0x0001000100010001
DATA q4kx8ones<>+16(SB)/8, $0x0001000100010001
DATA q4kx8ones<>+24(SB)/8, $0x0001000100010001
GLOBL q4kx8ones<>(SB), RODATA|NOPTR, $32

// One four-byte column C (0..31, = 8J+K) of chunk J: low nibbles against
// activation bytes 64J+4K.., high ones against 64J+32+4K.., int16 sums
// into Y4 / Y5 (each lane at most 16 products of 15*127: no overflow).
#define Q4KCOL(C, XOFF) \
	VMOVDQU      (160+32*(C))(SI), Y6 \
	VPSRLW       $4, Y6, Y7           \
	VPAND        Y15, Y6, Y6          \
	VPAND        Y15, Y7, Y7          \
	VPBROADCASTD (XOFF)(DI), Y8       \
	VPMADDUBSW   Y8, Y6, Y6           \
	VPADDW       Y6, Y4, Y4           \
	VPBROADCASTD (XOFF+32)(DI), Y9    \
	VPMADDUBSW   Y9, Y7, Y7           \
	VPADDW       Y7, Y5, Y5

// Chunk J: its two sub-blocks' dot products per row, times each row's
// scale, into Y2; the rows' mins times the activation's sub-block sums
// (at BX) into Y3.
#define Q4KCHUNK(J) \
	VPXOR     Y4, Y4, Y4                \
	VPXOR     Y5, Y5, Y5                \
	Q4KCOL(8*(J)+0, 64*(J)+0)           \
	Q4KCOL(8*(J)+1, 64*(J)+4)           \
	Q4KCOL(8*(J)+2, 64*(J)+8)           \
	Q4KCOL(8*(J)+3, 64*(J)+12)          \
	Q4KCOL(8*(J)+4, 64*(J)+16)          \
	Q4KCOL(8*(J)+5, 64*(J)+20)          \
	Q4KCOL(8*(J)+6, 64*(J)+24)          \
	Q4KCOL(8*(J)+7, 64*(J)+28)          \
	VPMADDWD  Y12, Y4, Y4               \
	VPMADDWD  Y12, Y5, Y5               \
	VPMOVZXBD (32+16*(J))(SI), Y6       \
	VPMOVZXBD (40+16*(J))(SI), Y7       \
	VPMULLD   Y6, Y4, Y4                \
	VPMULLD   Y7, Y5, Y5                \
	VPADDD    Y4, Y2, Y2                \
	VPADDD    Y5, Y2, Y2                \
	VPMOVZXBD (96+16*(J))(SI), Y6       \
	VPMOVZXBD (104+16*(J))(SI), Y7      \
	VPBROADCASTD (8*(J))(BX), Y8        \
	VPBROADCASTD (8*(J)+4)(BX), Y9      \
	VPMULLD   Y8, Y6, Y6                \
	VPMULLD   Y9, Y7, Y7                \
	VPADDD    Y6, Y3, Y3                \
	VPADDD    Y7, Y3, Y3

// Fuse the integer sums Y2 / Y3 into the accumulators Y0 / Y1 with the
// rows' d*dy / dmin*dy, and clear them.
#define Q4KFUSE \
	VBROADCASTSS (DX), Y13     \
	VCVTDQ2PS    Y2, Y10       \
	VCVTPH2PS    (SI), Y11     \
	VMULPS       Y13, Y11, Y11 \
	VFMADD231PS  Y11, Y10, Y0  \
	VCVTDQ2PS    Y3, Y10       \
	VCVTPH2PS    16(SI), Y11   \
	VMULPS       Y13, Y11, Y11 \
	VFMADD231PS  Y11, Y10, Y1  \
	VPXOR        Y2, Y2, Y2    \
	VPXOR        Y3, Y3, Y3

#define Q4KSETUP \
	MOVQ    w+0(FP), SI        \
	MOVQ    groups+48(FP), R10 \
	MOVQ    out+40(FP), R9     \
	VMOVDQU q4kx8m4<>(SB), Y15 \
	VMOVDQU q4kx8ones<>(SB), Y12

// Q4KGROUP starts a group: the activation row from its start, zero sums.
#define Q4KGROUP \
	MOVQ    nb+8(FP), CX       \
	MOVQ    xq+16(FP), DI      \
	MOVQ    xd+24(FP), DX      \
	MOVQ    xs+32(FP), BX      \
	VXORPS  Y0, Y0, Y0         \
	VXORPS  Y1, Y1, Y1         \
	VPXOR   Y2, Y2, Y2         \
	VPXOR   Y3, Y3, Y3

#define Q4KNEXT \
	ADDQ $1184, SI \
	ADDQ $256, DI  \
	ADDQ $4, DX    \
	ADDQ $32, BX   \
	DECQ CX

// Q4KEND stores the group's eight results and moves to the next group
// (SI is already there: groups are consecutive).
#define Q4KEND \
	VSUBPS  Y1, Y0, Y0 \
	VMOVUPS Y0, (R9)   \
	ADDQ    $32, R9    \
	DECQ    R10

// func q4Kx8GemvAVX2(w *byte, nb int, xq *int8, xd *float32, xs *int32, out *float32, groups int)
// groups consecutive packed groups against one token: out[8g+r] is row r
// of group g.
TEXT ·q4Kx8GemvAVX2(SB), NOSPLIT, $0-56
	Q4KSETUP

gemvgroup:
	Q4KGROUP

gemvloop:
	Q4KCHUNK(0)
	Q4KCHUNK(1)
	Q4KCHUNK(2)
	Q4KCHUNK(3)
	Q4KFUSE
	Q4KNEXT
	JNZ gemvloop
	Q4KEND
	JNZ gemvgroup
	VZEROUPPER
	RET

// func q4Kx8GemmAVX2(w *byte, nb int, xq *int8, xd *float32, xs *int32, out *float32, groups int)
TEXT ·q4Kx8GemmAVX2(SB), NOSPLIT, $0-56
	Q4KSETUP

gemmgroup:
	Q4KGROUP

gemmloop:
	Q4KCHUNK(0)
	Q4KFUSE
	Q4KCHUNK(1)
	Q4KFUSE
	Q4KCHUNK(2)
	Q4KFUSE
	Q4KCHUNK(3)
	Q4KFUSE
	Q4KNEXT
	JNZ gemmloop
	Q4KEND
	JNZ gemmgroup
	VZEROUPPER
	RET

// Q4KVCOL is Q4KCOL with AVX-512 VNNI: VPDPBUSD adds each row lane's four
// nibble-times-activation products straight into int32 (T0/T1 temps,
// A0/A1 the low / high nibbles' sums). The same exact integers as
// VPMADDUBSW + VPADDW + VPMADDWD (no int16 step there can saturate:
// 16 products of at most 15*128 per word), so the same bits.
#define Q4KVCOL(C, XOFF, T0, T1, A0, A1) \
	VMOVDQU       (160+32*(C))(SI), T0 \
	VPSRLW        $4, T0, T1           \
	VPAND         Y15, T0, T0          \
	VPAND         Y15, T1, T1          \
	VPDPBUSD.BCST (XOFF)(DI), T0, A0   \
	VPDPBUSD.BCST (XOFF+32)(DI), T1, A1

// Q4KVCHUNK is Q4KCHUNK with Q4KVCOL: even columns into Y4/Y5, odd ones
// into Y12/Y13 (free here: no VPMADDWD by ones; two chains each, summed exactly at the end).
#define Q4KVCHUNK(J) \
	VPXOR     Y4, Y4, Y4                              \
	VPXOR     Y5, Y5, Y5                              \
	VPXOR     Y12, Y12, Y12                           \
	VPXOR     Y13, Y13, Y13                           \
	Q4KVCOL(8*(J)+0, 64*(J)+0, Y6, Y7, Y4, Y5)        \
	Q4KVCOL(8*(J)+1, 64*(J)+4, Y10, Y11, Y12, Y13)    \
	Q4KVCOL(8*(J)+2, 64*(J)+8, Y6, Y7, Y4, Y5)        \
	Q4KVCOL(8*(J)+3, 64*(J)+12, Y10, Y11, Y12, Y13)   \
	Q4KVCOL(8*(J)+4, 64*(J)+16, Y6, Y7, Y4, Y5)       \
	Q4KVCOL(8*(J)+5, 64*(J)+20, Y10, Y11, Y12, Y13)   \
	Q4KVCOL(8*(J)+6, 64*(J)+24, Y6, Y7, Y4, Y5)       \
	Q4KVCOL(8*(J)+7, 64*(J)+28, Y10, Y11, Y12, Y13)   \
	VPADDD    Y12, Y4, Y4                             \
	VPADDD    Y13, Y5, Y5                             \
	VPMOVZXBD (32+16*(J))(SI), Y6                     \
	VPMOVZXBD (40+16*(J))(SI), Y7                     \
	VPMULLD   Y6, Y4, Y4                              \
	VPMULLD   Y7, Y5, Y5                              \
	VPADDD    Y4, Y2, Y2                              \
	VPADDD    Y5, Y2, Y2                              \
	VPMOVZXBD (96+16*(J))(SI), Y6                     \
	VPMOVZXBD (104+16*(J))(SI), Y7                    \
	VPBROADCASTD (8*(J))(BX), Y8                      \
	VPBROADCASTD (8*(J)+4)(BX), Y9                    \
	VPMULLD   Y8, Y6, Y6                              \
	VPMULLD   Y9, Y7, Y7                              \
	VPADDD    Y6, Y3, Y3                              \
	VPADDD    Y7, Y3, Y3

// Q4KPREFETCH(J): a quarter of the super-block-plus 6144 bytes on (five
// lines a chunk cover its 1184 bytes). The one-token kernel reads each
// weight once, so it runs at memory speed; the hardware prefetcher alone
// left a 1-thread decode step at 36-38 tok/s where 4096 bytes on gave 40-46
// (TinyLlama-shaped Q4_K_M, bench-engine, alternating runs; 2048 and 8192
// bytes on were slower then). With Q4KFARPREFETCH beside it, 6144 bytes on
// is faster than 4096 (the q4_K part of BenchmarkDecodeStreamQ4KM's stream,
// interleaved steps: 0.88-0.92 of the time; 3072 bytes on 0.97, every other
// line 1.02, PREFETCHNTA 0.94). Past the end of w it is harmless: a
// prefetch never faults.
#define Q4KPREFETCH(J) \
	PREFETCHT0 (6144+320*(J))(SI)     \
	PREFETCHT0 (6144+320*(J)+64)(SI)  \
	PREFETCHT0 (6144+320*(J)+128)(SI) \
	PREFETCHT0 (6144+320*(J)+192)(SI) \
	PREFETCHT0 (6144+320*(J)+256)(SI)

// Q4KFARPREFETCH: one line 16 KB on, once per super-block. Not a data
// prefetch (one line in eighteen) but a lead for the hardware prefetcher:
// the dense prefetch above keeps about a page and a half in flight, and the
// L2 streamer, which starts over in every 4 KB page, begins on the pages
// after it only when something touches them. Over a 1-thread decode step's
// weight stream (the TinyLlama-shaped Q4_K_M file's 155 matrices in arena
// order, kernels alone, 40 interleaved steps per variant) the q4_K part took
// 0.84-0.92 of the time with a lead 12 KB on (dense prefetch 4 KB on) than
// without; 8, 16 and 20 KB on read the same, two lines per super-block or
// every line 12 KB on were slower. A plain read loop (membw's) with such a
// lead reads 16% faster than without.
#define Q4KFARPREFETCH \
	PREFETCHT0 16384(SI)

// func q4Kx8GemvVNNI(w *byte, nb int, xq *int8, xd *float32, xs *int32, out *float32, groups int)
// q4Kx8GemvAVX2 with AVX-512 VNNI, and software prefetch.
TEXT ·q4Kx8GemvVNNI(SB), NOSPLIT, $0-56
	Q4KSETUP

gemvvgroup:
	Q4KGROUP

gemvvloop:
	Q4KVCHUNK(0)
	Q4KPREFETCH(0)
	Q4KFARPREFETCH
	Q4KVCHUNK(1)
	Q4KPREFETCH(1)
	Q4KVCHUNK(2)
	Q4KPREFETCH(2)
	Q4KVCHUNK(3)
	Q4KPREFETCH(3)
	Q4KFUSE
	Q4KNEXT
	JNZ gemvvloop
	Q4KEND
	JNZ gemvvgroup
	VZEROUPPER
	RET

// func q4Kx8GemmVNNI(w *byte, nb int, xq *int8, xd *float32, xs *int32, out *float32, groups int)
// q4Kx8GemmAVX2 with AVX-512 VNNI.
TEXT ·q4Kx8GemmVNNI(SB), NOSPLIT, $0-56
	Q4KSETUP

gemmvgroup:
	Q4KGROUP

gemmvloop:
	Q4KVCHUNK(0)
	Q4KFUSE
	Q4KVCHUNK(1)
	Q4KFUSE
	Q4KVCHUNK(2)
	Q4KFUSE
	Q4KVCHUNK(3)
	Q4KFUSE
	Q4KNEXT
	JNZ gemmvloop
	Q4KEND
	JNZ gemmvgroup
	VZEROUPPER
	RET
