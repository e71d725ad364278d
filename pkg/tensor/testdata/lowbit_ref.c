// lowbit_ref writes lowbit_ref.bin: for each of q4_1, q5_0, q5_1, q2_K,
// q3_K, iq4_nl, iq4_xs and mxfp4, weights quantized by ggml's own quantizer,
// activations, their quantization to the type's vec_dot_type and the
// products llama.cpp's CPU backend computes (the zen4 build node-llama-cpp
// ships): ggml_vec_dot_*, the repacked gemv/gemm where llama.cpp repacks the
// type (q2_K, iq4_nl, mxfp4), and a whole ggml_mul_mat of 8 tokens through
// ggml_graph_compute (the batched paths: llamafile's tinyBLAS, the IQ panel
// gemm). It contains no ggml code; the repacked layouts (block_q2_Kx8,
// block_iq4_nlx8, block_mxfp4x8) are written out from their definitions. See README.md.
#include <dlfcn.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { Q8_0 = 8, Q8_1 = 9, Q2_K = 10, Q8_K = 15, IQ4_NL = 20, IQ4_XS = 23, MXFP4 = 39 };

typedef void (*from_float_t)(const float *, void *, int64_t);
typedef void (*vec_dot_t)(int, float *, size_t, const void *, size_t, const void *, size_t, int);
struct traits_cpu { from_float_t from_float; vec_dot_t vec_dot; int vec_dot_type; int64_t nrows; };
typedef void (*gemx_t)(int, float *, size_t, const void *, const void *, int, int);
typedef void (*qmat_t)(const float *, void *, int64_t, int64_t);
typedef size_t (*qchunk_t)(int, const float *, void *, int64_t, int64_t, int64_t, const float *);
struct init_params { size_t mem_size; void *mem_buffer; bool no_alloc; };

static FILE *out;
static void put(const void *p, size_t n) { fwrite(p, 1, n, out); }
static void put32(uint32_t v) { put(&v, 4); }

static uint64_t rng = 0x9E3779B97F4A7C15ull;
static float frand(void) { // uniform in [-1, 1)
	rng ^= rng << 13; rng ^= rng >> 7; rng ^= rng << 17;
	return (float)((rng >> 40) / (double)(1ull << 24)) * 2 - 1;
}

static void *sym(void *lib, const char *name) {
	void *p = dlsym(lib, name);
	if (!p) { fprintf(stderr, "missing %s\n", name); exit(1); }
	return p;
}

static size_t row_bytes(int vdt, int c) {
	switch (vdt) {
	case Q8_0: return c / 32 * 34;
	case Q8_1: return c / 32 * 36;
	}
	return c / 256 * 292; // q8_K
}

int main(int argc, char **argv) {
	if (argc != 3) { fprintf(stderr, "usage: lowbit_ref LIBDIR OUT\n"); return 2; }
	char path[4096];
	snprintf(path, sizeof path, "%s/libggml-base.so", argv[1]);
	void *base = dlopen(path, RTLD_NOW | RTLD_GLOBAL);
	snprintf(path, sizeof path, "%s/libggml-cpu-zen4.so", argv[1]);
	void *cpu = base ? dlopen(path, RTLD_NOW | RTLD_GLOBAL) : NULL;
	if (!cpu) { fprintf(stderr, "%s\n", dlerror()); return 1; }
	((void (*)(void))sym(cpu, "ggml_cpu_init"))();
	const struct traits_cpu *(*tcpu)(int) = sym(cpu, "ggml_get_type_traits_cpu");
	qchunk_t qchunk = sym(base, "ggml_quantize_chunk");
	void *(*ginit)(struct init_params) = sym(base, "ggml_init");
	void (*gfree)(void *) = sym(base, "ggml_free");
	void *(*newt2)(void *, int, int64_t, int64_t) = sym(base, "ggml_new_tensor_2d");
	void *(*mulmat)(void *, void *, void *) = sym(base, "ggml_mul_mat");
	void *(*getdata)(void *) = sym(base, "ggml_get_data");
	void *(*newgraph)(void *) = sym(base, "ggml_new_graph");
	void (*expand)(void *, void *) = sym(base, "ggml_build_forward_expand");
	int (*compute)(void *, void *, int) = sym(cpu, "ggml_graph_compute_with_ctx");
	out = fopen(argv[2], "wb");
	if (!out) { perror(argv[2]); return 1; }

	// R rows x C columns of each type against T tokens (the first T of the
	// G graph tokens). 32-value types get an odd number of blocks (25), so
	// kernels that take blocks in pairs run their tail.
	enum { R = 16, T = 4, G = 8, CMAX = 800 };
	struct { int type, cols; } types[] = {{3, 800}, {6, 800}, {7, 800}, {Q2_K, 768}, {11, 768}, {IQ4_NL, 800}, {IQ4_XS, 768}, {MXFP4, 800}};
	static float w[R * CMAX], x[G * CMAX], y[G * R];
	static uint8_t wq[R * CMAX], xq[G * CMAX * 2], wr[R * CMAX], x4[G * CMAX * 2];
	for (unsigned k = 0; k < sizeof types / sizeof types[0]; k++) {
		int typ = types[k].type, C = types[k].cols;
		int vdt = tcpu(typ)->vec_dot_type;
		// Weights uniform with rare outliers; activations uniform with a few
		// large values per token (as in real hidden states).
		for (int i = 0; i < R * C; i++) w[i] = frand() * (1 + (i % 97 == 0) * 4) + 0.2f * (i % 64 < 16);
		for (int i = 0; i < G * C; i++) x[i] = frand() * (1 + (i % 61 == 0) * 20);
		size_t rb = qchunk(typ, w, wq, 0, R, C, NULL) / R, xb = row_bytes(vdt, C);
		put32(typ);
		put32(C);
		put32(vdt);
		// x is not stored: the reader regenerates it with the same frand.
		for (int t = 0; t < T; t++) tcpu(vdt)->from_float(x + t * C, xq + t * xb, C);
		put(xq, T * xb);
		put(wq, R * rb);
		for (int t = 0; t < T; t++)
			for (int r = 0; r < R; r++)
				tcpu(typ)->vec_dot(C, &y[t * R + r], 0, wq + r * rb, 0, xq + t * xb, 0, 1);
		put(y, sizeof(float) * T * R);

		// The repacked kernels llama.cpp uses for matrices of a multiple of
		// 8 rows: gemv one token at a time, gemm on the four tokens.
		if (typ == Q2_K || typ == IQ4_NL || typ == MXFP4) {
			int nb = typ == Q2_K ? C / 256 : C / 32;
			size_t gb = typ == Q2_K ? 672 : typ == IQ4_NL ? 144 : 136;
			for (int g = 0; g < R / 8; g++)
				for (int b = 0; b < nb; b++) {
					uint8_t *o = wr + (g * nb + b) * gb;
					const uint8_t *in[8];
					for (int i = 0; i < 8; i++) in[i] = wq + (g * 8 + i) * rb + b * (rb / nb);
					if (typ == Q2_K) { // block_q2_K: scales[16], qs[64], d, dmin
						for (int i = 0; i < 8; i++) memcpy(o + 2 * i, in[i] + 80, 2), memcpy(o + 16 + 2 * i, in[i] + 82, 2);
						for (int i = 0; i < 128; i++) o[32 + i] = in[(i % 16) / 2][(i / 16) * 2 + i % 2];
						for (int i = 0; i < 64; i++) memcpy(o + 160 + 8 * i, in[i % 8] + 16 + (i / 8) * 8, 8);
					} else if (typ == IQ4_NL) { // block_iq4_nl: d, qs[16]
						for (int i = 0; i < 8; i++) memcpy(o + 2 * i, in[i], 2);
						for (int i = 0; i < 16; i++) memcpy(o + 16 + 8 * i, in[i % 8] + 2 + (i / 8) * 8, 8);
					} else { // block_mxfp4: e, qs[16] -> block_mxfp4x8: e[8], qs[128]
						for (int i = 0; i < 8; i++) o[i] = in[i][0];
						for (int i = 0; i < 16; i++) memcpy(o + 8 + 8 * i, in[i % 8] + 1 + (i / 8) * 8, 8);
					}
				}
			const char *gv = typ == Q2_K ? "ggml_gemv_q2_K_8x8_q8_K" : typ == IQ4_NL ? "ggml_gemv_iq4_nl_8x8_q8_0" : "ggml_gemv_mxfp4_8x8_q8_0";
			const char *gm = typ == Q2_K ? "ggml_gemm_q2_K_8x8_q8_K" : typ == IQ4_NL ? "ggml_gemm_iq4_nl_8x8_q8_0" : "ggml_gemm_mxfp4_8x8_q8_0";
			const char *qm = typ == Q2_K ? "_Z19ggml_quantize_mat_tILl8EL9ggml_type15EEvPKfPvll"
			                             : "_Z19ggml_quantize_mat_tILl8EL9ggml_type8EEvPKfPvll";
			for (int t = 0; t < T; t++) ((gemx_t)sym(cpu, gv))(C, y + t * R, R, wr, xq + t * xb, 1, R);
			put(y, sizeof(float) * T * R);
			((qmat_t)sym(cpu, qm))(x, x4, 4, C);
			((gemx_t)sym(cpu, gm))(C, y, R, wr, x4, 4, R);
			put(y, sizeof(float) * T * R);
		}

		// One ggml_mul_mat of G tokens, as a llama.cpp batch computes it
		// (weights in plain memory: no repacking; mxfp4 has no tinyBLAS
		// kernel, so vec_dot).
		struct init_params ip = {64 << 20, NULL, false};
		void *ctx = ginit(ip);
		void *a = newt2(ctx, typ, C, R), *bt = newt2(ctx, 0, C, G);
		memcpy(getdata(a), wq, R * rb);
		memcpy(getdata(bt), x, sizeof(float) * G * C);
		void *prod = mulmat(ctx, a, bt);
		void *gf = newgraph(ctx);
		expand(gf, prod);
		if (compute(ctx, gf, 1) != 0) { fprintf(stderr, "graph compute failed\n"); return 1; }
		put(getdata(prod), sizeof(float) * G * R);
		gfree(ctx);
	}
	fclose(out);
	return 0;
}
