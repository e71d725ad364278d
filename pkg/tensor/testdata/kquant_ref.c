// kquant_ref writes kquant_ref.bin: weights quantized by ggml's own
// quantizers, activations, their q8_K quantization and the dot products
// llama.cpp's CPU backend computes (the zen4 build node-llama-cpp ships), so
// pkg/tensor can check its K-quant kernels bit for bit without llama.cpp at
// test time. See README.md in this folder for how to build and run it.
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { Q4_0 = 2, Q4_1 = 3, Q5_0 = 6, Q5_1 = 7, Q2_K = 10, Q3_K = 11, Q4_K = 12, Q5_K = 13, Q6_K = 14,
       Q8_K = 15, IQ4_NL = 20, IQ4_XS = 23, MXFP4 = 39 };

typedef void (*from_float_t)(const float *, void *, int64_t);
typedef void (*vec_dot_t)(int, float *, size_t, const void *, size_t, const void *, size_t, int);
typedef void (*to_float_t)(const void *, float *, int64_t);
struct traits_cpu { from_float_t from_float; vec_dot_t vec_dot; int vec_dot_type; int64_t nrows; };
struct traits { const char *name; int64_t blck; int64_t inter; size_t size; _Bool q; to_float_t to_float; from_float_t ref; };
typedef void (*gemx_t)(int, float *, size_t, const void *, const void *, int, int);
typedef void (*qmat_t)(const float *, void *, int64_t, int64_t);
typedef size_t (*qchunk_t)(int, const float *, void *, int64_t, int64_t, int64_t, const float *);

static FILE *out;
static void put(const void *p, size_t n) { fwrite(p, 1, n, out); }
static void put32(uint32_t v) { put(&v, 4); }

static uint64_t rng = 88172645463325252ull;
static float frand(void) { // uniform in [-1, 1)
	rng ^= rng << 13; rng ^= rng >> 7; rng ^= rng << 17;
	return (float)((rng >> 40) / (double)(1ull << 24)) * 2 - 1;
}

static void *sym(void *lib, const char *name) {
	void *p = dlsym(lib, name);
	if (!p) { fprintf(stderr, "missing %s\n", name); exit(1); }
	return p;
}

int main(int argc, char **argv) {
	if (argc != 3) { fprintf(stderr, "usage: kquant_ref LIBDIR OUT\n"); return 2; }
	char path[4096];
	snprintf(path, sizeof path, "%s/libggml-base.so", argv[1]);
	void *base = dlopen(path, RTLD_NOW | RTLD_GLOBAL);
	snprintf(path, sizeof path, "%s/libggml-cpu-zen4.so", argv[1]);
	void *cpu = base ? dlopen(path, RTLD_NOW | RTLD_GLOBAL) : NULL;
	if (!cpu) { fprintf(stderr, "%s\n", dlerror()); return 1; }
	((void (*)(void))sym(cpu, "ggml_cpu_init"))();
	const struct traits_cpu *(*tcpu)(int) = sym(cpu, "ggml_get_type_traits_cpu");
	const struct traits *(*tbase)(int) = sym(base, "ggml_get_type_traits");
	qchunk_t qchunk = sym(base, "ggml_quantize_chunk");
	gemx_t gemv = sym(cpu, "ggml_gemv_q4_K_8x8_q8_K"), gemm = sym(cpu, "ggml_gemm_q4_K_8x8_q8_K");
	qmat_t qmat = sym(cpu, "_Z19ggml_quantize_mat_tILl8EL9ggml_type15EEvPKfPvll");
	out = fopen(argv[2], "wb");
	if (!out) { perror(argv[2]); return 1; }

	// Section 1, dot products: R rows x C columns of each K-quant type against
	// T tokens. Activations are uniform with a few large outliers per token
	// (as in real hidden states), so q8_K scales vary between blocks.
	enum { R = 16, C = 768, T = 4 };
	static float w[R * C], x[T * C], y[T * R];
	static uint8_t wq[R * C], xq[T * C * 2], wr[R * C];
	for (int i = 0; i < R * C; i++) w[i] = frand() * (1 + (i % 97 == 0) * 4);
	for (int i = 0; i < T * C; i++) x[i] = frand() * (1 + (i % 61 == 0) * 20);
	int kt[3] = {Q4_K, Q5_K, Q6_K};
	put(x, sizeof x);
	size_t q8row = C / 256 * (4 + 256 + 32);
	for (int t = 0; t < T; t++) tcpu(Q8_K)->from_float(x + t * C, xq + t * q8row, C);
	put(xq, T * q8row);
	for (int k = 0; k < 3; k++) {
		size_t rb = qchunk(kt[k], w, wq, 0, R, C, NULL) / R;
		put32(kt[k]);
		put(wq, R * rb);
		for (int t = 0; t < T; t++)
			for (int r = 0; r < R; r++)
				tcpu(kt[k])->vec_dot(C, &y[t * R + r], 0, wq + r * rb, 0, xq + t * q8row, 0, 1);
		put(y, sizeof y);
	}
	// q4_K repacked as llama.cpp does for rows % 8 == 0 (block_q4_Kx8:
	// d[8], dmin[8], scales[96], qs[1024] per super-block of eight rows),
	// through the gemv (one token) and the gemm (four tokens).
	{
		size_t rb = qchunk(Q4_K, w, wq, 0, R, C, NULL) / R;
		int nb = C / 256;
		for (int g = 0; g < R / 8; g++)
			for (int b = 0; b < nb; b++) {
				uint8_t *o = wr + (g * nb + b) * 1152;
				const uint8_t *in[8];
				for (int i = 0; i < 8; i++) in[i] = wq + (g * 8 + i) * rb + b * 144;
				for (int i = 0; i < 8; i++) memcpy(o + 2 * i, in[i], 2), memcpy(o + 16 + 2 * i, in[i] + 2, 2);
				for (int i = 0; i < 128; i++) memcpy(o + 128 + 8 * i, in[i % 8] + 16 + (i / 8) * 8, 8);
				for (int half = 0; half < 2; half++)
					for (int i = 0; i < 4; i++) {
						uint8_t s[8], m[8], *d = o + 32 + 48 * half + 12 * i;
						for (int j = 0; j < 8; j++) {
							const uint8_t *sc = in[j] + 4;
							if (!half) s[j] = sc[i] & 63, m[j] = sc[i + 4] & 63;
							else s[j] = ((sc[i] & 192) >> 2) | (sc[i + 8] & 15), m[j] = ((sc[i + 4] & 192) >> 2) | ((sc[i + 8] & 240) >> 4);
						}
						for (int j = 0; j < 4; j++) {
							d[j] = (s[j] & 63) + ((s[j + 4] & 48) << 2);
							d[j + 4] = (m[j] & 63) + ((m[j + 4] & 48) << 2);
							d[j + 8] = (s[j + 4] & 15) + ((m[j + 4] & 15) << 4);
						}
					}
			}
		for (int t = 0; t < T; t++) gemv(C, y + t * R, R, wr, xq + t * q8row, 1, R);
		put(y, sizeof y);
		static uint8_t x4[4 * C * 2];
		qmat(x, x4, 4, C);
		gemm(C, y, R, wr, x4, 4, R);
		put(y, sizeof y);
	}

	// Section 2, dequantization: ggml's quantizer and to_float for every
	// type pkg/tensor decodes.
	int dt[] = {Q4_K, Q5_K, Q6_K, Q2_K, Q3_K, IQ4_NL, IQ4_XS, Q4_1, Q5_0, Q5_1, MXFP4};
	enum { N = 1024 };
	static float src[N], deq[N];
	static uint8_t enc[N * 2];
	for (int i = 0; i < N; i++) src[i] = frand() * (1 + (i % 37 == 0) * 3) + 0.3f * (i % 256 < 64);
	put(src, sizeof src);
	for (unsigned k = 0; k < sizeof dt / sizeof dt[0]; k++) {
		size_t n = qchunk(dt[k], src, enc, 0, 1, N, NULL);
		tbase(dt[k])->to_float(enc, deq, N);
		put32(dt[k]);
		put32(n);
		put(enc, n);
		put(deq, sizeof deq);
	}
	fclose(out);
	return 0;
}
