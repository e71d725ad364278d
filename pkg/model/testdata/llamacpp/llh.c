// llh: run llama.cpp (the libllama/ggml build shipped with node-llama-cpp)
// like ../shared/tools/llamacpp-ref/golden.mjs does — 512-token context,
// one thread, flash attention "auto", f16 KV cache, the prompt in one batch,
// then one token at a time, greedy — and optionally dump every
// intermediate tensor, for pkg/model's TestLlamaCppTrace. See README.md.
//
// usage: llh MODEL N [DUMPDIR] < prompts
// Each stdin line is a prompt as space-separated token ids (BOS included).
// Prints one JSON line per prompt ({"prompt_tokens", "generated_tokens"}).
// With DUMPDIR, step s of prompt r writes DUMPDIR/r<r>_s<s>.logits (the
// f32 logits) and, for s >= $LLH_DUMP_FROM (default 0), r<r>_s<s>.bin: for
// every f32/f16 contiguous tensor the graph computes, a record of name
// (64 bytes), type (int32), ne[4] (int64) and the values as f32.
// $LLH_BINS is the directory of the ggml CPU backends to load.
#include "llama.h"
#include "ggml.h"
#include "ggml-backend.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static FILE *dumpf = NULL;

static bool cb(struct ggml_tensor *t, bool ask, void *ud) {
    (void)ud;
    if (ask) return dumpf != NULL;
    if (!dumpf) return true;
    if (t->type != GGML_TYPE_F32 && t->type != GGML_TYPE_F16) return true;
    if (!ggml_is_contiguous(t)) return true;
    int64_t n = ggml_nelements(t);
    char name[64] = {0};
    snprintf(name, sizeof name, "%s", t->name);
    fwrite(name, 1, 64, dumpf);
    int32_t ty = t->type;
    fwrite(&ty, 4, 1, dumpf);
    int64_t ne[4] = {t->ne[0], t->ne[1], t->ne[2], t->ne[3]};
    fwrite(ne, 8, 4, dumpf);
    size_t nb = ggml_nbytes(t);
    void *buf = malloc(nb);
    float *f = malloc(n * 4);
    ggml_backend_tensor_get(t, buf, 0, nb);
    if (t->type == GGML_TYPE_F16) {
        for (int64_t i = 0; i < n; i++) f[i] = ggml_fp16_to_fp32(((ggml_fp16_t *)buf)[i]);
    } else {
        memcpy(f, buf, n * 4);
    }
    fwrite(f, 4, n, dumpf);
    free(f);
    free(buf);
    return true;
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: llh MODEL N [DUMPDIR] < prompts\n");
        return 1;
    }
    const char *model_path = argv[1];
    int N = atoi(argv[2]);
    const char *dumpdir = argc > 3 ? argv[3] : NULL;
    int dump_from = getenv("LLH_DUMP_FROM") ? atoi(getenv("LLH_DUMP_FROM")) : 0;
    ggml_backend_load_all_from_path(getenv("LLH_BINS"));
    llama_backend_init();
    struct llama_model_params mp = llama_model_default_params();
    mp.n_gpu_layers = 0;
    struct llama_model *model = llama_model_load_from_file(model_path, mp);
    if (!model) {
        fprintf(stderr, "llh: cannot load %s\n", model_path);
        return 1;
    }
    int nv = llama_vocab_n_tokens(llama_model_get_vocab(model));
    static char line[1 << 16];
    int run = 0;
    while (fgets(line, sizeof line, stdin)) {
        llama_token toks[512];
        int nt = 0;
        char *p = line, *e;
        for (;;) {
            long v = strtol(p, &e, 10);
            if (e == p || nt == 512) break;
            toks[nt++] = (llama_token)v;
            p = e;
        }
        if (nt == 0) continue;
        struct llama_context_params cp = llama_context_default_params();
        cp.n_ctx = 512;
        cp.n_batch = 512;
        cp.n_ubatch = 512;
        cp.n_threads = 1;
        cp.n_threads_batch = 1;
        cp.flash_attn_type = LLAMA_FLASH_ATTN_TYPE_AUTO;
        cp.cb_eval = cb;
        struct llama_context *ctx = llama_init_from_model(model, cp);
        struct llama_batch b = llama_batch_init(512, 0, 1);
        printf("{\"prompt_tokens\":[");
        for (int i = 0; i < nt; i++) printf(i ? ",%d" : "%d", toks[i]);
        printf("],\"generated_tokens\":[");
        llama_token cur[512];
        int ncur = nt, pos = 0;
        memcpy(cur, toks, nt * sizeof(llama_token));
        for (int step = 0; step < N && pos + ncur <= 512; step++) {
            b.n_tokens = ncur;
            for (int i = 0; i < ncur; i++) {
                b.token[i] = cur[i];
                b.pos[i] = pos + i;
                b.n_seq_id[i] = 1;
                b.seq_id[i][0] = 0;
                b.logits[i] = i == ncur - 1;
            }
            char fn[4096];
            if (dumpdir && step >= dump_from) {
                snprintf(fn, sizeof fn, "%s/r%d_s%d.bin", dumpdir, run, step);
                dumpf = fopen(fn, "wb");
            }
            if (llama_decode(ctx, b)) {
                fprintf(stderr, "llh: decode failed\n");
                return 1;
            }
            if (dumpf) {
                fclose(dumpf);
                dumpf = NULL;
            }
            float *lg = llama_get_logits_ith(ctx, -1);
            if (dumpdir) {
                snprintf(fn, sizeof fn, "%s/r%d_s%d.logits", dumpdir, run, step);
                FILE *f = fopen(fn, "wb");
                fwrite(lg, 4, nv, f);
                fclose(f);
            }
            int best = 0;
            for (int i = 1; i < nv; i++)
                if (lg[i] > lg[best]) best = i;
            printf(step ? ",%d" : "%d", best);
            pos += ncur;
            cur[0] = best;
            ncur = 1;
        }
        printf("]}\n");
        fflush(stdout);
        llama_batch_free(b);
        llama_free(ctx);
        run++;
    }
    llama_model_free(model);
    return 0;
}
