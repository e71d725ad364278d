// The chat playground: conversations kept in localStorage, streamed from
// /v1/chat/completions (or /v1/completions for a model without a chat
// template), rendered through LLmd (text nodes only).
'use strict';

(() => {
  const { el } = LL;
  const $ = (id) => document.getElementById(id);
  const CHATS = 'lightllm.chats';
  const CURRENT = 'lightllm.current';
  const SETTINGS = 'lightllm.settings';
  const MAX_CONVS = 50;
  const defaults = { system: '', temperature: 0.7, top_p: 1, max_tokens: 256, seed: '', stop: '', api: 'auto' };

  function load(key, dflt) {
    try {
      const v = JSON.parse(localStorage.getItem(key));
      return v === null ? dflt : v;
    } catch (_) {
      return dflt;
    }
  }

  const S = {
    status: null,
    convs: load(CHATS, []),
    cur: localStorage.getItem(CURRENT) || '',
    settings: Object.assign({}, defaults, load(SETTINGS, {})),
    busy: null, // {ctrl, msg} while a request runs
  };
  if (!Array.isArray(S.convs)) S.convs = [];
  // An answer that was streaming when the page went away stays cut short.
  for (const c of S.convs) for (const m of c.messages || []) if (m.state === 'streaming') m.state = 'stopped';

  function save() {
    S.convs = S.convs.slice(0, MAX_CONVS);
    try {
      localStorage.setItem(CHATS, JSON.stringify(S.convs));
      localStorage.setItem(CURRENT, S.cur);
    } catch (_) {
      LL.toast('Browser storage is full: older conversations were not saved');
    }
  }

  function current() { return S.convs.find((c) => c.id === S.cur) || null; }

  function newConv() {
    const c = { id: Date.now().toString(36) + Math.random().toString(36).slice(2, 6), title: 'New chat', messages: [] };
    S.convs.unshift(c);
    S.cur = c.id;
    save();
    return c;
  }

  // endpoint: which API the next request uses.
  function endpoint() {
    const a = S.settings.api;
    if (a === 'chat' || a === 'completions') return a;
    return S.status && S.status.chat === false ? 'completions' : 'chat';
  }

  // ---- settings panel ----
  const fields = ['system', 'temperature', 'top_p', 'max_tokens', 'seed', 'stop', 'api'];
  function showSettings() {
    for (const f of fields) $(f).value = S.settings[f];
    $('mode').textContent = '· ' + (endpoint() === 'chat' ? '/v1/chat/completions' : '/v1/completions');
  }
  for (const f of fields) {
    $(f).addEventListener('change', () => {
      S.settings[f] = $(f).value;
      localStorage.setItem(SETTINGS, JSON.stringify(S.settings));
      showSettings();
    });
  }
  $('setkey').addEventListener('click', () => LL.askKey('The key is kept for this tab only and sent as Authorization: Bearer.'));

  // ---- rendering ----
  function renderConvs() {
    const ul = $('convs');
    ul.replaceChildren(...S.convs.map((c) => el('li', { class: c.id === S.cur ? 'current' : '' },
      el('button', { class: 'open', type: 'button', title: c.title, onclick: () => { S.cur = c.id; save(); renderAll(); } }, c.title),
      el('button', { class: 'del', type: 'button', title: 'Delete conversation', 'aria-label': 'Delete ' + c.title,
        onclick: () => remove(c.id) }, '×'))));
  }

  function remove(id) {
    if (S.busy) return;
    S.convs = S.convs.filter((c) => c.id !== id);
    if (S.cur === id) S.cur = S.convs.length ? S.convs[0].id : '';
    save();
    renderAll();
  }

  function statsText(st) {
    if (!st) return '';
    const parts = [st.tokens + ' tokens'];
    if (st.tps) parts.push(st.tps.toFixed(1) + ' tok/s');
    if (st.ttft_ms !== undefined) parts.push('TTFT ' + Math.round(st.ttft_ms) + ' ms');
    if (st.finish) parts.push(st.finish);
    return parts.join(' · ');
  }

  // fillMessage (re)draws one message into its element.
  function fillMessage(box, m) {
    box.className = 'msg ' + m.role + (m.state === 'error' ? ' error' : '');
    box.dataset.state = m.state || 'done';
    const body = el('div', { class: 'body' + (m.state === 'streaming' ? ' cursor' : '') });
    body.append(LLmd.render(m.content || ''));
    const parts = [el('div', { class: 'who' }, m.role === 'user' ? 'You' : 'Model',
      m.state === 'stopped' ? el('span', { class: 'badge warn' }, 'stopped') : null,
      el('button', { class: 'copy', type: 'button', title: 'Copy message', onclick: () => LL.copy(m.content || '') }, 'copy'))];
    if (m.reasoning) {
      const d = el('details', { class: 'reasoning' }, el('summary', {}, 'Reasoning'));
      d.append(el('div', { class: 'body' }, LLmd.render(m.reasoning)));
      parts.push(d);
    }
    if (m.tools && m.tools.length) {
      const d = el('details', { class: 'tools', open: true }, el('summary', {}, 'Tool calls (' + m.tools.length + ')'));
      for (const t of m.tools) d.append(el('pre', {}, el('code', { text: (t.name || '?') + '(' + (t.arguments || '') + ')' })));
      parts.push(d);
    }
    parts.push(body);
    if (m.error) parts.push(el('div', { class: 'body' }, m.error));
    if (m.stats) parts.push(el('div', { class: 'stats' }, statsText(m.stats)));
    box.replaceChildren(...parts);
  }

  function renderMessages() {
    const c = current();
    const box = $('messages');
    if (!c || !c.messages.length) {
      box.replaceChildren(el('div', { class: 'empty' }, 'Send a message to start.',
        S.status ? el('div', { class: 'small' }, 'Model: ' + S.status.model) : null));
      return;
    }
    box.replaceChildren(...c.messages.map((m) => { const d = el('div'); fillMessage(d, m); return d; }));
    box.scrollTop = box.scrollHeight;
  }

  function renderAll() { renderConvs(); renderMessages(); showSettings(); }

  function setBusy(on) {
    $('send').classList.toggle('hidden', on);
    $('stop-btn').classList.toggle('hidden', !on);
    $('new').disabled = on;
  }

  // ---- requests ----
  function buildRequest(conv) {
    const st = S.settings;
    const msgs = conv.messages.slice(0, -1); // all but the pending answer
    const body = { stream: true, stream_options: { include_usage: true } };
    if (S.status && S.status.model) body.model = S.status.model;
    const num = (v) => (v === '' || v === null || v === undefined ? undefined : Number(v));
    if (num(st.temperature) !== undefined) body.temperature = num(st.temperature);
    if (num(st.top_p) !== undefined) body.top_p = num(st.top_p);
    if (num(st.max_tokens) !== undefined) body.max_tokens = num(st.max_tokens);
    if (num(st.seed) !== undefined) body.seed = num(st.seed);
    const stop = String(st.stop || '').split('\n').filter((s) => s !== '');
    if (stop.length) body.stop = stop;
    if (endpoint() === 'chat') {
      body.messages = (st.system ? [{ role: 'system', content: st.system }] : [])
        .concat(msgs.map((m) => ({ role: m.role, content: m.content })));
      return ['/v1/chat/completions', body];
    }
    body.prompt = (st.system || '') + msgs.map((m) => m.content).join('');
    return ['/v1/completions', body];
  }

  async function post(url, body, signal) {
    const opts = () => ({ method: 'POST', headers: LL.headers(), body: JSON.stringify(body), signal });
    let resp = await fetch(url, opts());
    if (resp.status === 401) {
      await resp.text();
      if (await LL.askKey('This server needs its API key (--api_key) for ' + url + '.')) resp = await fetch(url, opts());
    }
    return resp;
  }

  async function generate(conv, msg, box) {
    const [url, body] = buildRequest(conv);
    const ctrl = new AbortController();
    S.busy = { ctrl, msg };
    setBusy(true);
    const t0 = performance.now();
    let tFirst = 0, tLast = 0, events = 0, usage = null, finish = '';
    const tools = [];
    const onEvent = (raw) => {
      for (const line of raw.split('\n')) {
        if (!line.startsWith('data:')) continue;
        const data = line.slice(5).trim();
        if (data === '[DONE]') continue;
        const j = JSON.parse(data);
        if (j.error) throw new Error(j.error.message || 'the server reported an error');
        if (j.usage) usage = j.usage;
        const ch = (j.choices || [])[0];
        if (!ch) continue;
        const d = ch.delta || {};
        const piece = url.endsWith('/chat/completions') ? (d.content || '') : (ch.text || '');
        if (piece || d.reasoning_content || d.tool_calls) {
          const now = performance.now();
          if (!tFirst) tFirst = now;
          tLast = now;
          events++;
        }
        msg.content += piece;
        if (d.reasoning_content) msg.reasoning = (msg.reasoning || '') + d.reasoning_content;
        for (const tc of d.tool_calls || []) {
          const k = tc.index || 0;
          tools[k] = tools[k] || { name: '', arguments: '' };
          if (tc.function && tc.function.name) tools[k].name += tc.function.name;
          if (tc.function && tc.function.arguments) tools[k].arguments += tc.function.arguments;
          msg.tools = tools.filter(Boolean);
        }
        if (ch.finish_reason) finish = ch.finish_reason;
      }
    };
    try {
      const resp = await post(url, body, ctrl.signal);
      if (!resp.ok) throw new Error(resp.status + ': ' + await LL.errorText(resp));
      const reader = resp.body.getReader();
      const dec = new TextDecoder();
      let buf = '';
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        buf += dec.decode(value, { stream: true });
        let i;
        while ((i = buf.indexOf('\n\n')) >= 0) {
          onEvent(buf.slice(0, i));
          buf = buf.slice(i + 2);
        }
        fillMessage(box, msg); // once per network chunk: the text grows as it arrives
        const list = $('messages');
        list.scrollTop = list.scrollHeight;
      }
      msg.state = 'done';
    } catch (e) {
      if (e.name === 'AbortError') {
        msg.state = 'stopped';
      } else {
        msg.state = 'error';
        msg.error = e.message;
      }
    } finally {
      S.busy = null;
      setBusy(false);
      const tokens = usage ? usage.completion_tokens : events;
      msg.stats = { tokens, finish: msg.state === 'done' ? finish : msg.state };
      if (tFirst) msg.stats.ttft_ms = tFirst - t0;
      if (tokens > 1 && tLast > tFirst) msg.stats.tps = (tokens - 1) / ((tLast - tFirst) / 1000);
      save();
      fillMessage(box, msg);
      $('input').focus();
    }
  }

  async function send() {
    const input = $('input');
    const text = input.value;
    if (S.busy || !text.trim()) return;
    input.value = '';
    autosize();
    const conv = current() || newConv();
    conv.messages.push({ role: 'user', content: text });
    if (conv.title === 'New chat') conv.title = text.trim().slice(0, 40);
    const msg = { role: 'assistant', content: '', state: 'streaming' };
    conv.messages.push(msg);
    save();
    renderAll();
    const boxes = $('messages').children;
    await generate(conv, msg, boxes[boxes.length - 1]);
  }

  function stop() { if (S.busy) S.busy.ctrl.abort(); }

  function autosize() {
    const t = $('input');
    t.style.height = 'auto';
    t.style.height = Math.min(t.scrollHeight + 2, 200) + 'px';
  }

  $('send').addEventListener('click', send);
  $('stop-btn').addEventListener('click', stop);
  $('new').addEventListener('click', () => {
    if (S.busy) return;
    const c = current();
    if (!c || c.messages.length) newConv(); // an empty conversation is reused
    renderAll();
    $('input').focus();
  });
  $('input').addEventListener('input', autosize);
  $('input').addEventListener('keydown', (ev) => {
    if (ev.key === 'Enter' && !ev.shiftKey && !ev.isComposing) {
      ev.preventDefault();
      send();
    }
  });
  document.addEventListener('keydown', (ev) => { if (ev.key === 'Escape' && S.busy) stop(); });

  async function loadStatus() {
    await LL.ensureKey('This server needs its API key (--api_key). It is kept for this tab only.');
    try {
      let r = await fetch('/dashboard/status', { headers: LL.headers() });
      if (r.status === 401) {
        await r.text();
        if (await LL.askKey('This server needs its API key (--api_key).')) r = await fetch('/dashboard/status', { headers: LL.headers() });
      }
      if (!r.ok) throw new Error(await LL.errorText(r));
      S.status = await r.json();
      $('model').textContent = S.status.model;
      const h = $('health');
      h.textContent = S.status.ready ? (S.status.healthy ? 'ready' : 'unhealthy') : 'loading';
      h.className = 'badge ' + (S.status.ready && S.status.healthy ? 'ok' : 'warn');
    } catch (e) {
      $('health').textContent = 'unreachable';
      $('health').className = 'badge bad';
    }
    renderAll();
  }

  renderAll();
  loadStatus();
  $('input').focus();
})();
