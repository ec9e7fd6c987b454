/* runs.js — the start page (/): the sessions of the run log, its runs with filters (session, status,
 * traced) and links to each run's timeline and graph, two ticked runs -> compare, and the scalar curves
 * (summaries and watched scalars) with exponential-moving-average smoothing and hover values. Refreshes
 * when the log grows (tide.onStatus). */
'use strict';
(() => {
  const {h, api, clear, table, option, params, setParams} = tide;
  const page = document.getElementById('page');
  const ticked = new Set();
  const state = {session: params().get('session') || '', status: params().get('status') || '',
                 traced: params().get('traced') || '', smooth: Number(params().get('smooth') || 0.6)};
  let sessions = [];
  const charts = new Map();   /* tag|kind -> {canvas, tip, points} */

  const sessionSel = h('select', {id: 'f-session', onchange: () => { state.session = sessionSel.value; filtersChanged(); }});
  const statusSel = h('select', {id: 'f-status', onchange: () => { state.status = statusSel.value; filtersChanged(); }},
    option('', 'any'), option('ok', 'ok'), option('failed', 'failed'), option('unfinished', 'unfinished'));
  const tracedSel = h('select', {id: 'f-traced', onchange: () => { state.traced = tracedSel.value; filtersChanged(); }},
    option('', 'any'), option('1', 'traced'), option('0', 'not traced'));
  statusSel.value = state.status; tracedSel.value = state.traced;
  const compareBtn = h('button', {id: 'compare', disabled: true, text: 'Compare 2 ticked runs', onclick: () => {
    const [a, b] = [...ticked].sort((x, y) => x - y);
    location.href = tide.url('/compare', {a, b});
  }});
  const smoothIn = h('input', {id: 'smoothing', type: 'range', min: '0', max: '0.99', step: '0.01', value: String(state.smooth),
    oninput: () => { state.smooth = Number(smoothIn.value); smoothOut.textContent = smoothIn.value; redrawCharts(); },
    onchange: () => setParams({smooth: state.smooth})});
  const smoothOut = h('span', {class: 'mono', text: String(state.smooth)});
  const sessionsBox = h('div', {class: 'scroll', id: 'sessions'});
  const runsBox = h('div', {class: 'scroll', id: 'runs'});
  const runsInfo = h('span', {class: 'muted'});
  const chartsBox = h('div', {class: 'cards', id: 'charts'});

  tide.append(page, [
    h('div', {class: 'panel'}, h('h2', {text: 'Sessions'}), sessionsBox),
    h('div', {class: 'panel'}, h('h2', {text: 'Runs'}),
      h('div', {class: 'toolbar'}, h('label', null, 'session', sessionSel), h('label', null, 'status', statusSel),
        h('label', null, 'traced', tracedSel), compareBtn, runsInfo),
      runsBox),
    h('div', {class: 'panel'}, h('h2', {text: 'Scalars'}),
      h('div', {class: 'toolbar'}, h('label', null, 'smoothing', smoothIn, smoothOut)), chartsBox),
  ]);

  function filtersChanged() {
    setParams({session: state.session, status: state.status, traced: state.traced});
    loadRuns();
    loadScalars(true);
  }

  async function loadSessions() {
    const [s, colors] = await Promise.all([api('/api/sessions'), api('/api/devices', null, {quiet: true})]);
    if (!s) return;
    sessions = s;
    const palette = (id) => (colors ? colors.sessions.find((x) => x.session === id) : null);
    clear(sessionsBox).appendChild(table([
      {label: 'session', get: (r) => h('a', {href: '#', text: String(r.id), onclick: (e) => {
        e.preventDefault(); sessionSel.value = String(r.id); state.session = String(r.id); filtersChanged(); }}), num: true},
      {label: 'created', get: (r) => r.created_at},
      {label: 'label', get: (r) => r.label || ''},
      {label: 'threads', get: (r) => r.threads, num: true},
      {label: 'devices', get: (r) => h('span', null, (r.devices || []).map((d) =>
        h('span', {class: 'entry'}, h('span', {class: 'swatch', style: {background: tide.colorOf(palette(r.id), d)}}), d + ' ')))},
      {label: '', get: (r) => h('a', {href: tide.url('/graph', {session: r.id}), text: 'graph'})},
    ], sessions.slice().reverse()));
    const cur = state.session;
    clear(sessionSel).appendChild(option('', 'all'));
    for (const x of sessions.slice().reverse()) sessionSel.appendChild(option(x.id, x.id + (x.label ? ' · ' + x.label : ''), String(x.id) === cur));
    sessionSel.value = cur;
  }

  async function loadRuns() {
    const r = await api('/api/runs', {session: state.session, status: state.status, traced: state.traced, limit: 500});
    if (!r) return;
    const runs = r.runs.slice().reverse();
    runsInfo.textContent = runs.length + ' runs' + (r.truncated ? ' (the latest 500)' : '');
    for (const id of [...ticked]) if (!runs.some((x) => x.id === id)) ticked.delete(id);
    clear(runsBox).appendChild(table([
      {label: '', get: (x) => h('input', {type: 'checkbox', class: 'tick', 'data-run': x.id, checked: ticked.has(x.id),
        onchange: (e) => { if (e.target.checked) ticked.add(x.id); else ticked.delete(x.id); updateCompare(); }})},
      {label: 'run', get: (x) => x.id, num: true},
      {label: 'session', get: (x) => x.session, num: true},
      {label: 'step', get: (x) => x.step, num: true},
      {label: 'status', get: (x) => h('span', {class: 'status-' + String(x.status).toLowerCase(), text: String(x.status).toLowerCase(), title: x.error || ''})},
      {label: 'wall', get: (x) => (x.wall_ms === null || x.wall_ms === undefined ? '–' : tide.fmtUs(x.wall_ms * 1000)), num: true},
      {label: 'traced', get: (x) => (x.traced ? 'yes' : '')},
      {label: 'fetches', get: (x) => h('span', {class: 'mono', text: (x.fetches || []).join(', ')})},
      {label: 'started', get: (x) => fmtTime(x.started)},
      {label: '', get: (x) => h('span', null,
        x.traced ? h('a', {href: tide.url('/timeline', {run: x.id}), text: 'timeline'}) : null, x.traced ? ' · ' : '',
        h('a', {href: tide.url('/graph', {session: x.session, run: x.traced ? x.id : null}), text: 'graph'}))},
    ], runs));
    updateCompare();
  }
  /* A time from the API: text as it is; nanoseconds (or milliseconds) since the epoch as local time. */
  function fmtTime(t) {
    if (typeof t !== 'number') return t;
    const ms = t > 1e15 ? t / 1e6 : t;
    const d = new Date(ms);
    return isNaN(d) ? String(t) : d.toLocaleString();
  }
  function updateCompare() {
    compareBtn.disabled = ticked.size !== 2;
    compareBtn.textContent = ticked.size === 2 ? 'Compare runs ' + [...ticked].sort((a, b) => a - b).join(' and ')
                                               : 'Compare 2 ticked runs (' + ticked.size + ')';
  }

  /* ------------------------------------------------------------------ scalar curves */
  async function loadScalars(reset) {
    const s = await api('/api/scalars', {session: state.session});
    if (!s) return;
    if (reset) { charts.clear(); clear(chartsBox); }
    if (!s.tags.length) {
      clear(chartsBox).appendChild(h('p', {class: 'muted',
        text: 'No scalars yet: summary("loss", loss) in a run, or :watch a scalar node.'}));
      return;
    }
    if (!charts.size) clear(chartsBox);
    for (const t of s.tags) {
      const key = t.kind + '|' + t.tag;
      let c = charts.get(key);
      if (!c) {
        const canvas = h('canvas', {class: 'chart', 'data-tag': t.tag});
        const tip = h('div', {class: 'tip', hidden: true});
        chartsBox.appendChild(h('div', {class: 'card'}, h('h3', null, t.tag, h('span', {class: 'kind', text: t.kind + ' · ' + t.points + ' points'})),
          h('div', {style: {position: 'relative'}}, canvas, tip)));
        c = {canvas, tip, points: []};
        charts.set(key, c);
      }
      const p = await api('/api/scalar', {tag: t.tag, session: state.session, kind: t.kind});
      if (p) { c.points = p.points; draw(c); }
    }
  }
  function draw(c) {
    const raw = c.points.map((p) => tide.num(p.value));
    const smooth = tide.ema(raw, state.smooth);
    const pts = (ys) => c.points.map((p, i) => ({x: p.step, y: ys[i], raw: raw[i]}));
    tide.lineChart(c.canvas, [
      {label: 'raw', color: '#4e79a7', points: pts(raw), faint: state.smooth > 0},
      {label: state.smooth > 0 ? 'smoothed' : 'value', color: '#4e79a7', points: pts(smooth)},
    ], {tip: c.tip});
  }
  function redrawCharts() { for (const c of charts.values()) draw(c); }
  window.addEventListener('resize', redrawCharts);

  tide.topbar('runs');
  tide.onStatus((s, changed) => {
    if (changed.sessions) loadSessions();
    if (changed.run || changed.first) { loadRuns(); loadScalars(false); }
  });
})();
