// ../shared/tools/llamacpp-ref/bench.mjs (same arguments, same method, same JSON) with llama.cpp's weights
// read into memory instead of mapped from the file (llama.cpp's --no-mmap) unless LLAMACPP_MMAP=1.
// Why: on the dev VMs the page cache of a multi-GB file is dropped within minutes (drop_pagecache in
// /proc/vmstat grows, fincore shows the file mostly evicted), so a mapped model that llama.cpp does not
// repack (q5_K, q6_K files) is re-read from disk on every token: 1.5-1.8 tok/s instead of ~17 at 1B.
// Our engine copies weights into anonymous memory too, so this compares the engines, not the page cache.
// Run from a llama.cpp reference install (node resolves node-llama-cpp from the script's folder):
//   DIR=$(../shared/tools/llamacpp-ref/setup.sh); cp scripts/llamacpp/bench.mjs $DIR/bench-nommap.mjs
//   node $DIR/bench-nommap.mjs MODEL.gguf [threads=1] [prompt_tokens=512] [gen_tokens=64] [sequences=1,4,16]
import {getLlama} from "node-llama-cpp";
const [modelPath, thr = "1", ptok = "512", gtok = "64", seqs = "1,4,16"] = process.argv.slice(2);
const threads = +thr, P = +ptok, G = +gtok;
const useMmap = process.env.LLAMACPP_MMAP === "1";
const llama = await getLlama({gpu: false, build: "never", logLevel: "error"});
const model = await llama.loadModel({modelPath, useMmap});
// a prompt of real-looking ids: a fixed pseudo-random walk over the vocabulary (no zeros, no BOS)
const n = model.fileInsights?.tokenizer?.ggml?.tokens?.length ?? 500;
let x = 12345; const prompt = [];
for (let i = 0; i < P; i++) { x = (x * 1103515245 + 12345) >>> 0; prompt.push(3 + (x % Math.max(1, Math.min(n, 30000) - 3))); }
const results = {model: modelPath, threads, mmap: useMmap};
{ // prefill
  const ctx = await model.createContext({contextSize: P + G + 8, batchSize: Math.min(512, P), threads});
  const seq = ctx.getSequence();
  const t = performance.now();
  await seq.evaluateWithoutGeneratingNewTokens(prompt);
  results.prefill_tok_s = +(P / ((performance.now() - t) / 1000)).toFixed(2);
  await ctx.dispose();
}
for (const S of seqs.split(",").map(Number)) { // decode with S sequences at once
  const ctx = await model.createContext({contextSize: S * (G + 40), sequences: S, batchSize: 512, threads});
  const short = prompt.slice(0, 16);
  const t0 = performance.now(); let total = 0;
  await Promise.all(Array.from({length: S}, async (_, i) => {
    const seq = ctx.getSequence();
    let k = 0;
    for await (const tok of seq.evaluate(short, {temperature: 0})) { total++; if (++k >= G) break; }
  }));
  results[`decode_tok_s_x${S}`] = +(total / ((performance.now() - t0) / 1000)).toFixed(2);
  await ctx.dispose();
}
console.log(JSON.stringify(results));
await model.dispose();
