#!/usr/bin/env node
// Drives a running server's ollama API with the `ollama` npm client,
// unchanged, as Open WebUI or Continue would: version, list (tags), ps,
// show, generate and chat — streamed (NDJSON) and not, which must agree, and
// whose greedy text must equal /v1/completions' — errors as the client's
// ResponseError, and a stream the client aborts.
//
// The client is not a dependency of this repository:
// scripts/install-test-deps.sh installs a pinned version into
// ~/.cache/lightllm-test/ollama. Then:
//   OLLAMA_NODE_DIR=~/.cache/lightllm-test/ollama node scripts/ollama-client-check.mjs \
//     --host http://127.0.0.1:8000 --models a,b [--api-key KEY] [--chat]
// --models: the server's --served_model_name list; --chat: the model has a
// chat template (check /api/chat). Exit status 0 when every check passed.

import { createRequire } from 'node:module';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

const args = process.argv.slice(2);
const opt = (name, dflt) => {
  const i = args.indexOf(name);
  return i >= 0 && i + 1 < args.length ? args[i + 1] : dflt;
};
const host = opt('--host', 'http://127.0.0.1:8000');
const models = opt('--models', '').split(',').filter(Boolean);
const apiKey = opt('--api-key', '');
const withChat = args.includes('--chat');

async function loadOllama() {
  const dir = process.env.OLLAMA_NODE_DIR;
  const req = createRequire(path.join(path.resolve(dir || '.'), 'package.json'));
  const mod = await import(pathToFileURL(req.resolve('ollama')).href);
  return mod;
}

const mod = await loadOllama();
const headers = apiKey ? { Authorization: `Bearer ${apiKey}` } : {};
const ollama = new mod.Ollama({ host, headers });

let failures = 0;
function assert(cond, msg) {
  if (!cond) throw new Error(msg);
}
async function check(name, fn) {
  try {
    const note = await fn();
    console.log(`ok   ${name}${note ? ` (${note})` : ''}`);
  } catch (err) {
    failures++;
    console.log(`FAIL ${name}: ${err?.stack || err}`);
  }
}

const model = models[0];
const prompt = 'Once upon a time';
const options = { temperature: 0, num_predict: 16 };
let greedy = '';

await check('version', async () => {
  const v = await ollama.version();
  assert(typeof v.version === 'string' && /^\d+\.\d+\.\d+/.test(v.version), JSON.stringify(v));
  return v.version;
});

await check('list (/api/tags) names the served models', async () => {
  const r = await ollama.list();
  const names = r.models.map((m) => m.name);
  const want = models.map((m) => (m.includes(':') ? m : `${m}:latest`));
  assert(JSON.stringify(names) === JSON.stringify(want), `names ${JSON.stringify(names)}, want ${JSON.stringify(want)}`);
  assert(r.models.every((m) => m.size > 0 && m.digest && m.details && m.details.family), JSON.stringify(r.models[0]));
  return names.join(', ');
});

await check('ps and show', async () => {
  const ps = await ollama.ps();
  assert(ps.models.length === models.length, JSON.stringify(ps));
  const show = await ollama.show({ model });
  assert(show.details && Array.isArray(show.capabilities) && show.capabilities.includes('completion'), JSON.stringify(show));
});

await check('generate (not streamed) equals /v1/completions greedy', async () => {
  const r = await ollama.generate({ model, prompt, raw: true, options });
  assert(r.done && r.done_reason === 'length' && r.eval_count === 16, JSON.stringify(r));
  assert(r.prompt_eval_count > 0 && r.total_duration > 0 && Array.isArray(r.context), JSON.stringify(r));
  greedy = r.response;
  const resp = await fetch(`${host}/v1/completions`, {
    method: 'POST', headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify({ model, prompt, max_tokens: 16, temperature: 0 }),
  });
  const c = await resp.json();
  assert(c.choices?.[0]?.text === greedy, `ollama ${JSON.stringify(greedy)} vs completions ${JSON.stringify(c)}`);
  return JSON.stringify(greedy.slice(0, 40));
});

await check('generate streamed (NDJSON) gives the same text', async () => {
  const stream = await ollama.generate({ model, prompt, raw: true, options, stream: true });
  let text = '';
  let last = null;
  for await (const part of stream) {
    text += part.response;
    last = part;
  }
  assert(text === greedy, `streamed ${JSON.stringify(text)} != ${JSON.stringify(greedy)}`);
  assert(last.done && last.eval_count === 16, JSON.stringify(last));
});

await check('generate with context continues', async () => {
  const first = await ollama.generate({ model, prompt, raw: true, options: { temperature: 0, num_predict: 8 } });
  const next = await ollama.generate({ model, prompt: ' and', raw: true, context: first.context, options: { temperature: 0, num_predict: 4 } });
  assert(next.done && next.prompt_eval_count > first.context.length && next.context.length === next.prompt_eval_count + 4,
    `first ${first.context.length} ids, next ${JSON.stringify(next)}`);
});

await check('seeded sampling is reproducible', async () => {
  const o = { temperature: 1, seed: 42, num_predict: 16 };
  const a = await ollama.generate({ model, prompt, raw: true, options: o });
  const b = await ollama.generate({ model, prompt, raw: true, options: o });
  assert(a.response === b.response, `${JSON.stringify(a.response)} vs ${JSON.stringify(b.response)}`);
});

if (withChat) {
  await check('chat streamed and not agree', async () => {
    const messages = [{ role: 'user', content: 'Tell me a story.' }];
    const r = await ollama.chat({ model, messages, options });
    assert(r.done && r.message.role === 'assistant' && r.eval_count > 0, JSON.stringify(r));
    const stream = await ollama.chat({ model, messages, options, stream: true });
    let text = '';
    for await (const part of stream) text += part.message.content;
    assert(text === r.message.content, `${JSON.stringify(text)} vs ${JSON.stringify(r.message.content)}`);
  });
}

await check('an unknown model is a ResponseError 404', async () => {
  try {
    await ollama.generate({ model: 'no-such-model', prompt });
  } catch (err) {
    assert(err.name === 'ResponseError' && err.status_code === 404, `${err.name} ${err.status_code}: ${err.message}`);
    assert(err.message.includes('not found'), err.message);
    return err.message;
  }
  throw new Error('no error');
});

await check('an unsupported option is a ResponseError 400 naming it', async () => {
  try {
    await ollama.generate({ model, prompt, options: { mirostat: 2 } });
  } catch (err) {
    assert(err.status_code === 400 && err.message.includes('mirostat'), `${err.status_code}: ${err.message}`);
    return err.message;
  }
  throw new Error('no error');
});

await check('a stream aborted by the client', async () => {
  const stream = await ollama.generate({ model, prompt, raw: true, options: { num_predict: 200 }, stream: true });
  let n = 0;
  try {
    for await (const _ of stream) {
      if (++n === 2) stream.abort();
    }
  } catch (err) {
    assert(err.name === 'AbortError', `abort surfaced as ${err}`);
  }
  const r = await ollama.generate({ model, prompt, raw: true, options: { num_predict: 2 } });
  assert(r.done, 'server unusable after an aborted stream');
});

console.log(failures === 0 ? 'all checks passed' : `${failures} check(s) failed`);
process.exit(failures === 0 ? 0 : 1);
