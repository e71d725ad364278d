// llama.cpp greedy continuations of token-id prompts with a chosen KV-cache type (-ctk/-ctv),
// for pkg/model's quantized-KV fixtures. Run from a llama.cpp reference install made by
// ../shared/tools/llamacpp-ref/setup.sh (node resolves node-llama-cpp from the script's folder):
//   DIR=$(../shared/tools/llamacpp-ref/setup.sh); cp scripts/llamacpp/greedy_kv.mjs $DIR/
//   node $DIR/greedy_kv.mjs MODEL.gguf PROMPTS.json N_TOKENS Q8_0 [threads=1]
import {getLlama} from "node-llama-cpp";
import fs from "node:fs";
const [modelPath, promptsPath, nArg, kvType = "F16", thr = "1"] = process.argv.slice(2);
const n = parseInt(nArg), threads = +thr;
const prompts = JSON.parse(fs.readFileSync(promptsPath, "utf8"));
const llama = await getLlama({gpu: false, build: "never", logLevel: "error"});
const model = await llama.loadModel({modelPath});
for (const prompt of prompts) {
  const ctx = await model.createContext({contextSize: Math.max(512, prompt.length + n + 8), batchSize: 512, threads,
    flashAttention: true, experimentalKvCacheKeyType: kvType, experimentalKvCacheValueType: kvType});
  const seq = ctx.getSequence();
  const out = []; let top = null;
  for await (const r of seq.evaluateWithMetadata(prompt, {probabilities: true}, {temperature: 0})) {
    if (top === null) top = [...r.probabilities.entries()].sort((a, b) => b[1] - a[1]).slice(0, 5).map(([t, p]) => [t, Math.log(p)]);
    out.push(r.token);
    if (out.length >= n) break;
  }
  console.log(JSON.stringify({kv_type: kvType, prompt_ids: prompt, greedy_ids: out, first_token_top5_logprob: top}));
  await ctx.dispose();
}
await model.dispose();
