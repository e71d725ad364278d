// Shared by the chat and the status page: DOM building (text only), the
// API key, and the key dialog.
'use strict';

const LL = (() => {
  const KEY = 'lightllm.apiKey';

  // el builds an element; string children become text nodes, never HTML.
  function el(tag, attrs, ...children) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === null || v === undefined || v === false) continue;
      if (k === 'class') e.className = v;
      else if (k === 'text') e.textContent = v;
      else if (k.startsWith('on')) e.addEventListener(k.slice(2), v);
      else e.setAttribute(k, v === true ? '' : String(v));
    }
    for (const c of children.flat()) {
      if (c === null || c === undefined || c === false) continue;
      e.append(c instanceof Node ? c : document.createTextNode(String(c)));
    }
    return e;
  }

  // The key lives for the tab only (sessionStorage): closing it forgets it.
  function apiKey() { return sessionStorage.getItem(KEY) || ''; }
  function setAPIKey(k) {
    if (k) sessionStorage.setItem(KEY, k); else sessionStorage.removeItem(KEY);
  }

  function headers() {
    const h = { 'Content-Type': 'application/json' };
    const k = apiKey();
    if (k) h.Authorization = 'Bearer ' + k;
    return h;
  }

  // askKey opens the page's key dialog; resolves to the key, or '' when
  // cancelled. Enter confirms, Escape cancels.
  function askKey(why) {
    const dlg = document.getElementById('keydlg');
    const input = dlg.querySelector('input');
    dlg.querySelector('.why').textContent = why || 'This server needs an API key.';
    input.value = apiKey();
    return new Promise((resolve) => {
      const done = (ok) => {
        dlg.close();
        cleanup();
        if (ok) setAPIKey(input.value.trim());
        resolve(ok ? input.value.trim() : '');
      };
      const onKey = (ev) => { if (ev.key === 'Enter') { ev.preventDefault(); done(true); } };
      const ok = () => done(true);
      const cancel = () => done(false);
      const onCancel = (ev) => { ev.preventDefault(); done(false); };
      const okBtn = dlg.querySelector('.ok');
      const cancelBtn = dlg.querySelector('.cancel');
      function cleanup() {
        input.removeEventListener('keydown', onKey);
        okBtn.removeEventListener('click', ok);
        cancelBtn.removeEventListener('click', cancel);
        dlg.removeEventListener('cancel', onCancel);
      }
      input.addEventListener('keydown', onKey);
      okBtn.addEventListener('click', ok);
      cancelBtn.addEventListener('click', cancel);
      dlg.addEventListener('cancel', onCancel);
      dlg.showModal();
      input.focus();
    });
  }

  // ensureKey asks for the key up front when the server needs one and the
  // tab has none, so that no call fails with 401 first.
  async function ensureKey(why) {
    try {
      const r = await fetch('/dashboard/auth');
      if (r.ok && (await r.json()).api_key_required && !apiKey()) await askKey(why);
    } catch (_) { /* unreachable: the page's own calls report it */ }
  }

  // errorText pulls the message out of an OpenAI-style error body.
  async function errorText(resp) {
    const raw = await resp.text();
    try {
      const j = JSON.parse(raw);
      if (j && j.error && j.error.message) return j.error.message;
    } catch (_) { /* not JSON: show it as it is */ }
    return raw || resp.statusText;
  }

  function toast(msg) {
    const t = el('div', { class: 'toast', role: 'status' }, msg);
    document.body.append(t);
    setTimeout(() => t.remove(), 2500);
  }

  async function copy(text) {
    try {
      await navigator.clipboard.writeText(text);
      toast('Copied');
    } catch (_) {
      toast('Copying needs a secure page (https or localhost)');
    }
  }

  function duration(s) {
    if (!(s >= 0)) return '–';
    if (s < 60) return s.toFixed(1) + 's';
    if (s < 3600) return Math.floor(s / 60) + 'm ' + Math.floor(s % 60) + 's';
    if (s < 86400) return Math.floor(s / 3600) + 'h ' + Math.floor((s % 3600) / 60) + 'm';
    return Math.floor(s / 86400) + 'd ' + Math.floor((s % 86400) / 3600) + 'h';
  }

  return { el, apiKey, setAPIKey, headers, askKey, ensureKey, errorText, toast, copy, duration };
})();
