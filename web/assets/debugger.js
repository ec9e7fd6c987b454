/* debugger.js — the debugger page (/debugger?token=...), served by the REPL's own server only: the
 * graph with each node's state in the current step (done, running, ready, waiting, stopped here,
 * skipped, not in this step), breakpoints and health pills; Step, Continue, Continue until bad and
 * Abort; a node's tensor in the stopped step. Every /api/debug request carries the page's token (the
 * header X-Tide-Token); commands are POST. The state is polled every 400 ms (polls never overlap,
 * stale answers are dropped); the drawing is the log's latest graph (/api/graph.svg, all scopes open),
 * fetched again when the log's graph changes. */
'use strict';

(() => {
  const {h, clear, append, $, fmtNum} = tide;
  const token = tide.params().get('token') || '';
  const POLL_MS = 400;
  const stateGuard = tide.latest(), tensorGuard = tide.latest();
  let state = null, selected = null, svgEl = null;

  /* ------------------------------------------------------------------ requests */
  async function debugApi(path, params, method) {
    let r, body = null;
    try {
      r = await fetch(tide.url(path, params), {method: method || 'GET', headers: {'X-Tide-Token': token, Accept: 'application/json'}});
      try { body = await r.json(); } catch (e) { body = null; }
    } catch (e) {
      return {error: 'cannot reach the tide REPL (' + e.message + ')'};
    }
    if (!r.ok) return {error: body && body.error ? body.error : r.status + ' ' + r.statusText, status: r.status};
    return body || {error: path + ': the answer is not valid JSON'};
  }
  async function command(text) {
    const r = await debugApi('/api/debug/command', {command: text}, 'POST');
    if (r.error) tide.message(text + ': ' + r.error);
    else tide.message('');
    await refresh();
  }

  /* ------------------------------------------------------------------ layout */
  const where = h('span', {class: 'where', id: 'dbg-where', text: 'connecting…'});
  const buttons = {
    step: h('button', {id: 'dbg-step', title: 'run to the next node execution', text: 'Step', onclick: () => command('step')}),
    cont: h('button', {id: 'dbg-continue', title: 'run on to the next breakpoint', text: 'Continue', onclick: () => command('continue')}),
    bad: h('button', {id: 'dbg-continue-bad', title: 'run on until a node produces NaN or infinity from finite inputs',
                      text: 'Continue until bad', onclick: () => command('continue_bad')}),
    abort: h('button', {id: 'dbg-abort', title: 'end the run (it fails with CANCELLED)', text: 'Abort', onclick: () => command('abort')}),
  };
  const graphBox = h('div', {class: 'debug-graph', id: 'dbg-graph'});
  const nodePanel = h('div', {class: 'panel', id: 'dbg-node'}, h('span', {class: 'muted', text: 'Click a node: its tensor, its breakpoint.'}));
  const breaksPanel = h('div', {class: 'panel', id: 'dbg-breaks'});
  const nodesPanel = h('div', {class: 'panel', id: 'dbg-nodes'});

  function layout() {
    tide.topbar('debugger');
    const page = $('#page');
    append(page, [
      h('div', {class: 'debug-main'}, h('div', {class: 'debug-controls'}, where, Object.values(buttons)), graphBox),
      h('div', {class: 'debug-side'}, nodePanel, breaksPanel, nodesPanel),
    ]);
    if (!token) tide.message('this page needs the token of the address the REPL printed (:web): open that address');
  }

  /* ------------------------------------------------------------------ the drawing */
  async function drawGraph() {
    const text = await tide.api('/api/graph.svg', {expand_all: 1, max_items: 2000}, {text: true, quiet: true});
    if (text === null) {
      clear(graphBox).appendChild(h('p', {class: 'muted', text: 'No graph logged yet: it appears with the first run.'}));
      svgEl = null;
      return;
    }
    const doc = new DOMParser().parseFromString(text, 'image/svg+xml');
    if (doc.getElementsByTagName('parsererror').length || doc.documentElement.nodeName !== 'svg') return;
    const svg = document.importNode(doc.documentElement, true);
    for (const s of svg.querySelectorAll('script, foreignObject')) s.remove();
    svg.removeAttribute('width'); svg.removeAttribute('height');
    svg.addEventListener('click', (e) => {
      const g = e.target.closest('g.node');
      if (g && g.id.startsWith('node:')) select(g.id.slice(5));
    });
    clear(graphBox).appendChild(svg);
    svgEl = svg;
    paint();
  }
  function nodeEl(name) { return svgEl ? svgEl.querySelector('g.node[id="' + CSS.escape('node:' + name) + '"]') : null; }

  /* Colours the drawing's nodes by their state, marks breakpoints and the selection. */
  function paint() {
    if (!svgEl) return;
    const states = ['done', 'ready', 'waiting', 'running', 'stopped', 'skipped', 'not_in_step'];
    for (const g of svgEl.querySelectorAll('g.node')) {
      for (const s of states) g.classList.remove('dbg-' + s);
      g.classList.remove('dbg-break', 'selected');
    }
    if (!state) return;
    for (const n of state.nodes || []) {
      const g = nodeEl(n.name);
      if (g) g.classList.add('dbg-' + n.state);
    }
    for (const b of state.breakpoints || []) {
      const g = b.node && b.enabled ? nodeEl(b.node) : null;
      if (g) g.classList.add('dbg-break');
    }
    const sel = selected ? nodeEl(selected) : null;
    if (sel) sel.classList.add('selected');
  }

  /* ------------------------------------------------------------------ panels */
  function pill(health) {
    if (!health || !health.elements) return h('span', {class: 'muted', text: '–'});
    const n = health.elements, bad = [['nan', '#c5221f'], ['neg_inf', '#7b1fa2'], ['pos_inf', '#e8710a']];
    const finite = n - bad.reduce((a, [k]) => a + (health[k] || 0), 0);
    const title = bad.map(([k]) => k + ' ' + (health[k] || 0)).join(', ') + ', finite ' + finite +
                  ' · min ' + fmtNum(tide.num(health.min)) + ' max ' + fmtNum(tide.num(health.max));
    return h('span', {class: 'pill', title},
      bad.map(([k, c]) => health[k] ? h('span', {style: {width: (100 * health[k] / n) + '%', background: c}}) : null),
      finite ? h('span', {style: {width: (100 * finite / n) + '%', background: '#34a853'}}) : null);
  }
  function stateBadge(s) { return h('span', {class: 'state ' + s, text: s.replace(/_/g, ' ')}); }

  function drawWhere() {
    const stopped = !!(state && state.stopped);
    where.classList.toggle('stopped', stopped);
    if (!state) where.textContent = 'the REPL does not answer';
    else if (stopped && state.at) {
      const at = state.at;
      where.textContent = 'stopped in run ' + state.run + (at.after ? ' after ' : ' before ') + "'" + at.node + "'" +
        (at.frame ? ' (loop ' + at.frame + ', iteration ' + at.iteration + ')' : '') + (at.reason ? ' · ' + at.reason : '') +
        (state.message ? ' — ' + state.message : '');
    } else where.textContent = state.running ? 'running' + (state.run ? ' (run ' + state.run + ')' : '') : 'idle: no step is stopped';
    for (const b of Object.values(buttons)) b.disabled = !stopped;
  }
  function drawBreaks() {
    const rows = (state && state.breakpoints) || [];
    clear(breaksPanel).appendChild(h('h2', {text: 'Breakpoints'}));
    if (!rows.length) { breaksPanel.appendChild(h('p', {class: 'muted', text: 'None. Click a node, then "Break here".'})); return; }
    breaksPanel.appendChild(tide.table([
      {label: '#', get: (b) => String(b.id), num: true},
      {label: 'where', get: (b) => b.spec},
      {label: 'hits', get: (b) => String(b.hits), num: true},
      {label: '', get: (b) => h('span', null,
        h('button', {text: b.enabled ? 'disable' : 'enable', onclick: () => command((b.enabled ? 'disable ' : 'enable ') + b.id)}), ' ',
        h('button', {text: 'delete', onclick: () => command('delete ' + b.id)}))},
    ], rows, 'grid dbg-breaks'));
  }
  function drawNodes() {
    const rows = (state && state.nodes) || [];
    clear(nodesPanel).appendChild(h('h2', {text: 'Nodes in this step'}));
    if (!rows.length) { nodesPanel.appendChild(h('p', {class: 'muted', text: 'Shown while a step is stopped.'})); return; }
    nodesPanel.appendChild(h('div', {class: 'scroll'}, tide.table([
      {label: 'node', get: (n) => h('a', {href: '#', text: n.name, onclick: (e) => { e.preventDefault(); select(n.name); }})},
      {label: 'state', get: (n) => stateBadge(n.state)},
      {label: 'health', get: (n) => pill(n.health)},
    ], rows, 'grid dbg-nodes')));
  }

  async function select(name) {
    selected = name;
    paint();
    const n = state && state.nodes ? state.nodes.find((x) => x.name === name) : null;
    const bp = state && state.breakpoints ? state.breakpoints.find((b) => b.node === name) : null;
    append(clear(nodePanel), [h('h2', {text: 'Node'}), h('div', {class: 'mono', id: 'dbg-node-name', text: name}), ' ',
      n ? stateBadge(n.state) : null, ' ',
      h('button', {id: 'dbg-toggle-break', text: bp ? 'Remove breakpoint ' + bp.id : 'Break here', onclick: () => command('break ' + name)})]);
    const t = await tensorGuard(() => state && state.stopped ? debugApi('/api/debug/tensor', {node: name, output: 0}) : null);
    if (t === tide.STALE || selected !== name) return;
    const box = h('div', {id: 'dbg-tensor'});
    nodePanel.appendChild(box);
    if (!t) { box.appendChild(h('p', {class: 'muted', text: 'Values are shown while a step is stopped.'})); return; }
    if (t.error) { box.appendChild(h('p', {class: 'muted', text: t.error})); return; }
    const hl = t.health || {};
    box.appendChild(h('table', {class: 'kv'}, h('tbody', null,
      [['output', t.output], ['dtype', t.dtype], ['shape', '[' + (t.shape || []).join(', ') + ']'],
       ['nan / -inf / +inf', [hl.nan, hl.neg_inf, hl.pos_inf].map((v) => v === undefined ? '–' : v).join(' / ')],
       ['min / max / mean', [hl.min, hl.max, hl.mean].map((v) => fmtNum(tide.num(v))).join(' / ')]]
        .map(([k, v]) => h('tr', null, h('td', {text: k}), h('td', {text: String(v)}))))));
    const values = (t.values || []).map((v) => fmtNum(tide.num(v))).join(', ');
    box.appendChild(h('pre', {class: 'attrs', id: 'dbg-values', text: '[' + values + (t.truncated ? ', …' : '') + ']'}));
  }

  /* ------------------------------------------------------------------ polling */
  async function refresh() {
    const s = await stateGuard(() => debugApi('/api/debug/state'));
    if (s === tide.STALE) return;
    const was = state;
    state = s && !s.error ? s : null;
    if (s && s.error && s.status === 403) tide.message(s.error);
    drawWhere();
    drawBreaks();
    drawNodes();
    paint();
    const key = (x) => x ? [x.stopped, x.run, x.at && x.at.node, x.at && x.at.after].join('|') : '';
    if (selected && key(was) !== key(state)) select(selected);
  }
  async function pollLoop() {
    try { await refresh(); } finally { setTimeout(pollLoop, POLL_MS); }
  }

  layout();
  tide.onStatus((s, changed) => changed.graph ? drawGraph() : null);
  pollLoop();
})();
