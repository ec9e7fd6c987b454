/* common.js — what every tide page shares: DOM building without innerHTML (every string from the
 * API goes in as text), the JSON API client with a visible message bar for its errors, the top bar
 * (links, the log path, the live indicator), the /api/status poll that tells pages when the log grew
 * (polls never overlap), a guard that drops stale answers, device names and the server's device
 * colours (same device same colour on every page), number formats and axis ticks. The charts are in
 * charts.js. */
'use strict';

const tide = (() => {
  const UNPLACED = '#d3d3d3';

  /* h('a', {href: u, class: 'x', onclick: f}, 'text', child...): an element. Strings become text
   * nodes; null/undefined/false children are skipped; arrays are flattened. */
  function h(tag, props, ...children) {
    const svgTags = ['svg', 'path', 'line', 'rect', 'g', 'text', 'polyline', 'circle'];
    const e = svgTags.includes(tag) ? document.createElementNS('http://www.w3.org/2000/svg', tag)
                                    : document.createElement(tag);
    for (const [k, v] of Object.entries(props || {})) {
      if (v === undefined || v === null || v === false) continue;
      if (k === 'class') e.setAttribute('class', v);
      else if (k === 'text') e.textContent = String(v);
      else if (k === 'style' && typeof v === 'object') Object.assign(e.style, v);
      else if (k.startsWith('on') && typeof v === 'function') e.addEventListener(k.slice(2), v);
      else if (k === 'value' || k === 'checked' || k === 'selected' || k === 'disabled') e[k] = v;
      else e.setAttribute(k, String(v));
    }
    append(e, children);
    return e;
  }
  function append(e, children) {
    for (const c of children.flat(Infinity)) {
      if (c === null || c === undefined || c === false) continue;
      e.appendChild(c instanceof Node ? c : document.createTextNode(String(c)));
    }
    return e;
  }
  function clear(e) {
    while (e.firstChild) e.removeChild(e.firstChild);
    return e;
  }
  const $ = (sel, root) => (root || document).querySelector(sel);

  /* ------------------------------------------------------------------ message bar */
  let bar = null;
  function message(text, kind) {
    if (!bar) return;
    clear(bar);
    if (!text) { bar.hidden = true; return; }
    bar.className = 'msgbar ' + (kind || 'error');
    append(bar, [h('span', {text}), h('button', {class: 'close', title: 'dismiss', text: '×',
                                                  onclick: () => message('')})]);
    bar.hidden = false;
  }

  /* ------------------------------------------------------------------ API */
  function url(path, params) {
    const q = new URLSearchParams();
    for (const [k, v] of Object.entries(params || {}))
      if (v !== undefined && v !== null && v !== '') q.set(k, String(v));
    const s = q.toString();
    return s ? path + '?' + s : path;
  }
  /* The JSON (or text with opts.text) of GET path?params; null after showing the error in the message
   * bar (opts.quiet: no message). An API error is {"error": "..."}; a 404 is an answer, not a bug. */
  async function api(path, params, opts) {
    opts = opts || {};
    let r;
    try {
      r = await fetch(url(path, params), {headers: {Accept: opts.text ? '*/*' : 'application/json'}});
    } catch (e) {
      if (!opts.quiet) message('cannot reach the tide server (' + path + '): ' + e.message);
      return null;
    }
    let body;
    try { body = opts.text && r.ok ? await r.text() : await r.json(); } catch (e) { body = null; }
    if (!r.ok) {
      const why = body && body.error ? body.error : r.status + ' ' + r.statusText;
      if (!opts.quiet) message(path + ': ' + why);
      return null;
    }
    if (body === null && !opts.quiet) message(path + ': the answer is not valid JSON');
    return body;
  }

  /* A guard for one kind of request whose answers replace each other (a drawing, a run's timeline):
   * guard(fn) runs fn() and resolves with its result, or with STALE when guard was called again
   * meanwhile: a slower earlier answer must not overwrite a newer one. */
  const STALE = Symbol('stale');
  function latest() {
    let generation = 0;
    return async (fn) => {
      const mine = ++generation;
      const result = await fn();
      return mine === generation ? result : STALE;
    };
  }

  /* ------------------------------------------------------------------ URL state */
  const params = () => new URLSearchParams(location.search);
  function setParams(obj, push) {
    const q = params();
    for (const [k, v] of Object.entries(obj))
      if (v === undefined || v === null || v === '' || (Array.isArray(v) && !v.length)) q.delete(k);
      else q.set(k, Array.isArray(v) ? v.join(',') : String(v));
    const s = q.toString();
    const u = location.pathname + (s ? '?' + s : '');
    if (push) history.pushState(null, '', u); else history.replaceState(null, '', u);
  }

  /* ------------------------------------------------------------------ top bar and live poll */
  let liveDot = null, pathSpan = null, lastStatus = null;
  const listeners = [];
  const POLL_MS = 2000;
  function topbar(active) {
    const links = [['Runs', '/', 'runs'], ['Graph', '/graph', 'graph'], ['Timeline', '/timeline', 'timeline'],
                   ['Tensors', '/tensor', 'tensor'], ['Compare', '/compare', 'compare']];
    liveDot = h('span', {class: 'live', title: 'live: polling /api/status every 2 s'});
    pathSpan = h('span', {class: 'logpath'});
    const nav = h('nav', {class: 'topbar'}, h('a', {class: 'brand', href: '/', text: 'tide'}),
      links.map(([t, u, k]) => h('a', {href: u, class: k === active ? 'active' : null, text: t})),
      h('span', {class: 'spacer'}), pathSpan, liveDot);
    bar = h('div', {class: 'msgbar', hidden: true, role: 'alert'});
    document.body.prepend(nav, bar);
    pollLoop();
  }
  /* f(status, changed) after every poll that changed last_run, last_graph, sessions or runs (and once
   * at the start, with changed = {first: true}). f may be async: the next poll waits for it. */
  function onStatus(f) {
    listeners.push(f);
    if (lastStatus) f(lastStatus, {first: true});
  }
  /* Polls never overlap: the next starts POLL_MS after the previous one (and the refreshes it
   * triggered) finished, however slow the server or the page is. */
  async function pollLoop() {
    try { await poll(); } finally { setTimeout(pollLoop, POLL_MS); }
  }
  async function poll() {
    const s = await api('/api/status', null, {quiet: true});
    if (liveDot) {
      liveDot.classList.toggle('down', !s);
      liveDot.title = s ? 'live: the log is polled every 2 s' : 'the server does not answer';
    }
    if (!s) return;
    if (pathSpan) {
      pathSpan.textContent = s.path + ' · ' + s.runs + ' runs · ' + fmtBytes(s.bytes);
      pathSpan.title = s.path;
    }
    const old = lastStatus;
    lastStatus = s;
    const changed = old ? {run: old.last_run !== s.last_run, graph: old.last_graph !== s.last_graph,
                           sessions: old.sessions !== s.sessions}
                        : {first: true, run: true, graph: true, sessions: true};
    if (old && !changed.run && !changed.graph && !changed.sessions) return;
    await Promise.all(listeners.map(async (f) => {
      try { await f(s, changed); } catch (e) { message('refresh failed: ' + e.message); }
    }));
  }

  /* ------------------------------------------------------------------ names, colours, numbers */
  /* Device colours come from the server (viz/: one palette per session, in the order of its devices),
   * so the graph, the timeline and the tables agree: devices(session) reads them once per session from
   * /api/devices; colorOf(table, device) looks one up (grey when unplaced or unknown). */
  const deviceTables = new Map();
  async function devices(session) {
    const key = String(session || 0);
    if (!deviceTables.has(key)) {
      const d = await api('/api/devices', {session: session || null}, {quiet: true});
      if (!d) return {devices: [], unplaced: UNPLACED};
      deviceTables.set(key, d);
    }
    return deviceTables.get(key);
  }
  function colorOf(table, device) {
    const e = table && table.devices && device ? table.devices.find((x) => x.device === device) : null;
    return e ? e.color : UNPLACED;
  }
  function fmtNum(v, digits) {
    if (v === null || v === undefined) return '–';
    if (typeof v === 'string') return v;
    if (!isFinite(v)) return String(v);
    if (Number.isInteger(v) && Math.abs(v) < 1e15) return String(v);
    const a = Math.abs(v);
    if (a !== 0 && (a < 1e-3 || a >= 1e6)) return v.toExponential(digits || 3);
    return Number(v.toPrecision(digits || 5)).toString();
  }
  function fmtUs(us) {
    if (us === null || us === undefined) return '–';
    const a = Math.abs(us);
    if (a >= 1e6) return (us / 1e6).toFixed(a >= 1e7 ? 1 : 2) + ' s';
    if (a >= 1e3) return (us / 1e3).toFixed(a >= 1e4 ? 1 : 2) + ' ms';
    return (a >= 10 ? us.toFixed(0) : us.toFixed(1)) + ' µs';
  }
  function fmtBytes(b) {
    if (b === null || b === undefined) return '–';
    const u = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
    let i = 0;
    while (Math.abs(b) >= 1024 && i < u.length - 1) { b /= 1024; i++; }
    return (i ? b.toFixed(1) : String(b)) + ' ' + u[i];
  }
  /* "name:0" -> "name"; "^name" (a control input) -> "name". */
  const inputNode = (s) => String(s).replace(/^\^/, '').replace(/:\d+$/, '');

  /* A table: columns [{label, get(row) -> string|Node, num}], rows. */
  function table(columns, rows, cls) {
    return h('table', {class: cls || 'grid'},
      h('thead', null, h('tr', null, columns.map((c) => h('th', {class: c.num ? 'num' : null, text: c.label})))),
      h('tbody', null, rows.map((r) => h('tr', null, columns.map((c) => {
        const v = c.get(r);
        return h('td', {class: c.num ? 'num' : null}, v instanceof Node ? v : (v === null || v === undefined ? '–' : String(v)));
      })))));
  }
  /* A table sorted by a column on a click of its header (again: the other way): columns [{label, key,
   * get(row) -> string|Node, num, value(row) -> what sorts}], rows; starts sorted by sort = {key, desc}.
   * The header of the sorted column carries data-sort="asc"|"desc". */
  function sortableTable(columns, rows, sort, cls) {
    const body = h('tbody');
    const heads = columns.map((c) => h('th', {class: c.num ? 'num sortable' : 'sortable', text: c.label, 'data-key': c.key,
      onclick: () => { sort = {key: c.key, desc: sort.key === c.key ? !sort.desc : !!c.num}; render(); }}));
    function render() {
      const col = columns.find((c) => c.key === sort.key) || columns[0];
      const value = col.value || col.get;
      const sorted = rows.slice().sort((a, b) => {
        const x = value(a), y = value(b);
        const d = typeof x === 'number' && typeof y === 'number' ? x - y : String(x).localeCompare(String(y));
        return sort.desc ? -d : d;
      });
      heads.forEach((th, i) => { if (columns[i].key === col.key) th.dataset.sort = sort.desc ? 'desc' : 'asc'; else delete th.dataset.sort; });
      clear(body);
      for (const r of sorted)
        body.appendChild(h('tr', null, columns.map((c) => {
          const v = c.get(r);
          return h('td', {class: c.num ? 'num' : null}, v instanceof Node ? v : (v === null || v === undefined ? '–' : String(v)));
        })));
    }
    render();
    return h('table', {class: cls || 'grid'}, h('thead', null, h('tr', null, heads)), body);
  }
  function option(value, label, selected) {
    return h('option', {value: String(value), text: label, selected: !!selected});
  }

  /* A number of the API: JSON has no NaN nor infinities, so the server writes them as the strings
   * "NaN", "Infinity" and "-Infinity" (docs/web.md); null (unknown) stays null. */
  function num(v) {
    if (v === null || v === undefined) return null;
    return typeof v === 'number' ? v : Number(v);
  }

  /* About n round values (steps of 1, 2 or 5 times a power of ten) from a to b. */
  function ticks(a, b, n) {
    const step0 = (b - a) / n, mag = Math.pow(10, Math.floor(Math.log10(step0)));
    const step = [1, 2, 5, 10].map((m) => m * mag).find((s) => s >= step0) || step0;
    const out = [], first = Math.ceil(a / step);
    for (let i = 0; i <= 4 * n; i++) { /* by index: a step too small for t's magnitude must not loop for ever */
      const t = (first + i) * step;
      if (t > b + 1e-12) break;
      out.push(Math.abs(t) < step * 1e-9 ? 0 : t);
    }
    return out;
  }
  return {h, append, clear, $, api, url, message, params, setParams, topbar, onStatus,
          devices, colorOf, fmtNum, fmtUs, fmtBytes, inputNode, table, sortableTable, option, num, ticks,
          latest, STALE, UNPLACED, status: () => lastStatus};
})();
