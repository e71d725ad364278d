// A small Markdown renderer for model output. It never parses HTML: every
// piece of the text becomes a text node (textContent) inside elements this
// code creates, so whatever the model writes — <script>, <img onerror>,
// entities — shows as the characters it is. Links get an href only for
// http(s) URLs. Handles what chat models write: paragraphs, fenced code
// (also unterminated, while streaming), inline code, **bold**, *italic*,
// headings, lists, block quotes.
'use strict';

const LLmd = (() => {
  const el = LL.el;
  const inlineSrc = /(`+)([\s\S]*?[^`])\1(?!`)|\*\*([^*\n]+?)\*\*|(?<!\w)__([^_\n]+?)__(?!\w)|\*([^*\s][^*\n]*?)\*|\[([^\]\n]+)\]\((https?:\/\/[^\s)]+)\)/g;

  // inline appends text with inline markup to parent.
  function inline(parent, text) {
    let last = 0;
    const re = new RegExp(inlineSrc.source, 'g'); // its own: nested calls must not move the outer's lastIndex
    for (let m; (m = re.exec(text)) !== null;) {
      if (m.index > last) parent.append(document.createTextNode(text.slice(last, m.index)));
      if (m[2] !== undefined) parent.append(el('code', { text: m[2] }));
      else if (m[3] !== undefined || m[4] !== undefined) inline(parent.appendChild(el('strong')), m[3] ?? m[4]);
      else if (m[5] !== undefined) inline(parent.appendChild(el('em')), m[5]);
      else if (m[6] !== undefined) {
        const a = el('a', { rel: 'noopener noreferrer nofollow', target: '_blank', text: m[6] });
        a.href = m[7]; // the regexp admits http(s) only
        parent.append(a);
      }
      last = re.lastIndex;
    }
    if (last < text.length) parent.append(document.createTextNode(text.slice(last)));
  }

  function codeBlock(lang, code) {
    const pre = el('pre');
    const c = el('code', { text: code });
    if (lang) c.dataset.lang = lang;
    pre.append(el('button', { class: 'copy', type: 'button', title: 'Copy code', onclick: () => LL.copy(code) }, 'copy'), c);
    return pre;
  }

  const fenceRe = /^\s*(```|~~~)\s*([\w+#.-]*)\s*$/;
  const headRe = /^(#{1,6})\s+(.*)$/;
  const itemRe = /^\s*([-*+]|\d{1,9}[.)])\s+(.*)$/;
  const quoteRe = /^\s*>\s?(.*)$/;

  // render returns a fragment for text.
  function render(text) {
    const out = document.createDocumentFragment();
    const lines = String(text).split('\n');
    let para = [];
    const flush = () => {
      if (para.length) {
        const p = el('p');
        inline(p, para.join('\n'));
        out.append(p);
        para = [];
      }
    };
    for (let i = 0; i < lines.length; i++) {
      const line = lines[i];
      let m;
      if ((m = fenceRe.exec(line))) {
        flush();
        const body = [];
        for (i++; i < lines.length && !(lines[i].trim().startsWith(m[1]) && lines[i].trim().replace(/[`~]/g, '') === ''); i++) body.push(lines[i]);
        out.append(codeBlock(m[2], body.join('\n')));
      } else if ((m = headRe.exec(line))) {
        flush();
        const h = el('h' + Math.min(m[1].length + 1, 6));
        inline(h, m[2]);
        out.append(h);
      } else if (itemRe.test(line)) {
        flush();
        const ordered = /^\s*\d/.test(line);
        const list = el(ordered ? 'ol' : 'ul');
        for (; i < lines.length && (m = itemRe.exec(lines[i])) && /^\s*\d/.test(lines[i]) === ordered; i++) {
          const li = el('li');
          inline(li, m[2]);
          list.append(li);
        }
        i--;
        out.append(list);
      } else if (quoteRe.test(line)) {
        flush();
        const q = [];
        for (; i < lines.length && (m = quoteRe.exec(lines[i])); i++) q.push(m[1]);
        i--;
        const bq = el('blockquote');
        inline(bq, q.join('\n'));
        out.append(bq);
      } else if (line.trim() === '') {
        flush();
      } else {
        para.push(line);
      }
    }
    flush();
    return out;
  }

  return { render };
})();
