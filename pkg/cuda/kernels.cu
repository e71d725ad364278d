// Kernels of the CUDA backend (pkg/cuda). The same source is compiled by
// NVRTC at start-up (for the device's own architecture) and by nvcc in CI
// (.ci/cuda-check.sh, sm_80 and sm_90), so it includes no header at all:
// half and bfloat16 are handled as raw 16-bit storage, converted with PTX
// cvt instructions and integer rounding. Matrix products are cuBLAS's; these
// kernels are the memory-bound glue around them.
//
// Conventions shared with forward_cuda.go:
//   - activations that feed a GEMM ("act", type O) are f32, f16 or bf16, the
//     weights' type; when "lo" is non-zero the buffer holds a second copy of
//     rows at element offset lo with the rounding remainder (v - round(v)),
//     so a GEMM over both copies recovers ~16 mantissa bits ("split" mode);
//   - GEMM outputs are f32; readers add the remainder rows at offset lo;
//   - every kernel's extern "C" name is looked up by the host.

typedef unsigned short u16;
typedef unsigned int u32;
typedef long long i64;

struct __align__(2) f16 { u16 x; };
struct __align__(2) bf16 { u16 x; };

#define NEG_INF __int_as_float(0xff800000)
#define FULL 0xffffffffu

__device__ __forceinline__ float h2f(u16 h) {
  float f;
  asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));
  return f;
}
__device__ __forceinline__ u16 f2h(float f) {
  u16 h;
  asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f));
  return h;
}
__device__ __forceinline__ float bf2f(u16 h) { return __uint_as_float(((u32)h) << 16); }
// Round to nearest even; NaN stays a quiet NaN (as tensor.F32ToBF16).
__device__ __forceinline__ u16 f2bf(float f) {
  u32 b = __float_as_uint(f);
  if ((b & 0x7fffffffu) > 0x7f800000u) return (u16)((b >> 16) | 0x40);
  return (u16)((b + 0x7fffu + ((b >> 16) & 1u)) >> 16);
}

__device__ __forceinline__ float ld(const float* p) { return *p; }
__device__ __forceinline__ float ld(const f16* p) { return h2f(p->x); }
__device__ __forceinline__ float ld(const bf16* p) { return bf2f(p->x); }
__device__ __forceinline__ void st(float* p, float v) { *p = v; }
__device__ __forceinline__ void st(f16* p, float v) { p->x = f2h(v); }
__device__ __forceinline__ void st(bf16* p, float v) { p->x = f2bf(v); }
__device__ __forceinline__ float rnd(const float*, float v) { return v; }
__device__ __forceinline__ float rnd(const f16*, float v) { return h2f(f2h(v)); }
__device__ __forceinline__ float rnd(const bf16*, float v) { return bf2f(f2bf(v)); }

// st_act stores an activation and, in split mode, its rounding remainder.
template <typename O>
__device__ __forceinline__ void st_act(O* p, i64 lo, float v) {
  st(p, v);
  if (lo) st(p + lo, v - rnd(p, v));
}
// gv reads a GEMM output, adding the remainder rows in split mode.
__device__ __forceinline__ float gv(const float* p, i64 lo) { return lo ? p[0] + p[lo] : p[0]; }

// Matches the CPU engine's expf: exp in double, rounded once.
__device__ __forceinline__ float expd(float x) { return (float)exp((double)x); }

// block_sum adds v over the block (blockDim.x a multiple of 32) in double.
__device__ double block_sum(double v, double* red) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(FULL, v, o);
  int w = threadIdx.x >> 5, l = threadIdx.x & 31, nw = blockDim.x >> 5;
  if (l == 0) red[w] = v;
  __syncthreads();
  if (w == 0) {
    v = l < nw ? red[l] : 0.0;
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(FULL, v, o);
    if (l == 0) red[32] = v;
  }
  __syncthreads();
  return red[32];
}

// ---- embedding ------------------------------------------------------------

// x[t] = E[tokens[t]] in f32. Grid: tokens; block: any.
template <typename W>
__device__ void embed_impl(float* x, const W* E, const int* tokens, int H) {
  const W* row = E + (i64)tokens[blockIdx.x] * H;
  float* out = x + (i64)blockIdx.x * H;
  for (int i = threadIdx.x; i < H; i += blockDim.x) out[i] = ld(row + i);
}
extern "C" __global__ void embed_f32(float* x, const float* E, const int* tok, int H) { embed_impl(x, E, tok, H); }
extern "C" __global__ void embed_f16(float* x, const f16* E, const int* tok, int H) { embed_impl(x, E, tok, H); }
extern "C" __global__ void embed_bf16(float* x, const bf16* E, const int* tok, int H) { embed_impl(x, E, tok, H); }

// ---- RoPE table -----------------------------------------------------------

// cos/sin of every rotation pair of every token, [n x half]. The angle is
// stepped by repeated f32 multiplication and cos/sin taken in double, exactly
// as the CPU engine (and ggml's rope cache) do. One thread per token.
extern "C" __global__ void rope_table(float* cosb, float* sinb, const int* pos, int n, int half,
                                      float ropeScale, float freqScale, const float* freqFactor) {
  int t = blockIdx.x * blockDim.x + threadIdx.x;
  if (t >= n) return;
  float theta = (float)pos[t];
  for (int i = 0; i < half; i++) {
    float a = theta;
    if (freqFactor) a = __fdiv_rn(a, freqFactor[i]);
    a = __fmul_rn(a, freqScale);
    cosb[(i64)t * half + i] = (float)cos((double)a);
    sinb[(i64)t * half + i] = (float)sin((double)a);
    theta = __fmul_rn(theta, ropeScale);
  }
}

// ---- residual add + RMSNorm -------------------------------------------------

// For output row j (input row r = rows ? rows[j] : j): x[r] += delta[r] (when
// delta), then out[j] = x[r] * rsqrt(mean(x[r]^2) + eps) * w. Grid: rows;
// block: a multiple of 32.
template <typename O>
__device__ void add_rmsnorm_impl(float* x, const float* delta, i64 dlo, const float* w, O* out, i64 olo,
                                 const int* rows, int H, float eps) {
  __shared__ double red[33];
  int j = blockIdx.x;
  i64 r = rows ? rows[j] : j;
  float* xr = x + r * H;
  double sum = 0;
  for (int i = threadIdx.x; i < H; i += blockDim.x) {
    float v = xr[i];
    if (delta) {
      v = __fadd_rn(v, gv(delta + r * H + i, dlo));
      xr[i] = v;
    }
    sum += (double)__fmul_rn(v, v);
  }
  sum = block_sum(sum, red);
  float mean = (float)(sum / (double)H);
  float scale = 1.0f / (float)sqrt((double)(mean + eps));
  O* o = out + (i64)j * H;
  for (int i = threadIdx.x; i < H; i += blockDim.x) st_act(o + i, olo, __fmul_rn(__fmul_rn(xr[i], scale), w[i]));
}
#define ADD_RMSNORM(NAME, O)                                                                              \
  extern "C" __global__ void NAME(float* x, const float* delta, i64 dlo, const float* w, O* out, i64 olo, \
                                  const int* rows, int H, float eps) {                                    \
    add_rmsnorm_impl(x, delta, dlo, w, out, olo, rows, H, eps);                                           \
  }
ADD_RMSNORM(add_rmsnorm_f32, float)
ADD_RMSNORM(add_rmsnorm_f16, f16)
ADD_RMSNORM(add_rmsnorm_bf16, bf16)

// ---- q/k/v post-processing ------------------------------------------------

// One token per block, one head per warp (q heads, then k heads, then v
// heads, as the fused QKV GEMM lays them out): add the bias (qwen2), apply
// the per-head q/k RMSNorm (qwen3), rotate q and k (RoPE; neox pairs
// (i, i+half), otherwise adjacent pairs (2i, 2i+1)), write q back in place
// (row t of qkv) and k, v into the KV pool at slot wslot[t]. Dynamic shared
// memory: one head (hd floats) per warp.
template <typename KVT>
__device__ void qkv_post_impl(float* qkv, i64 qlo, const float* bias, const float* qn, const float* kn,
                              const float* cosb, const float* sinb, const int* wslot, KVT* kc, KVT* vc,
                              i64 layerOff, int nH, int nKV, int hd, int neox, float eps) {
  extern __shared__ float hs[];
  int t = blockIdx.x, lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nw = blockDim.x >> 5;
  int qDim = nH * hd, kvDim = nKV * hd, stride = qDim + 2 * kvDim, half = hd / 2;
  float* row = qkv + (i64)t * stride;
  float* s = hs + warp * hd;
  const float* cs = cosb + (i64)t * half;
  const float* sn = sinb + (i64)t * half;
  for (int h = warp; h < nH + 2 * nKV; h += nw) {
    int kind = h < nH ? 0 : (h < nH + nKV ? 1 : 2);  // q, k, v
    float* src = row + h * hd;
    for (int d = lane; d < hd; d += 32) {
      float v = gv(src + d, qlo);
      if (bias) v = __fadd_rn(v, bias[h * hd + d]);
      s[d] = v;
    }
    __syncwarp();
    if (kind != 2 && qn) {
      double ss = 0;
      for (int d = lane; d < hd; d += 32) ss += (double)__fmul_rn(s[d], s[d]);
      for (int o = 16; o > 0; o >>= 1) ss += __shfl_xor_sync(FULL, ss, o);
      float mean = (float)(ss / (double)hd);
      float scale = 1.0f / (float)sqrt((double)(mean + eps));
      const float* nwt = kind == 0 ? qn : kn;
      for (int d = lane; d < hd; d += 32) s[d] = __fmul_rn(__fmul_rn(s[d], scale), nwt[d]);
      __syncwarp();
    }
    if (kind != 2) {
      for (int i = lane; i < half; i += 32) {
        int i0 = neox ? i : 2 * i, i1 = neox ? i + half : 2 * i + 1;
        float x0 = s[i0], x1 = s[i1], c = cs[i], sv = sn[i];
        s[i0] = __fsub_rn(__fmul_rn(x0, c), __fmul_rn(x1, sv));
        s[i1] = __fadd_rn(__fmul_rn(x0, sv), __fmul_rn(x1, c));
      }
      __syncwarp();
    }
    if (kind == 0) {
      for (int d = lane; d < hd; d += 32) src[d] = s[d];
    } else {
      int hk = kind == 1 ? h - nH : h - nH - nKV;
      KVT* dst = (kind == 1 ? kc : vc) + layerOff + (i64)wslot[t] * kvDim + hk * hd;
      for (int d = lane; d < hd; d += 32) st(dst + d, s[d]);
    }
    __syncwarp();
  }
}
#define QKV_POST(NAME, KVT)                                                                                \
  extern "C" __global__ void NAME(float* qkv, i64 qlo, const float* bias, const float* qn, const float* kn, \
                                  const float* cosb, const float* sinb, const int* wslot, KVT* kc, KVT* vc, \
                                  i64 layerOff, int nH, int nKV, int hd, int neox, float eps) {             \
    qkv_post_impl(qkv, qlo, bias, qn, kn, cosb, sinb, wslot, kc, vc, layerOff, nH, nKV, hd, neox, eps);     \
  }
QKV_POST(qkv_post_f32, float)
QKV_POST(qkv_post_f16, f16)
QKV_POST(qkv_post_bf16, bf16)

// ---- token-level paged attention ------------------------------------------

// Causal attention over the token-granular KV pool (LightLLM's
// TokenAttention). Grid: (tiles, KV heads). A tile is up to R consecutive
// new tokens of one sequence: tile = {first token, rows, offset of the
// sequence's slot list in slots[], context = last position + 1}. Each warp
// owns one query (row r = warp / G, head g*G + warp % G), so the K/V of a
// head are gathered once per tile for all G query heads sharing it (GQA) and
// all R rows. Keys are streamed in chunks of 32 slots (one per lane) with an
// online softmax; row r attends slots[0..pos[token]].
//
// Dynamic shared memory: K and V chunks of 32 rows of hd elements (padded by
// one 32-bit word so lanes reading different rows hit different banks), then
// one query (hd floats) per warp. hd <= 256, even.
template <typename KVT, typename O>
__device__ void attention_impl(O* out, i64 olo, const float* qkv, const KVT* kc, const KVT* vc, i64 layerOff,
                               const int* slots, const int* tiles, const int* pos, int nH, int nKV, int hd,
                               int R, float scale) {
  extern __shared__ u32 sm[];
  const int G = nH / nKV, lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int kvDim = nKV * hd, qkvStride = nH * hd + 2 * kvDim;
  const int wpr = hd * (int)sizeof(KVT) / 4, rs = wpr + 1;
  u32* ks = sm;
  u32* vs = ks + 32 * rs;
  float* qs = (float*)(vs + 32 * rs) + warp * hd;
  const int* tile = tiles + 4 * blockIdx.x;
  const int tok0 = tile[0], nrows = tile[1], slotOff = tile[2], ctx = tile[3];
  const int g = blockIdx.y;
  const int r = warp / G, qh = g * G + warp % G;
  const bool active = r < nrows;
  const int t = tok0 + r;
  const int mypos = active ? pos[t] : -1;
  if (active)
    for (int d = lane; d < hd; d += 32) qs[d] = qkv[(i64)t * qkvStride + qh * hd + d];
  const u32* kw = (const u32*)(kc + layerOff);
  const u32* vw = (const u32*)(vc + layerOff);
  const i64 rowWords = (i64)kvDim * sizeof(KVT) / 4, headWord = (i64)g * hd * sizeof(KVT) / 4;
  float m = NEG_INF, l = 0.0f, acc[8];
#pragma unroll
  for (int i = 0; i < 8; i++) acc[i] = 0.0f;
  for (int c0 = 0; c0 < ctx; c0 += 32) {
    const int n = min(32, ctx - c0);
    __syncthreads();  // the previous chunk is consumed (and qs written)
    for (int e = threadIdx.x; e < n * wpr; e += blockDim.x) {
      int j = e / wpr, wi = e - j * wpr;
      i64 src = (i64)slots[slotOff + c0 + j] * rowWords + headWord + wi;
      ks[j * rs + wi] = kw[src];
      vs[j * rs + wi] = vw[src];
    }
    __syncthreads();
    if (!active) continue;
    float s = NEG_INF;
    if (lane < n && c0 + lane <= mypos) {
      const KVT* krow = (const KVT*)(ks + lane * rs);
      float dot = 0.0f;
      for (int d = 0; d < hd; d++) dot += qs[d] * ld(krow + d);
      s = dot * scale;
    }
    float cmax = s;
    for (int o = 16; o > 0; o >>= 1) cmax = fmaxf(cmax, __shfl_xor_sync(FULL, cmax, o));
    if (cmax == NEG_INF) continue;  // every key of this chunk is in this row's future
    const float mnew = fmaxf(m, cmax);
    const float corr = expd(m - mnew);
    const float p = s == NEG_INF ? 0.0f : expd(s - mnew);
    float psum = p;
    for (int o = 16; o > 0; o >>= 1) psum += __shfl_xor_sync(FULL, psum, o);
    l = l * corr + psum;
#pragma unroll
    for (int i = 0; i < 8; i++) acc[i] *= corr;
    for (int jj = 0; jj < n; jj++) {
      const float pj = __shfl_sync(FULL, p, jj);
      if (pj == 0.0f) continue;  // masked: never let a stale V row (0 * NaN) in
      const KVT* vrow = (const KVT*)(vs + jj * rs);
#pragma unroll
      for (int i = 0; i < 8; i++) {
        const int d = lane + 32 * i;
        if (d < hd) acc[i] += pj * ld(vrow + d);
      }
    }
    m = mnew;
  }
  if (!active) return;
  const float inv = l > 0.0f ? 1.0f / l : 0.0f;
  O* o = out + (i64)t * nH * hd + qh * hd;
#pragma unroll
  for (int i = 0; i < 8; i++) {
    const int d = lane + 32 * i;
    if (d < hd) st_act(o + d, olo, acc[i] * inv);
  }
}
#define ATTENTION(NAME, KVT, O)                                                                            \
  extern "C" __global__ void NAME(O* out, i64 olo, const float* qkv, const KVT* kc, const KVT* vc,         \
                                  i64 layerOff, const int* slots, const int* tiles, const int* pos, int nH, \
                                  int nKV, int hd, int R, float scale) {                                   \
    attention_impl(out, olo, qkv, kc, vc, layerOff, slots, tiles, pos, nH, nKV, hd, R, scale);             \
  }
ATTENTION(attention_kvf32_f32, float, float)
ATTENTION(attention_kvf32_f16, float, f16)
ATTENTION(attention_kvf32_bf16, float, bf16)
ATTENTION(attention_kvf16_f32, f16, float)
ATTENTION(attention_kvf16_f16, f16, f16)
ATTENTION(attention_kvf16_bf16, f16, bf16)
ATTENTION(attention_kvbf16_f32, bf16, float)
ATTENTION(attention_kvbf16_f16, bf16, f16)
ATTENTION(attention_kvbf16_bf16, bf16, bf16)

// ---- SwiGLU -----------------------------------------------------------------

// out[t][i] = silu(gate) * up, where row t of gu is [gate (ffn) | up (ffn)]
// (the fused gate/up GEMM). Grid-stride over n*ffn elements.
template <typename O>
__device__ void swiglu_impl(O* out, i64 olo, const float* gu, i64 glo, int ffn, i64 total) {
  for (i64 idx = (i64)blockIdx.x * blockDim.x + threadIdx.x; idx < total; idx += (i64)gridDim.x * blockDim.x) {
    i64 t = idx / ffn;
    int i = (int)(idx - t * ffn);
    const float* row = gu + t * 2 * ffn;
    float g = gv(row + i, glo), u = gv(row + ffn + i, glo);
    float sg = __fdiv_rn(g, __fadd_rn(1.0f, expd(-g)));
    st_act(out + idx, olo, __fmul_rn(sg, u));
  }
}
extern "C" __global__ void swiglu_f32(float* out, i64 olo, const float* gu, i64 glo, int ffn, i64 total) {
  swiglu_impl(out, olo, gu, glo, ffn, total);
}
extern "C" __global__ void swiglu_f16(f16* out, i64 olo, const float* gu, i64 glo, int ffn, i64 total) {
  swiglu_impl(out, olo, gu, glo, ffn, total);
}
extern "C" __global__ void swiglu_bf16(bf16* out, i64 olo, const float* gu, i64 glo, int ffn, i64 total) {
  swiglu_impl(out, olo, gu, glo, ffn, total);
}

// ---- sampling helpers -------------------------------------------------------

// a[i] += a[i+lo] for i < n: folds split-mode logits into plain rows.
extern "C" __global__ void fold_rows(float* a, i64 lo, i64 n) {
  for (i64 i = (i64)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (i64)gridDim.x * blockDim.x)
    a[i] = __fadd_rn(a[i], a[i + lo]);
}

// ids[row] = first index of the largest logit, NaN ignored, 0 when no logit
// is above -inf (the CPU sampler's argmax). Grid: rows; block: 32..1024, a
// multiple of 32.
extern "C" __global__ void argmax_rows(int* ids, const float* logits, int V) {
  __shared__ float bv[32];
  __shared__ int bi[32];
  const float* x = logits + (i64)blockIdx.x * V;
  float best = NEG_INF;
  int idx = 0x7fffffff;
  for (int i = threadIdx.x; i < V; i += blockDim.x) {
    float v = x[i];
    if (v > best) best = v, idx = i;  // NaN compares false; -inf never wins
  }
  for (int o = 16; o > 0; o >>= 1) {
    float ov = __shfl_xor_sync(FULL, best, o);
    int oi = __shfl_xor_sync(FULL, idx, o);
    if (ov > best || (ov == best && oi < idx)) best = ov, idx = oi;
  }
  int w = threadIdx.x >> 5, lane = threadIdx.x & 31, nw = blockDim.x >> 5;
  if (lane == 0) bv[w] = best, bi[w] = idx;
  __syncthreads();
  if (w == 0) {
    best = lane < nw ? bv[lane] : NEG_INF;
    idx = lane < nw ? bi[lane] : 0x7fffffff;
    for (int o = 16; o > 0; o >>= 1) {
      float ov = __shfl_xor_sync(FULL, best, o);
      int oi = __shfl_xor_sync(FULL, idx, o);
      if (ov > best || (ov == best && oi < idx)) best = ov, idx = oi;
    }
    if (lane == 0) ids[blockIdx.x] = idx == 0x7fffffff ? 0 : idx;
  }
}
