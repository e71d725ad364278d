// The status page: polls /dashboard/status every second (fetch rather
// than EventSource, which cannot send the Authorization header) and draws
// the roles, the load, the latency percentiles and a tokens/s chart.
'use strict';

(() => {
  const { el } = LL;
  const $ = (id) => document.getElementById(id);
  const POLL_MS = 1000;
  const SVG = 'http://www.w3.org/2000/svg';
  let last = null;
  let keyAsked = false; // ask once by itself; then the banner's button asks

  const pct = (x) => (x === null || x === undefined ? '–' : (100 * x).toFixed(1) + '%');
  // Tokens often reach the server in bursts, so gaps under a millisecond are common: show them in µs.
  const msText = (v) => (v >= 1000 ? (v / 1000).toFixed(2) + ' s' : v >= 10 ? v.toFixed(0) + ' ms' : v >= 1 ? v.toFixed(1) + ' ms' : Math.round(v * 1000) + ' µs');

  function setText(id, text) { $(id).textContent = text; }

  function latency(prefix, p) {
    if (!p || !p.count) {
      setText(prefix, '–');
      setText(prefix + 'sub', 'no samples in 5 min');
      return;
    }
    setText(prefix, msText(p.p50_ms));
    setText(prefix + 'sub', 'p50 · p90 ' + msText(p.p90_ms) + ' · p99 ' + msText(p.p99_ms) + ' · n=' + p.count);
  }

  function chart(series) {
    const svg = $('chart');
    const W = 600, H = 150, top = 4, bottom = 2;
    const n = series.length;
    const peak = Math.max(1, ...series);
    const x = (i) => (i / Math.max(n - 1, 1)) * W;
    const y = (v) => top + (H - top - bottom) * (1 - v / peak);
    const pts = series.map((v, i) => x(i).toFixed(1) + ',' + y(v).toFixed(1)).join(' ');
    const mk = (tag, attrs, text) => {
      const e = document.createElementNS(SVG, tag);
      for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
      if (text !== undefined) e.textContent = text;
      return e;
    };
    svg.replaceChildren(
      mk('line', { class: 'axis', x1: 0, y1: y(0), x2: W, y2: y(0) }),
      mk('line', { class: 'axis', x1: 0, y1: y(peak), x2: W, y2: y(peak), 'stroke-dasharray': '3 3' }),
      mk('polygon', { points: '0,' + y(0) + ' ' + pts + ' ' + W + ',' + y(0), fill: 'currentColor', 'fill-opacity': '0.15' }),
      mk('polyline', { points: pts, fill: 'none', stroke: 'currentColor', 'stroke-width': '1.5', 'vector-effect': 'non-scaling-stroke' }));
    // Labels live outside the SVG, which stretches to the box's width.
    setText('peak', Math.max(0, ...series) > 0 ? 'peak ' + peak + ' tok/s (dashed line)' : 'no tokens generated in the last 5 minutes');
  }

  function stateBadge(r) {
    const cls = r.state === 'ready' ? 'ok' : r.state === 'starting' || r.state === 'stopping' ? 'warn' : 'bad';
    return el('span', { class: 'badge ' + cls }, r.state);
  }

  async function restart(role, btn) {
    if (!LL.apiKey() && !(await LL.askKey('Restarting ' + role + ' needs the server\'s API key.'))) return;
    btn.disabled = true;
    try {
      for (let attempt = 0; attempt < 2; attempt++) {
        const r = await fetch('/dashboard/restart', { method: 'POST', headers: LL.headers(), body: JSON.stringify({ role }) });
        if (r.ok) {
          LL.toast('Restart of ' + role + ' requested');
          return;
        }
        const msg = await LL.errorText(r);
        if (r.status === 401 && attempt === 0 && (await LL.askKey('The key was refused: ' + msg))) continue;
        LL.toast('Restart refused: ' + msg);
        return;
      }
    } catch (e) {
      LL.toast('Restart failed: ' + e.message);
    } finally {
      btn.disabled = false;
    }
  }

  function roles(st) {
    const tb = $('roles');
    tb.replaceChildren(...st.roles.map((r) => {
      const btn = el('button', { type: 'button', class: 'small', disabled: !st.restart_enabled,
        title: st.restart_enabled ? 'Restart ' + r.role : 'Restarting from this page needs --api_key' }, 'Restart');
      btn.addEventListener('click', () => restart(r.role, btn));
      return el('tr', { 'data-role': r.role },
        el('td', {}, r.role),
        el('td', { class: 'pid mono' }, r.pid ? String(r.pid) : '–'),
        el('td', { class: 'state' }, stateBadge(r)),
        el('td', { class: 'uptime' }, r.pid ? LL.duration(r.uptime_seconds) : '–'),
        el('td', { class: 'restarts' }, String(r.restarts)),
        el('td', {}, r.heartbeat_age_seconds === null || r.heartbeat_age_seconds === undefined ? '–' : r.heartbeat_age_seconds.toFixed(1) + 's ago'),
        el('td', { class: 'exit' }, r.last_exit || '–'),
        el('td', {}, btn));
    }));
    let hint = '';
    if (st.roles_error) hint = 'No role view: ' + st.roles_error;
    else if (!st.restart_enabled) hint = 'Restarting roles from this page needs the server started with --api_key; `lightllm restart ROLE` works meanwhile.';
    setText('roleshint', hint);
    setText('supervisor', st.supervisor ? '· instance ' + st.supervisor.instance + ' · supervisor pid ' + st.supervisor.pid + ' · ' + st.supervisor.phase : '');
  }

  function config(st) {
    const rows = [['model', st.model], ['model_dir', st.model_dir], ['chat template', st.chat ? 'yes' : 'no' + (st.chat_error ? ' (' + st.chat_error + ')' : '')]];
    for (const [k, v] of Object.entries(st.config || {})) if (k !== 'model_dir') rows.push([k, typeof v === 'string' ? v : JSON.stringify(v)]);
    $('config').replaceChildren(...rows.map(([k, v]) => el('tr', {}, el('th', {}, k), el('td', { class: 'mono' }, v))));
  }

  function render(st) {
    setText('model', st.model);
    const h = $('health');
    const good = st.ready && st.healthy && !st.draining;
    h.textContent = st.draining ? 'draining' : !st.ready ? 'loading' : st.healthy ? 'healthy' : 'unhealthy';
    h.className = 'badge ' + (good ? 'ok' : 'bad');
    const l = st.load;
    setText('running', l ? String(l.running) : '–');
    setText('waiting', l ? String(l.waiting) : '–');
    setText('inflight', st.in_flight + ' HTTP request' + (st.in_flight === 1 ? '' : 's') + ' in flight');
    const t = st.traffic;
    setText('requests', t.requests_admitted + ' admitted · ' + t.requests_finished + ' done · ' + t.requests_cancelled + ' cancelled · ' + t.requests_failed + ' failed');
    if (l && l.kv_capacity > 0) {
      setText('kv', pct(l.kv_usage));
      $('kvbar').style.width = (100 * l.kv_usage).toFixed(1) + '%';
      setText('kvsub', l.kv_used + ' / ' + l.kv_capacity + ' tokens · ' + l.kv_evictable + ' cached');
    } else {
      setText('kv', '–');
      setText('kvsub', 'capacity not known yet');
    }
    setText('hit', pct(t.prompt_cache_hit_rate));
    setText('hitsub', t.cached_prompt_tokens + ' of ' + t.prompt_tokens + ' prompt tokens, 5 min');
    const s = t.tokens_per_second;
    const recent = s.slice(-5);
    setText('tps', (recent.reduce((a, b) => a + b, 0) / Math.max(recent.length, 1)).toFixed(1));
    latency('ttft', t.ttft);
    latency('itl', t.itl);
    chart(s);
    roles(st);
    config(st);
  }

  async function poll() {
    try {
      const r = await fetch('/dashboard/status', { headers: LL.headers(), cache: 'no-store' });
      if (r.status === 401) {
        await r.text();
        if (!keyAsked) {
          keyAsked = true;
          await LL.askKey('This server needs its API key (--api_key) to show its status.');
        }
        const b = $('banner');
        b.replaceChildren('This server needs its API key. ', el('button', { type: 'button', onclick: () => LL.askKey() }, 'Enter key…'));
        b.classList.remove('hidden');
        return;
      }
      if (!r.ok) throw new Error(r.status + ': ' + await LL.errorText(r));
      last = await r.json();
      $('banner').classList.add('hidden');
      render(last);
      document.body.dataset.updated = last.time;
    } catch (e) {
      const b = $('banner');
      b.textContent = 'Cannot reach the server (' + e.message + '); retrying…' + (last ? ' Showing the last answer.' : '');
      b.classList.remove('hidden');
    } finally {
      setTimeout(poll, POLL_MS);
    }
  }

  LL.ensureKey('This server needs its API key (--api_key) to show its status.').then(poll);
})();
