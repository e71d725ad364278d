#!/usr/bin/env node
// Drives a running server with the official OpenAI Node client, unchanged,
// and checks what clients rely on: /v1/models, completions and chat
// completions (plain and streamed, with usage), logprobs and top
// alternatives as the client types them, n>1 with a seed, stop strings,
// x-request-id, and that a bad request surfaces as the client's
// BadRequestError with the offending param.
//
// The client is not a dependency of this repository: scripts/install-test-deps.sh
// installs a pinned version into ~/.cache/lightllm-test/openai (or anywhere:
// mkdir -p /tmp/oai && npm install --prefix /tmp/oai openai). Then:
//   OPENAI_NODE_DIR=~/.cache/lightllm-test/openai node scripts/openai-client-check.mjs --base-url http://127.0.0.1:8000/v1
// Flags: --base-url URL (or env OPENAI_BASE_URL), --require-chat (fail instead
// of skipping chat when the model has no chat template), --structured (check
// response_format json_schema and forced tool calls, non-stream and stream:
// the server must constrain them, so even a random-weight model passes),
// --reasoning (check reasoning_content: the model's template must leave a
// <think> block open, or the model must think), --thinking-budget N (with
// --reasoning: the request also sends thinking_token_budget N).
// Exit status 0 when every check passed; each check prints "ok" or "FAIL".

import { createRequire } from 'node:module';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

const args = process.argv.slice(2);
const flag = (name) => args.includes(name);
const opt = (name, dflt) => {
  const i = args.indexOf(name);
  return i >= 0 && i + 1 < args.length ? args[i + 1] : dflt;
};
const baseURL = opt('--base-url', process.env.OPENAI_BASE_URL || 'http://127.0.0.1:8000/v1');
const requireChat = flag('--require-chat');
const structured = flag('--structured');
const reasoning = flag('--reasoning');
// --thinking-budget N: the reasoning check also sends vLLM's
// thinking_token_budget, so that thinking ends and an answer follows.
const thinkingBudget = opt('--thinking-budget', '');

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
const client = new OpenAI({ baseURL, apiKey: process.env.OPENAI_API_KEY || 'EMPTY', maxRetries: 0, timeout: 60_000 });

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
function checkUsage(u, what) {
  assert(u && Number.isInteger(u.prompt_tokens) && u.prompt_tokens > 0, `${what}: usage.prompt_tokens ${JSON.stringify(u)}`);
  assert(Number.isInteger(u.completion_tokens) && u.completion_tokens > 0, `${what}: usage.completion_tokens`);
  assert(u.total_tokens === u.prompt_tokens + u.completion_tokens, `${what}: usage.total_tokens`);
  assert(Number.isInteger(u.prompt_tokens_details?.cached_tokens), `${what}: usage.prompt_tokens_details.cached_tokens`);
}

let model = '';
let greedy = '';
const prompt = 'Once upon a time';

await check('models.list', async () => {
  const page = await client.models.list();
  assert(page.data.length >= 1 && page.data[0].id, `no model in ${JSON.stringify(page.data)}`);
  model = page.data[0].id;
  return model;
});

await check('completions.create', async () => {
  const r = await client.completions.create({ model, prompt, max_tokens: 24, temperature: 0 });
  assert(r.object === 'text_completion' && r.choices.length === 1, `shape ${JSON.stringify(r)}`);
  greedy = r.choices[0].text;
  assert(typeof greedy === 'string' && greedy.length > 0, 'empty text');
  assert(['stop', 'length'].includes(r.choices[0].finish_reason), `finish_reason ${r.choices[0].finish_reason}`);
  checkUsage(r.usage, 'completion');
  return JSON.stringify(greedy.slice(0, 40));
});

await check('completions.create stream + include_usage', async () => {
  const stream = await client.completions.create({
    model, prompt, max_tokens: 24, temperature: 0, stream: true, stream_options: { include_usage: true },
  });
  let text = '';
  let usage = null;
  let finish = null;
  for await (const chunk of stream) {
    for (const c of chunk.choices) {
      text += c.text;
      if (c.finish_reason) finish = c.finish_reason;
    }
    if (chunk.usage) usage = chunk.usage;
  }
  assert(text === greedy, `streamed ${JSON.stringify(text)} != ${JSON.stringify(greedy)}`);
  assert(finish, 'no finish_reason');
  checkUsage(usage, 'stream usage chunk');
});

// Legacy completions logprobs: per token its logprob and a map of the most
// likely alternatives (greedy: the token is the best of them).
function checkCompletionLogprobs(lp, text, n, what) {
  assert(lp && Array.isArray(lp.tokens) && lp.tokens.length > 0, `${what}: logprobs ${JSON.stringify(lp)}`);
  assert(lp.token_logprobs.length === lp.tokens.length && lp.top_logprobs.length === lp.tokens.length &&
    lp.text_offset.length === lp.tokens.length, `${what}: ragged logprobs ${JSON.stringify(lp)}`);
  assert(lp.tokens.join('') === text, `${what}: tokens ${JSON.stringify(lp.tokens)} do not spell ${JSON.stringify(text)}`);
  lp.tokens.forEach((tok, i) => {
    const v = lp.token_logprobs[i];
    const top = lp.top_logprobs[i];
    const keys = Object.keys(top ?? {});
    assert(typeof v === 'number' && v <= 0, `${what}: token ${i} logprob ${v}`);
    assert(keys.length >= 1 && keys.length <= n, `${what}: token ${i} has ${keys.length} alternatives, want 1..${n}`);
    assert(Math.max(...Object.values(top)) === v, `${what}: greedy token ${i} ${JSON.stringify(tok)} (${v}) is not the best of ${JSON.stringify(top)}`);
  });
}

await check('completions logprobs', async () => {
  const r = await client.completions.create({ model, prompt, max_tokens: 8, temperature: 0, logprobs: 3 });
  const c = r.choices[0];
  checkCompletionLogprobs(c.logprobs, c.text, 3, 'logprobs');
  assert(c.logprobs.tokens.length === r.usage.completion_tokens, `${c.logprobs.tokens.length} tokens, usage ${r.usage.completion_tokens}`);
  return `first token ${JSON.stringify(c.logprobs.tokens[0])} ${c.logprobs.token_logprobs[0].toFixed(4)}`;
});

await check('completions stream logprobs', async () => {
  const stream = await client.completions.create({ model, prompt, max_tokens: 8, temperature: 0, logprobs: 2, stream: true });
  let n = 0;
  for await (const chunk of stream) {
    for (const c of chunk.choices) {
      if (c.text === '' && !c.logprobs) continue;
      checkCompletionLogprobs(c.logprobs, c.text, 2, `chunk ${n}`);
      n += c.logprobs.tokens.length;
    }
  }
  assert(n === 8, `${n} tokens with logprobs in the stream, want 8`);
});

await check('completions n=3 with seed is reproducible', async () => {
  const req = { model, prompt, max_tokens: 16, temperature: 1, n: 3, seed: 1234 };
  const a = (await client.completions.create(req)).choices.map((c) => c.text);
  const b = (await client.completions.create(req)).choices.map((c) => c.text);
  assert(a.length === 3, `${a.length} choices`);
  assert(JSON.stringify(a) === JSON.stringify(b), `same seed differs:\n${JSON.stringify(a)}\n${JSON.stringify(b)}`);
  assert(new Set(a).size > 1, `n=3 all identical: ${JSON.stringify(a)}`);
});

await check('completions stop string excluded', async () => {
  const words = greedy.split(' ').filter((w) => w.length >= 2);
  assert(words.length >= 3, `greedy text too short to pick a stop: ${JSON.stringify(greedy)}`);
  const stop = words[2];
  const r = await client.completions.create({ model, prompt, max_tokens: 24, temperature: 0, stop: [stop] });
  const want = greedy.slice(0, greedy.indexOf(stop));
  assert(r.choices[0].text === want, `stop ${JSON.stringify(stop)}: got ${JSON.stringify(r.choices[0].text)}, want ${JSON.stringify(want)}`);
  assert(r.choices[0].finish_reason === 'stop', `finish_reason ${r.choices[0].finish_reason}`);
  return JSON.stringify(stop);
});

await check('x-request-id honoured and echoed', async () => {
  const { data, response } = await client.completions
    .create({ model, prompt, max_tokens: 2 }, { headers: { 'x-request-id': 'node-check-1' } })
    .withResponse();
  assert(response.headers.get('x-request-id') === 'node-check-1', `header ${response.headers.get('x-request-id')}`);
  assert(data.id === 'cmpl-node-check-1', `id ${data.id}`);
});

await check('bad request is a BadRequestError naming the param', async () => {
  try {
    await client.completions.create({ model, prompt, temperature: -1 });
  } catch (err) {
    assert(err instanceof OpenAI.BadRequestError, `got ${err?.constructor?.name}: ${err}`);
    assert(err.status === 400 && err.param === 'temperature', `status ${err.status} param ${err.param}`);
    assert(typeof err.message === 'string' && err.message.includes('temperature'), `message ${err.message}`);
    return err.code;
  }
  throw new Error('no error for temperature -1');
});

await check('stream aborted by the client', async () => {
  const ac = new AbortController();
  const stream = await client.completions.create(
    { model, prompt, max_tokens: 200, temperature: 0, stream: true }, { signal: ac.signal });
  let n = 0;
  try {
    for await (const _ of stream) {
      if (++n === 2) ac.abort();
    }
  } catch (err) {
    assert(err instanceof OpenAI.APIUserAbortError || err?.name === 'AbortError', `abort surfaced as ${err}`);
  }
  const r = await client.completions.create({ model, prompt, max_tokens: 2 });
  assert(r.choices.length === 1, 'server unusable after an aborted stream');
});

// Chat needs a chat template; a model without one answers a clean 400.
let chatAvailable = true;
await check('chat.completions.create', async () => {
  let r;
  try {
    r = await client.chat.completions.create({
      model, messages: [{ role: 'user', content: 'Tell me a story.' }], max_tokens: 24, temperature: 0,
    });
  } catch (err) {
    if (!requireChat && err instanceof OpenAI.BadRequestError && err.code === 'no_chat_template') {
      chatAvailable = false;
      return 'skipped: the model has no chat template (400 no_chat_template, as expected)';
    }
    throw err;
  }
  assert(r.object === 'chat.completion' && r.choices[0].message.role === 'assistant', `shape ${JSON.stringify(r)}`);
  assert(typeof r.choices[0].message.content === 'string', 'content');
  checkUsage(r.usage, 'chat');
  greedy = r.choices[0].message.content;
});

if (chatAvailable) {
  await check('chat.completions.create stream + include_usage', async () => {
    const stream = await client.chat.completions.create({
      model, messages: [{ role: 'user', content: 'Tell me a story.' }], max_tokens: 24, temperature: 0,
      stream: true, stream_options: { include_usage: true },
    });
    let text = '';
    let first = true;
    let finish = null;
    let usage = null;
    for await (const chunk of stream) {
      assert(chunk.object === 'chat.completion.chunk', `object ${chunk.object}`);
      for (const c of chunk.choices) {
        if (first) {
          assert(c.delta.role === 'assistant', `first delta ${JSON.stringify(c.delta)}`);
          first = false;
        }
        text += c.delta.content ?? '';
        if (c.finish_reason) finish = c.finish_reason;
      }
      if (chunk.usage) usage = chunk.usage;
    }
    assert(text === greedy, `streamed ${JSON.stringify(text)} != ${JSON.stringify(greedy)}`);
    assert(finish, 'no finish_reason');
    checkUsage(usage, 'chat usage chunk');
  });

  // Chat logprobs: per token its text, logprob, UTF-8 bytes and the top
  // alternatives; the bytes spell the content even where one token is only
  // part of a character.
  const checkChatLogprobs = (content, text, n, what) => {
    assert(Array.isArray(content) && content.length > 0, `${what}: logprobs.content ${JSON.stringify(content)}`);
    const bytes = [];
    content.forEach((t, i) => {
      assert(typeof t.token === 'string' && typeof t.logprob === 'number' && t.logprob <= 0, `${what}: token ${i} ${JSON.stringify(t)}`);
      assert(Array.isArray(t.bytes), `${what}: token ${i} has no bytes`);
      bytes.push(...t.bytes);
      assert(t.top_logprobs.length === n, `${what}: token ${i} has ${t.top_logprobs.length} alternatives, want ${n}`);
      if (n > 0) assert(t.top_logprobs[0].logprob === t.logprob, `${what}: greedy token ${i} is not the best: ${JSON.stringify(t)}`);
    });
    // With a reasoning parser the tokens also spell the thinking block
    // before the content.
    const spelt = Buffer.from(bytes).toString('utf8');
    assert(reasoning ? spelt.endsWith(text) : spelt === text, `${what}: bytes spell ${JSON.stringify(spelt)}, content ${JSON.stringify(text)}`);
  };

  await check('chat logprobs + top_logprobs', async () => {
    const r = await client.chat.completions.create({
      model, messages: [{ role: 'user', content: 'Tell me a story.' }], max_tokens: 12, temperature: 0,
      logprobs: true, top_logprobs: 3,
    });
    const c = r.choices[0];
    checkChatLogprobs(c.logprobs?.content, c.message.content, 3, 'chat');
    assert(c.logprobs.content.length === r.usage.completion_tokens, `${c.logprobs.content.length} tokens, usage ${r.usage.completion_tokens}`);
  });

  await check('chat stream logprobs', async () => {
    const stream = await client.chat.completions.create({
      model, messages: [{ role: 'user', content: 'Tell me a story.' }], max_tokens: 12, temperature: 0,
      logprobs: true, stream: true,
    });
    const content = [];
    let text = '';
    for await (const chunk of stream) {
      for (const c of chunk.choices) {
        text += c.delta.content ?? '';
        content.push(...(c.logprobs?.content ?? []));
      }
    }
    checkChatLogprobs(content, text, 0, 'chat stream');
    assert(content.length === 12, `${content.length} tokens with logprobs, want 12`);
  });

  await check('chat empty messages is a BadRequestError', async () => {
    try {
      await client.chat.completions.create({ model, messages: [] });
    } catch (err) {
      assert(err instanceof OpenAI.BadRequestError && err.param === 'messages', `got ${err}`);
      return;
    }
    throw new Error('empty messages accepted');
  });
}

// Structured output: the answer must parse and match the schema whenever the
// model stopped by itself.
const personSchema = {
  type: 'object',
  properties: {
    name: { type: 'string', maxLength: 12 },
    age: { type: 'integer', minimum: 0, maximum: 150 },
    tags: { type: 'array', items: { enum: ['a', 'b', 'c'] }, maxItems: 3 },
  },
  required: ['name', 'age', 'tags'],
  additionalProperties: false,
};
function checkPerson(text, what) {
  let v;
  try {
    v = JSON.parse(text);
  } catch (err) {
    throw new Error(`${what}: not JSON: ${JSON.stringify(text)}`);
  }
  const keys = Object.keys(v);
  assert(JSON.stringify(keys) === '["name","age","tags"]', `${what}: keys ${JSON.stringify(keys)}`);
  assert(typeof v.name === 'string' && [...v.name].length <= 12, `${what}: name ${JSON.stringify(v.name)}`);
  assert(Number.isInteger(v.age) && v.age >= 0 && v.age <= 150, `${what}: age ${v.age}`);
  assert(Array.isArray(v.tags) && v.tags.length <= 3 && v.tags.every((t) => ['a', 'b', 'c'].includes(t)), `${what}: tags ${JSON.stringify(v.tags)}`);
  return v;
}
const weatherTool = {
  type: 'function',
  function: {
    name: 'get_weather',
    description: 'Current weather of a city',
    parameters: {
      type: 'object',
      properties: { city: { type: 'string', maxLength: 16 }, unit: { enum: ['celsius', 'fahrenheit'] } },
      required: ['city', 'unit'],
      additionalProperties: false,
    },
  },
};
const timeTool = { type: 'function', function: { name: 'get_time', parameters: { type: 'object', properties: {}, additionalProperties: false } } };
function checkWeatherArgs(args, what) {
  let v;
  try {
    v = JSON.parse(args);
  } catch (err) {
    throw new Error(`${what}: arguments are not JSON: ${JSON.stringify(args)}`);
  }
  assert(typeof v.city === 'string' && [...v.city].length <= 16, `${what}: city ${JSON.stringify(v.city)}`);
  assert(['celsius', 'fahrenheit'].includes(v.unit), `${what}: unit ${JSON.stringify(v.unit)}`);
  assert(Object.keys(v).length === 2, `${what}: keys ${JSON.stringify(Object.keys(v))}`);
}
const weatherMessages = [{ role: 'user', content: 'What is the weather in Paris?' }];

if (chatAvailable && structured) {
  await check('chat response_format json_schema (strict)', async () => {
    const r = await client.chat.completions.create({
      model, messages: [{ role: 'user', content: 'Describe a person.' }], max_tokens: 300, temperature: 1, seed: 7,
      response_format: { type: 'json_schema', json_schema: { name: 'person', strict: true, schema: personSchema } },
    });
    const c = r.choices[0];
    assert(c.finish_reason === 'stop', `finish_reason ${c.finish_reason}: ${JSON.stringify(c.message.content)}`);
    return JSON.stringify(checkPerson(c.message.content, 'json_schema'));
  });

  await check('chat response_format json_schema streamed', async () => {
    const stream = await client.chat.completions.create({
      model, messages: [{ role: 'user', content: 'Describe a person.' }], max_tokens: 300, temperature: 1, seed: 8, stream: true,
      response_format: { type: 'json_schema', json_schema: { name: 'person', schema: personSchema } },
    });
    let text = '';
    let finish = null;
    for await (const chunk of stream) {
      for (const c of chunk.choices) {
        text += c.delta.content ?? '';
        if (c.finish_reason) finish = c.finish_reason;
      }
    }
    assert(finish === 'stop', `finish_reason ${finish}`);
    checkPerson(text, 'stream');
  });

  for (const [name, toolChoice] of [['required', 'required'], ['named', { type: 'function', function: { name: 'get_weather' } }]]) {
    await check(`chat tool call (tool_choice ${name})`, async () => {
      const r = await client.chat.completions.create({
        model, messages: weatherMessages, max_tokens: 200, temperature: 1, seed: 11,
        tools: [weatherTool, timeTool], tool_choice: toolChoice,
      });
      const c = r.choices[0];
      assert(c.finish_reason === 'tool_calls', `finish_reason ${c.finish_reason}: ${JSON.stringify(c.message)}`);
      const calls = c.message.tool_calls;
      assert(Array.isArray(calls) && calls.length >= 1, `tool_calls ${JSON.stringify(calls)}`);
      for (const call of calls) {
        assert(call.type === 'function' && /^call_/.test(call.id), `call ${JSON.stringify(call)}`);
        if (name === 'named') assert(call.function.name === 'get_weather', `named choice called ${call.function.name}`);
        if (call.function.name === 'get_weather') checkWeatherArgs(call.function.arguments, 'call');
        else assert(call.function.name === 'get_time' && call.function.arguments.replace(/\s/g, '') === '{}', `call ${JSON.stringify(call)}`);
      }
      return `${calls[0].function.name} ${calls[0].function.arguments}`;
    });
  }

  await check('chat tool call streamed (assembled from deltas)', async () => {
    const req = { model, messages: weatherMessages, max_tokens: 200, temperature: 1, seed: 12, tools: [weatherTool], tool_choice: 'required' };
    const stream = await client.chat.completions.create({ ...req, stream: true });
    const calls = [];
    let finish = null;
    let fragments = 0;
    for await (const chunk of stream) {
      for (const c of chunk.choices) {
        for (const d of c.delta.tool_calls ?? []) {
          if (!calls[d.index]) {
            assert(d.id && d.function?.name, `first delta of call ${d.index} lacks id or name: ${JSON.stringify(d)}`);
            calls[d.index] = { id: d.id, name: d.function.name, arguments: '' };
          } else {
            assert(!d.function?.name, `name sent twice: ${JSON.stringify(d)}`);
          }
          calls[d.index].arguments += d.function?.arguments ?? '';
          fragments++;
        }
        if (c.finish_reason) finish = c.finish_reason;
      }
    }
    assert(finish === 'tool_calls', `finish_reason ${finish}`);
    assert(calls.length >= 1 && calls[0].name === 'get_weather', `calls ${JSON.stringify(calls)}`);
    checkWeatherArgs(calls[0].arguments, 'streamed call');
    assert(fragments >= 2, `arguments came in ${fragments} delta(s), want them streamed`);
    const whole = await client.chat.completions.create(req);
    assert(whole.choices[0].message.tool_calls[0].function.arguments === calls[0].arguments,
      `collected ${whole.choices[0].message.tool_calls[0].function.arguments} != streamed ${calls[0].arguments}`);
    return `${fragments} deltas`;
  });

  await check('chat tool result in history is accepted', async () => {
    const r = await client.chat.completions.create({
      model, max_tokens: 8, temperature: 0, tools: [weatherTool],
      messages: [...weatherMessages,
        { role: 'assistant', content: null, tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris","unit":"celsius"}' } }] },
        { role: 'tool', tool_call_id: 'call_1', content: '{"temperature": 21}' }],
    });
    assert(r.choices.length === 1 && r.usage.prompt_tokens > 20, `shape ${JSON.stringify(r)}`);
  });
}

if (chatAvailable && reasoning) {
  await check('chat reasoning_content', async () => {
    const req = { model, messages: [{ role: 'user', content: 'Think, then answer.' }], max_tokens: 16, temperature: 0 };
    if (thinkingBudget !== '') req.thinking_token_budget = Number(thinkingBudget);
    const r = await client.chat.completions.create(req);
    const m = r.choices[0].message;
    assert(typeof m.reasoning_content === 'string' && m.reasoning_content.length > 0, `no reasoning_content: ${JSON.stringify(m)}`);
    assert(!(m.content ?? '').includes('<think>') && !(m.content ?? '').includes('</think>'), `tags in content: ${JSON.stringify(m.content)}`);
    const stream = await client.chat.completions.create({ ...req, stream: true });
    let thought = '';
    let text = '';
    for await (const chunk of stream) {
      for (const c of chunk.choices) {
        thought += c.delta.reasoning_content ?? '';
        text += c.delta.content ?? '';
      }
    }
    assert(thought === m.reasoning_content && text === (m.content ?? ''), `stream (${JSON.stringify(thought)}, ${JSON.stringify(text)}) != collected ${JSON.stringify(m)}`);
    return `${JSON.stringify(m.reasoning_content.slice(0, 40))} then ${JSON.stringify((m.content ?? '').slice(0, 40))}`;
  });
}

console.log(failures === 0 ? 'all checks passed' : `${failures} check(s) failed`);
process.exit(failures === 0 ? 0 : 1);
