/* common.js — what every tide page shares: DOM building without innerHTML (every string from the
 * API goes in as text), the JSON API client with a visible message bar for its errors, the top bar
 * (links, the log path, the live indicator), the /api/status poll that tells pages when the log grew
 * (polls never overlap), a guard that drops stale answers, device names and the server's device
 * colours (same device same colour on every page), number formats, and a small canvas line chart with
 * hover values used by the runs and tensor pages. */
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
  function shortDevice(d) {
    if (!d) return '';
    return d.replace(/^\/job:localhost\/replica:0\/task:0/, '').replace('/device:', '/').toLowerCase();
  }
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
    const s = shortDevice(device);
    const e = table && table.devices ? table.devices.find((x) => x.device === s) : null;
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

  /* ------------------------------------------------------------------ canvas line chart */
  /* Draws series [{label, color, points: [{x, y}], faint}] into canvas (CSS size from its box) with
   * axes; hovering shows the nearest x's values in tip (an element). A y of null is a gap; a non-finite
   * y breaks the line and is marked in red: +Infinity by a triangle at the top edge, -Infinity at the
   * bottom, NaN by a dashed vertical line. Returns nothing. */
  function lineChart(canvas, series, opts) {
    opts = opts || {};
    const dpr = window.devicePixelRatio || 1;
    const W = canvas.clientWidth || 400, H = canvas.clientHeight || 200;
    canvas.width = Math.round(W * dpr); canvas.height = Math.round(H * dpr);
    const ctx = canvas.getContext('2d');
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    ctx.clearRect(0, 0, W, H);
    const placed = series.flatMap((s) => s.points).filter((p) => isFinite(p.x) && p.y !== null);
    const all = placed.filter((p) => isFinite(p.y));
    const L = 52, R = 10, T = 8, B = 22;
    ctx.font = '11px system-ui, sans-serif';
    if (!placed.length) {
      ctx.fillStyle = '#888'; ctx.fillText('no points', W / 2 - 20, H / 2);
      canvas._chart = null;
      return;
    }
    let x0 = Math.min(...placed.map((p) => p.x)), x1 = Math.max(...placed.map((p) => p.x));
    let y0 = all.length ? Math.min(...all.map((p) => p.y)) : 0, y1 = all.length ? Math.max(...all.map((p) => p.y)) : 0;
    if (x0 === x1) { x0 -= 1; x1 += 1; }
    if (y1 - y0 <= Math.abs(y0) * 1e-9) { y0 -= Math.abs(y0) * 0.1 || 1; y1 += Math.abs(y1) * 0.1 || 1; } /* flat, or flat but for rounding */
    const pad = (y1 - y0) * 0.05; y0 -= pad; y1 += pad;
    const sx = (x) => L + (x - x0) / (x1 - x0) * (W - L - R);
    const sy = (y) => T + (1 - (y - y0) / (y1 - y0)) * (H - T - B);
    ctx.strokeStyle = '#e3e3e3'; ctx.fillStyle = '#666'; ctx.lineWidth = 1;
    for (const t of ticks(y0, y1, 5)) {
      ctx.beginPath(); ctx.moveTo(L, sy(t) + 0.5); ctx.lineTo(W - R, sy(t) + 0.5); ctx.stroke();
      ctx.fillText(fmtNum(t, 3), 2, sy(t) + 4);
    }
    for (const t of ticks(x0, x1, 6)) ctx.fillText(fmtNum(t, 4), sx(t) - 8, H - 6);
    for (const s of series) {
      ctx.strokeStyle = s.color; ctx.globalAlpha = s.faint ? 0.25 : 1; ctx.lineWidth = s.faint ? 1 : 1.6;
      ctx.beginPath();
      let pen = false;
      for (const p of s.points) {
        const ok = p.y !== null && isFinite(p.y) && isFinite(p.x);
        if (ok) (pen ? ctx.lineTo(sx(p.x), sy(p.y)) : ctx.moveTo(sx(p.x), sy(p.y)));
        pen = ok;
      }
      ctx.stroke();
      if (s.points.length === 1 && isFinite(s.points[0].y)) { ctx.fillStyle = s.color; ctx.fillRect(sx(s.points[0].x) - 2, sy(s.points[0].y) - 2, 4, 4); }
      if (!s.faint) nonFiniteMarks(ctx, s.points, sx, T, H - B);
    }
    ctx.globalAlpha = 1;
    canvas._chart = {series, sx, sy, x0, x1, L, R, W, tip: opts.tip, xlabel: opts.xlabel || 'step'};
    if (!canvas._hover) {
      canvas._hover = true;
      canvas.addEventListener('mousemove', (ev) => chartHover(canvas, ev));
      canvas.addEventListener('mouseleave', () => { if (canvas._chart && canvas._chart.tip) canvas._chart.tip.hidden = true; });
    }
  }
  function nonFiniteMarks(ctx, points, sx, top, bottom) {
    ctx.save();
    ctx.fillStyle = ctx.strokeStyle = '#e15759';
    ctx.lineWidth = 1;
    for (const p of points) {
      if (p.y === null || isFinite(p.y) || !isFinite(p.x)) continue;
      const x = sx(p.x);
      if (Number.isNaN(p.y)) {
        ctx.setLineDash([3, 3]);
        ctx.beginPath(); ctx.moveTo(x + 0.5, top); ctx.lineTo(x + 0.5, bottom); ctx.stroke();
        ctx.setLineDash([]);
      } else {
        const y = p.y > 0 ? top : bottom, d = p.y > 0 ? 6 : -6;
        ctx.beginPath(); ctx.moveTo(x, y); ctx.lineTo(x - 4, y + d); ctx.lineTo(x + 4, y + d); ctx.closePath(); ctx.fill();
      }
    }
    ctx.restore();
  }
  function chartHover(canvas, ev) {
    const c = canvas._chart;
    if (!c || !c.tip) return;
    const x = c.x0 + (ev.offsetX - c.L) / (c.W - c.L - c.R) * (c.x1 - c.x0);
    const lines = [];
    let best = null;
    for (const s of c.series) {
      if (s.faint || !s.points.length) continue;
      let p = s.points[0];
      for (const q of s.points) if (Math.abs(q.x - x) < Math.abs(p.x - x)) p = q;
      best = best === null ? p.x : best;
      lines.push(s.label + ': ' + fmtNum(p.y, 6) + (p.raw !== undefined && !Object.is(p.raw, p.y) ? ' (raw ' + fmtNum(p.raw, 6) + ')' : ''));
    }
    if (best === null) return;
    clear(c.tip);
    append(c.tip, [h('b', {text: c.xlabel + ' ' + fmtNum(best)}), lines.map((l) => h('div', {text: l}))]);
    c.tip.hidden = false;
    c.tip.style.left = Math.min(ev.offsetX + 12, c.W - 160) + 'px';
    c.tip.style.top = ev.offsetY + 12 + 'px';
  }
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
  /* Exponential moving average (TensorBoard's, debiased): weight in [0, 1). */
  function ema(values, weight) {
    let last = 0, n = 0;
    return values.map((v) => {
      if (v === null || !isFinite(v)) return v;
      last = last * weight + (1 - weight) * v; n++;
      return weight ? last / (1 - Math.pow(weight, n)) : v;
    });
  }

  return {h, append, clear, $, api, url, message, params, setParams, topbar, onStatus, shortDevice,
          devices, colorOf, fmtNum, fmtUs, fmtBytes, inputNode, table, sortableTable, option, num, lineChart, ticks, ema,
          latest, STALE, UNPLACED, status: () => lastStatus};
})();
