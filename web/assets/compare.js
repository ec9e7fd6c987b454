/* compare.js — the compare page (/compare?a=&b=): two runs side by side, what changed in the graph
 * between them (nodes added, removed, changed) and the per-node time differences, sorted by |diff|,
 * with bars (red: b slower, green: b faster). A slower earlier comparison never replaces a newer one. */
'use strict';
(() => {
  const {h, api, clear, option, params, setParams, append, fmtUs} = tide;
  const page = document.getElementById('page');
  const q = params();
  const state = {a: q.get('a') || '', b: q.get('b') || ''};
  const aSel = h('select', {id: 'c-a', onchange: () => { state.a = aSel.value; load(); }});
  const bSel = h('select', {id: 'c-b', onchange: () => { state.b = bSel.value; load(); }});
  const swap = h('button', {text: '⇄ swap', onclick: () => { [state.a, state.b] = [state.b, state.a]; aSel.value = state.a; bSel.value = state.b; load(); }});
  const runsBox = h('div', {class: 'cards', id: 'c-runs'});
  const graphBox = h('div', {id: 'c-graph'});
  const timesBox = h('div', {id: 'c-times'});
  const compareGuard = tide.latest();   /* a slower earlier comparison never replaces a newer one */
  append(page, [
    h('div', {class: 'toolbar'}, h('label', null, 'run a', aSel), swap, h('label', null, 'run b', bSel)),
    runsBox,
    h('div', {class: 'panel'}, h('h2', {text: 'graph differences'}), graphBox),
    h('div', {class: 'panel'}, h('h2', {text: 'time per node (b − a)'}), timesBox),
  ]);

  async function loadPickers() {
    const r = await api('/api/runs', {limit: 1000});
    if (!r) return;
    for (const [sel, v] of [[aSel, state.a], [bSel, state.b]]) {
      clear(sel).appendChild(option('', 'choose a run'));
      for (const x of r.runs.slice().reverse())
        sel.appendChild(option(x.id, 'run ' + x.id + ' · session ' + x.session + ' · step ' + x.step + (x.traced ? ' · traced' : '')));
      sel.value = v;
    }
  }

  function runCard(label, r) {
    const rows = [['run', r.id], ['session', r.session_id !== undefined ? r.session_id : r.session], ['step', r.step], ['status', r.status],
      ['wall', r.wall_ms !== undefined && r.wall_ms !== null ? fmtUs(r.wall_ms * 1000) : '–'], ['traced', r.traced ? 'yes' : 'no'],
      ['error', r.error || '']];
    return h('div', {class: 'card'}, h('h3', {text: label}),
      h('table', {class: 'kv'}, h('tbody', null, rows.filter(([, v]) => v !== '' && v !== undefined).map(([k, v]) =>
        h('tr', null, h('td', {text: k}), h('td', {text: String(v)}))))),
      r.traced ? h('a', {href: tide.url('/timeline', {run: r.id}), text: 'timeline'}) : null);
  }

  async function load() {
    setParams({a: state.a, b: state.b});
    clear(runsBox); clear(graphBox); clear(timesBox);
    if (!state.a || !state.b) {
      compareGuard(() => null);   /* drops a comparison still on its way */
      graphBox.appendChild(h('p', {class: 'muted', text: 'Choose two runs (or tick two on the Runs page).'}));
      return;
    }
    const c = await compareGuard(() => api('/api/compare', {a: state.a, b: state.b}));
    if (!c || c === tide.STALE) return;
    append(runsBox, [runCard('a', c.a), runCard('b', c.b)]);
    if (c.a.traced && c.b.traced && (c.a.id || state.a) && (c.b.id || state.b))
      runsBox.appendChild(h('div', {class: 'card'}, h('h3', {text: 'timelines'}),
        h('a', {href: tide.url('/timeline', {runs: [c.a.id || state.a, c.b.id || state.b].join(',')}), text: 'side by side →'})));
    const g = c.graph || {added: [], removed: [], changed: []};
    if (!g.added.length && !g.removed.length && !g.changed.length) graphBox.appendChild(h('p', {class: 'muted', text: 'The two runs ran the same graph.'}));
    const list = (title, items, cls) => (items.length ? h('div', null, h('b', {class: cls, text: title + ' (' + items.length + ')'}),
      h('ul', {class: 'mono'}, items.slice(0, 500).map((n) => h('li', {text: n})))) : null);
    append(graphBox, [list('added in b', g.added, 'diff-neg'), list('removed in b', g.removed, 'diff-pos'),
      g.changed.length ? [h('b', {text: 'changed (' + g.changed.length + ')'}),
        tide.table([{label: 'node', get: (x) => x.name}, {label: 'field', get: (x) => x.field},
          {label: 'a', get: (x) => h('span', {class: 'mono', text: x.a === null ? '–' : String(x.a)})},
          {label: 'b', get: (x) => h('span', {class: 'mono', text: x.b === null ? '–' : String(x.b)})}], g.changed)] : null]);
    const times = c.times || [];
    if (!times.length) { timesBox.appendChild(h('p', {class: 'muted', text: 'No per-node times: both runs must be traced.'})); return; }
    const top = Math.max(...times.map((t) => Math.abs(t.diff_us || 0)), 1e-9);
    timesBox.appendChild(h('div', {class: 'scroll', style: {maxHeight: '600px'}}, tide.table([
      {label: 'node', get: (t) => h('span', {class: 'mono', text: t.node})},
      {label: 'op', get: (t) => t.op},
      {label: 'a', get: (t) => fmtUs(t.a_us), num: true},
      {label: 'b', get: (t) => fmtUs(t.b_us), num: true},
      {label: 'b − a', get: (t) => h('span', {class: t.diff_us > 0 ? 'diff-pos' : 'diff-neg', text: (t.diff_us > 0 ? '+' : '') + fmtUs(t.diff_us)}), num: true},
      {label: '', get: (t) => h('span', {class: 'bar ' + (t.diff_us > 0 ? 'slower' : 'faster'),
        style: {width: Math.max(1, Math.round(Math.abs(t.diff_us || 0) / top * 200)) + 'px'}})},
    ], times, 'grid')));
  }

  tide.topbar('compare');
  tide.onStatus(async (s, changed) => {
    if (changed.first) { await loadPickers(); load(); } else if (changed.run) loadPickers();
  });
})();
