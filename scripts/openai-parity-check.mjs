#!/usr/bin/env node
// Drives a running server with the official OpenAI Node client, unchanged,
// through what clients and proxies written for vLLM send (issue #22): vLLM's
// extra sampling fields, fields this server does not know (ignored with a
// warning), vLLM fields it cannot honour (refused by name), OpenAI's ranges
// (negative seed), logit_bias with values, the served model names and 404 model_not_found, the API
// key and a CORS preflight, and vLLM's /tokenize, /detokenize and /version.
//
// Run it as openai-client-check.mjs (see there for the client's install):
//   OPENAI_NODE_DIR=~/.cache/lightllm-test/openai node scripts/openai-parity-check.mjs \
//     --base-url http://127.0.0.1:8000/v1 --models a,b [--api-key KEY] [--origin http://ui.example]
// --chat: the model has a chat template (checks /v1/responses and chat
// /tokenize). --embed-dim N: the server embeds (--pooling) with N dimensions
// (checks embeddings.create, float and base64). --models: the server's --served_model_name list, in order. --api-key: the
// server's key (then unauthenticated calls must fail with 401). --origin: an
// origin in the server's --allowed_origins. Exit status 0 when every check
// passed; each check prints "ok" or "FAIL".

import { createRequire } from 'node:module';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

const args = process.argv.slice(2);
const opt = (name, dflt) => {
  const i = args.indexOf(name);
  return i >= 0 && i + 1 < args.length ? args[i + 1] : dflt;
};
const baseURL = opt('--base-url', 'http://127.0.0.1:8000/v1');
const root = baseURL.replace(/\/v1\/?$/, '');
const models = opt('--models', '').split(',').filter(Boolean);
const apiKey = opt('--api-key', '');
const origin = opt('--origin', '');
const withChat = args.includes('--chat');
const embedDim = Number(opt('--embed-dim', '0'));

async function loadOpenAI() {
  const dir = process.env.OPENAI_NODE_DIR;
  if (dir) {
    const req = createRequire(path.join(path.resolve(dir), 'package.json'));
    const mod = await import(pathToFileURL(req.resolve('openai')).href);
    return mod.default ?? mod.OpenAI;
  }
  const mod = await import('openai');
  return mod.default ?? mod.OpenAI;
}

const OpenAI = await loadOpenAI();
const opts = { maxRetries: 0, timeout: 60_000 };
const client = new OpenAI({ baseURL, apiKey: apiKey || 'EMPTY', ...opts });
// rootClient reaches vLLM's endpoints outside /v1 with the same client.
const rootClient = new OpenAI({ baseURL: root, apiKey: apiKey || 'EMPTY', ...opts });

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
async function expectError(fn, cls, status, what) {
  try {
    await fn();
  } catch (err) {
    assert(err instanceof cls, `${what}: got ${err?.constructor?.name}: ${err}`);
    assert(err.status === status, `${what}: status ${err.status}`);
    return err;
  }
  throw new Error(`${what}: no error`);
}

const model = models[0] ?? '';
const prompt = 'Once upon a time';

await check('models.list lists the served names', async () => {
  const page = await client.models.list();
  const ids = page.data.map((m) => m.id);
  assert(JSON.stringify(ids) === JSON.stringify(models), `ids ${JSON.stringify(ids)}, want ${JSON.stringify(models)}`);
  return ids.join(', ');
});

await check('every served name answers', async () => {
  for (const m of models) {
    const r = await client.completions.create({ model: m, prompt, max_tokens: 4, temperature: 0 });
    assert(r.model === m && r.choices[0].text.length > 0, `${m}: ${JSON.stringify(r)}`);
  }
});

await check('another model name is NotFoundError model_not_found', async () => {
  const err = await expectError(() => client.completions.create({ model: 'no-such-model', prompt, max_tokens: 2 }),
    OpenAI.NotFoundError, 404, 'unknown model');
  assert(err.code === 'model_not_found' && err.param === 'model', `code ${err.code} param ${err.param}`);
  return err.message;
});

await check("vLLM's extra sampling fields are accepted", async () => {
  const base = { model, prompt, max_tokens: 12, temperature: 0 };
  const plain = await client.completions.create(base);
  const r = await client.completions.create({
    ...base, top_k: 1, repetition_penalty: 1.0, min_tokens: 12, ignore_eos: true, skip_special_tokens: true,
    include_stop_str_in_output: false, spaces_between_special_tokens: true, stop_token_ids: [], seed: 3,
  });
  assert(r.choices[0].text === plain.choices[0].text, `greedy text changed: ${JSON.stringify(r.choices[0].text)} vs ${JSON.stringify(plain.choices[0].text)}`);
  assert(r.usage.completion_tokens === 12, `min_tokens/ignore_eos: ${r.usage.completion_tokens} tokens`);
});

await check('unknown fields are ignored (stream_options too)', async () => {
  const r = await client.completions.create({ model, prompt, max_tokens: 4, verbosity: 'low', some_future_field: { a: 1 } });
  assert(r.choices.length === 1, JSON.stringify(r));
  const stream = await client.completions.create({
    model, prompt, max_tokens: 4, stream: true, stream_options: { include_usage: true, include_obfuscation: false },
  });
  let usage = null;
  for await (const chunk of stream) if (chunk.usage) usage = chunk.usage;
  assert(usage && usage.completion_tokens > 0, `usage ${JSON.stringify(usage)}`);
});

await check('a vLLM field this server cannot honour is a BadRequestError naming it', async () => {
  const err = await expectError(() => client.completions.create({ model, prompt, max_tokens: 2, use_beam_search: true }),
    OpenAI.BadRequestError, 400, 'use_beam_search');
  assert(err.param === 'use_beam_search' && err.code === 'unsupported_parameter', `param ${err.param} code ${err.code}`);
});

await check('negative seeds are reproducible', async () => {
  const req = { model, prompt, max_tokens: 16, temperature: 1, seed: -42 };
  const a = (await client.completions.create(req)).choices[0].text;
  const b = (await client.completions.create(req)).choices[0].text;
  assert(a === b, `seed -42 differs: ${JSON.stringify(a)} vs ${JSON.stringify(b)}`);
  const texts = new Set();
  for (const seed of [-1, -2, -3, -4]) {
    texts.add((await client.completions.create({ ...req, seed })).choices[0].text);
  }
  assert(texts.size > 1, `seeds -1..-4 all gave ${JSON.stringify([...texts])}`);
});

await check('OpenAI penalty ranges: negative penalties run, beyond ±2 is refused', async () => {
  const base = { model, prompt, max_tokens: 24, temperature: 0 };
  const plain = (await client.completions.create(base)).choices[0].text;
  const neg = (await client.completions.create({ ...base, frequency_penalty: -2, presence_penalty: -2 })).choices[0].text;
  assert(neg !== plain, `frequency/presence -2 changed nothing: ${JSON.stringify(neg)}`);
  const err = await expectError(() => client.completions.create({ ...base, presence_penalty: 2.5 }), OpenAI.BadRequestError, 400, 'presence 2.5');
  assert(err.param === 'presence_penalty', `param ${err.param}`);
  return JSON.stringify(neg.slice(0, 30));
});

await check('logit_bias: +100 forces a token, -100 bans one, on both endpoints, streamed alike', async () => {
  const t = await rootClient.post('/tokenize', { body: { model, prompt: 'the', add_special_tokens: false } });
  assert(t.tokens.length === 1, `'the' is ${JSON.stringify(t.tokens)}`);
  const the = t.tokens[0];
  const base = { model, prompt, max_tokens: 8, temperature: 0 };
  const forced = await client.completions.create({ ...base, logit_bias: { [the]: 100 } });
  // The text of 8 times that token: /detokenize drops the first
  // SentencePiece space, a completion keeps it.
  const want = ' ' + (await rootClient.post('/detokenize', { body: { model, tokens: Array(8).fill(the) } })).prompt;
  assert(forced.choices[0].text === want && forced.usage.completion_tokens === 8, `+100: ${JSON.stringify(forced.choices[0].text)}, want ${JSON.stringify(want)}`);
  const stream = await client.completions.create({ ...base, logit_bias: { [the]: 100 }, stream: true });
  let streamed = '';
  for await (const chunk of stream) streamed += chunk.choices[0]?.text ?? '';
  assert(streamed === want, `streamed ${JSON.stringify(streamed)}`);
  // Ban the first token greedy picks (and keep the rest of the map large:
  // any number of entries travels in the request's extras).
  // (the generated ids: the tokenization of prompt + text past the prompt's).
  const plain = await client.completions.create(base);
  const ids = async (text) => (await rootClient.post('/tokenize', { body: { model, prompt: text } })).tokens;
  const first = (await ids(prompt + plain.choices[0].text))[(await ids(prompt)).length];
  const ban = {};
  for (let id = 300; id < 500; id++) ban[id] = 0.25;
  ban[first] = -100;
  const banned = await client.completions.create({ ...base, logit_bias: ban });
  assert(banned.choices[0].text !== plain.choices[0].text, `-100 changed nothing: ${JSON.stringify(banned.choices[0].text)}`);
  if (withChat) {
    const chat = await client.chat.completions.create({ model, messages: [{ role: 'user', content: 'Hi' }], max_tokens: 8,
      temperature: 0, logit_bias: { [the]: 100 } });
    assert(chat.choices[0].message.content.trimStart() === want.trimStart() && chat.usage.completion_tokens === 8, `chat +100: ${JSON.stringify(chat.choices[0].message.content)}`);
  }
  const err = await expectError(() => client.completions.create({ ...base, logit_bias: { [the]: 101 } }),
    OpenAI.BadRequestError, 400, 'bias 101');
  assert(err.param === 'logit_bias' && err.code === 'invalid_value', `param ${err.param} code ${err.code}`);
  return `'the' = ${the}; banned start ${JSON.stringify(banned.choices[0].text.slice(0, 20))}`;
});

await check('echo with logprobs: the tokens spell the text, text_offset points into it', async () => {
  const r = await client.completions.create({ model, prompt, max_tokens: 4, temperature: 0, echo: true, logprobs: 1 });
  const c = r.choices[0];
  const lp = c.logprobs;
  assert(lp.tokens.join('') === c.text, `tokens ${JSON.stringify(lp.tokens)} vs ${JSON.stringify(c.text)}`);
  lp.tokens.forEach((tok, i) => assert(c.text.slice(lp.text_offset[i], lp.text_offset[i] + tok.length) === tok,
    `token ${i} ${JSON.stringify(tok)} at ${lp.text_offset[i]}`));
});

await check('a prompt alone too long names prompt in context_length_exceeded', async () => {
  // Short enough in characters to be tokenized, too long in tokens.
  const long = 'Once upon a time '.repeat(200);
  const err = await expectError(() => client.completions.create({ model, prompt: long, max_tokens: 4 }), OpenAI.BadRequestError, 400, 'long prompt');
  assert(err.code === 'context_length_exceeded' && err.param === 'prompt', `code ${err.code} param ${err.param}`);
  return err.message;
});

await check("vLLM's /tokenize, /detokenize, /version", async () => {
  const t = await rootClient.post('/tokenize', { body: { model, prompt, return_token_strs: true } });
  assert(t.count === t.tokens.length && t.count > 1 && t.token_strs.length === t.count && t.max_model_len > 0, JSON.stringify(t));
  const d = await rootClient.post('/detokenize', { body: { model, tokens: t.tokens.slice(1) } });
  assert(d.prompt === prompt, `detokenize ${JSON.stringify(d)}`);
  const r = await client.completions.create({ model, prompt: t.tokens, max_tokens: 4, temperature: 0 });
  assert(r.usage.prompt_tokens === t.count, `usage ${r.usage.prompt_tokens} vs /tokenize ${t.count}`);
  if (withChat) {
    const c = await rootClient.post('/tokenize', { body: { model, messages: [{ role: 'user', content: 'Hi' }] } });
    assert(c.count > 2, JSON.stringify(c));
  }
  const v = await rootClient.get('/version');
  assert(typeof v.version === 'string' && v.version.length > 0, JSON.stringify(v));
  await expectError(() => rootClient.post('/detokenize', { body: { tokens: [1e9] } }), OpenAI.BadRequestError, 400, 'bad id');
  return `${t.count} tokens, version ${v.version}`;
});

if (embedDim > 0) {
  await check('embeddings.create: float and base64 agree, usage, dimensions refused by name', async () => {
    const input = ['Once upon a time', 'The cat sat on the mat.'];
    const f = await client.embeddings.create({ model, input, encoding_format: 'float' });
    assert(f.object === 'list' && f.data.length === 2 && f.data[1].index === 1, JSON.stringify(f).slice(0, 300));
    const v = f.data.map((d) => d.embedding);
    assert(v.every((e) => Array.isArray(e) && e.length === embedDim), `lengths ${v.map((e) => e.length)}`);
    const norm = Math.hypot(...v[0]);
    assert(Math.abs(norm - 1) < 1e-4, `norm ${norm}`);
    assert(v[0].some((x, i) => x !== v[1][i]), 'two inputs, one vector');
    assert(f.usage.prompt_tokens > 2 && f.usage.total_tokens === f.usage.prompt_tokens, JSON.stringify(f.usage));
    const b = await client.embeddings.create({ model, input, encoding_format: 'base64' });
    const raw = Buffer.from(b.data[0].embedding, 'base64');
    const fromB64 = Array.from(new Float32Array(raw.buffer, raw.byteOffset, raw.length / 4));
    assert(fromB64.length === embedDim && fromB64.every((x, i) => x === Math.fround(v[0][i])), 'base64 and float differ');
    // Without encoding_format the client asks for base64 and decodes it itself.
    const d = await client.embeddings.create({ model, input: input[0] });
    assert(d.data[0].embedding.every((x, i) => x === Math.fround(v[0][i])), 'default encoding differs');
    const err = await expectError(() => client.embeddings.create({ model, input: 'x', dimensions: embedDim + 1 }),
      OpenAI.BadRequestError, 400, 'dimensions');
    assert(err.param === 'dimensions', `param ${err.param}`);
    await expectError(() => client.embeddings.create({ model, input: '' }), OpenAI.BadRequestError, 400, 'empty input');
    return `${embedDim} dimensions, ${f.usage.prompt_tokens} tokens`;
  });
}

if (withChat) {
  await check('responses.create, streamed and not', async () => {
    const req = { model, input: 'Tell me a story.', instructions: 'You are a storyteller.', max_output_tokens: 12, temperature: 0 };
    const r = await client.responses.create(req);
    assert(r.object === 'response' && r.output_text.length > 0, JSON.stringify(r));
    assert(r.status === 'incomplete' && r.incomplete_details.reason === 'max_output_tokens', `status ${r.status}`);
    assert(r.usage.output_tokens === 12 && r.usage.input_tokens > 0, JSON.stringify(r.usage));
    const stream = await client.responses.create({ ...req, stream: true });
    let text = '';
    const types = [];
    let last = null;
    for await (const ev of stream) {
      types.push(ev.type);
      if (ev.type === 'response.output_text.delta') text += ev.delta;
      last = ev;
    }
    assert(text === r.output_text, `streamed ${JSON.stringify(text)} vs ${JSON.stringify(r.output_text)}`);
    assert(types[0] === 'response.created' && types.includes('response.output_item.done') && last.type === 'response.incomplete',
      `events ${types.join(',')}`);
    assert(last.response.output[0].content[0].text === r.output_text, JSON.stringify(last.response));
    const err = await expectError(() => client.responses.create({ ...req, previous_response_id: 'resp_x' }),
      OpenAI.BadRequestError, 400, 'previous_response_id');
    assert(err.param === 'previous_response_id', `param ${err.param}`);
    return `${types.length} events`;
  });
}

if (apiKey) {
  await check('a wrong API key is AuthenticationError 401', async () => {
    const bad = new OpenAI({ baseURL, apiKey: 'wrong-key', ...opts });
    const err = await expectError(() => bad.models.list(), OpenAI.AuthenticationError, 401, 'wrong key');
    assert(err.code === 'invalid_api_key', `code ${err.code}`);
  });
  await check('the probes answer without a key', async () => {
    for (const p of ['/health', '/liveness', '/readiness']) {
      const r = await fetch(root + p);
      assert(r.status === 200, `${p}: ${r.status}`);
    }
  });
}

if (origin) {
  await check('CORS preflight and response headers', async () => {
    const r = await fetch(baseURL + '/chat/completions', {
      method: 'OPTIONS',
      headers: { Origin: origin, 'Access-Control-Request-Method': 'POST', 'Access-Control-Request-Headers': 'authorization,content-type' },
    });
    assert(r.status === 204, `preflight ${r.status}`);
    assert(r.headers.get('access-control-allow-origin') === origin, `allow-origin ${r.headers.get('access-control-allow-origin')}`);
    assert((r.headers.get('access-control-allow-methods') || '').includes('POST'), 'allow-methods');
    const cors = new OpenAI({ baseURL, apiKey: apiKey || 'EMPTY', ...opts, defaultHeaders: { Origin: origin } });
    const { response } = await cors.completions.create({ model, prompt, max_tokens: 2 }).withResponse();
    assert(response.headers.get('access-control-allow-origin') === origin, 'no allow-origin on the answer');
  });
}

console.log(failures === 0 ? 'all checks passed' : `${failures} check(s) failed`);
process.exit(failures === 0 ? 0 : 1);
