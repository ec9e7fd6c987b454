/* runs.js — the start page (/): the sessions of the run log, its runs with filters (session, status,
 * traced) and links to each run's timeline and graph, two ticked runs -> compare, and the scalar curves
 * (summaries, and watched or fetched scalars one per run signature): the curves of several sessions
 * overlaid (TensorBoard's runs), the x axis by step, run or wall time, a log y axis,
 * exponential-moving-average smoothing and hover values; and the image summaries of the same sessions
 * (images.js). Refreshes when the log grows; a slower earlier answer (runs, curves, images) never
 * replaces a newer one. */
'use strict';
(() => {
  const {h, api, append, clear, table, option, params, setParams} = tide;
  const page = document.getElementById('page');
  const ticked = new Set();
  const q = params();
  const state = {session: q.get('session') || '', status: q.get('status') || '', traced: q.get('traced') || '',
                 smooth: Number(q.get('smooth') || 0.6), x: q.get('x') || 'step', logY: q.get('log') === '1',
                 curves: q.get('curves') ? new Set(q.get('curves').split(',').map(Number).filter((n) => n > 0)) : null};
  let sessions = [];
  const charts = new Map();   /* kind|tag -> {canvas, tip, legend, curve} */
  const scalarsGuard = tide.latest(), runsGuard = tide.latest();

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
  const xSel = h('select', {id: 'curve-x', onchange: () => {
    const had = state.x === 'time';
    state.x = xSel.value;
    setParams({x: state.x === 'step' ? '' : state.x});
    if ((state.x === 'time') !== had) loadScalars(false); else redrawCharts();   /* times are asked for only when shown */
  }},
    option('step', 'step'), option('run', 'run'), option('time', 'wall time'));
  xSel.value = state.x;
  const logBox = h('input', {id: 'curve-log', type: 'checkbox', checked: state.logY,
    onchange: () => { state.logY = logBox.checked; setParams({log: state.logY ? 1 : ''}); redrawCharts(); }});
  const sessionPicker = h('div', {class: 'toolbar', id: 'curve-sessions'});
  const sessionsBox = h('div', {class: 'scroll', id: 'sessions'});
  const runsBox = h('div', {class: 'scroll', id: 'runs'});
  const runsInfo = h('span', {class: 'muted'});
  const chartsBox = h('div', {class: 'cards', id: 'charts'});
  const imagesBox = h('div', {class: 'cards', id: 'images'});
  const images = tide.imagesPanel(imagesBox);

  tide.append(page, [
    h('div', {class: 'panel'}, h('h2', {text: 'Sessions'}), sessionsBox),
    h('div', {class: 'panel'}, h('h2', {text: 'Runs'}),
      h('div', {class: 'toolbar'}, h('label', null, 'session', sessionSel), h('label', null, 'status', statusSel),
        h('label', null, 'traced', tracedSel), compareBtn, runsInfo),
      runsBox),
    h('div', {class: 'panel'}, h('h2', {text: 'Scalars'}),
      h('div', {class: 'toolbar'}, h('label', null, 'smoothing', smoothIn, smoothOut), h('label', null, 'x axis', xSel),
        h('label', null, logBox, 'log scale')), sessionPicker, chartsBox),
    h('div', {class: 'panel', hidden: true}, h('h2', {text: 'Images'}), imagesBox),
  ]);

  function filtersChanged() {
    setParams({session: state.session, status: state.status, traced: state.traced});
    drawSessionPicker();
    loadRuns();
    loadScalars(true);
    images.load(shownSessions());
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
    drawSessionPicker();
  }

  /* The runs of the filters; an answer for filters changed since is dropped. */
  async function loadRuns() {
    const r = await runsGuard(() => api('/api/runs', {session: state.session, status: state.status, traced: state.traced, limit: 500}));
    if (!r || r === tide.STALE) return;
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
  /* One card per tag; in it one curve per session shown (TensorBoard's runs overlaid), in the session's
   * colour; the x axis by step, by run (the log's run counter) or by wall time since the session's first
   * point; a linear or log y axis; smoothing. */
  const SESSION_COLORS = ['#1f77b4', '#ff7f0e', '#2ca02c', '#d62728', '#9467bd', '#8c564b', '#e377c2', '#7f7f7f'];
  const sessionColor = (id) => SESSION_COLORS[(Number(id) - 1) % SESSION_COLORS.length];
  const xFormats = {
    step: {label: 'step', of: (p) => p.step},
    run: {label: 'run', of: (p) => p.run},
    time: {label: 'time', of: (p, t0) => (p.time === null ? NaN : p.time - t0), format: fmtSeconds},
  };
  /* Seconds on the wall-time axis: 0 s, 250 ms, 1.5 s, 2.0 min, 1.5 h. */
  function fmtSeconds(s) {
    const a = Math.abs(s);
    if (a === 0) return '0 s';
    if (a < 1) return tide.fmtNum(s * 1e3, 3) + ' ms';
    if (a >= 3600) return (s / 3600).toFixed(a >= 36000 ? 0 : 1) + ' h';
    if (a >= 60) return (s / 60).toFixed(a >= 600 ? 0 : 1) + ' min';
    return (a >= 10 ? s.toFixed(0) : s.toFixed(a >= 1 ? 1 : 2)) + ' s';
  }
  /* The sessions whose curves are shown: the chosen session, else those ticked (default: the latest 4). */
  function shownSessions() {
    if (state.session) return [Number(state.session)];
    if (state.curves !== null) return [...state.curves].filter((id) => sessions.some((x) => x.id === id));
    return sessions.slice(-4).map((x) => x.id);
  }
  function drawSessionPicker() {
    clear(sessionPicker);
    if (state.session) { sessionPicker.hidden = true; return; }
    sessionPicker.hidden = false;
    const shown = new Set(shownSessions());
    sessionPicker.appendChild(h('span', {class: 'muted', text: 'sessions: '}));
    for (const x of sessions.slice().reverse().slice(0, 24))
      sessionPicker.appendChild(h('label', {class: 'entry'}, h('input', {type: 'checkbox', class: 'curve-session', 'data-session': x.id,
        checked: shown.has(x.id), onchange: (e) => {
          const set = new Set(shownSessions());
          if (e.target.checked) set.add(x.id); else set.delete(x.id);
          state.curves = set;
          setParams({curves: [...set].sort((a, b) => a - b)});
          loadScalars(true);
          images.load(shownSessions());
        }}), h('span', {class: 'swatch', style: {background: sessionColor(x.id)}}), String(x.id)));
  }

  async function loadScalars(reset) {
    const ids = shownSessions();
    const answer = await scalarsGuard(async () => {
      const lists = await Promise.all(ids.map((id) => api('/api/scalars', {session: id}, {quiet: true})));
      /* One chart per curve: a summary tag, or a scalar node in the runs of one signature (what they fed
       * and their targets: training steps apart from evaluations), labelled by kind; a session's curve
       * is named by its signature_run. */
      const tags = new Map();   /* kind|tag|signature -> {tag, kind, signature, shared, sessions: [{id, run, points}]} */
      lists.forEach((l, i) => {
        for (const t of l ? l.tags : []) {
          const key = t.kind + '|' + t.tag + '|' + (t.signature || '');
          if (!tags.has(key)) tags.set(key, {tag: t.tag, kind: t.kind, signature: t.signature, shared: false, sessions: []});
          tags.get(key).sessions.push({id: ids[i], count: t.points, run: t.signature_run});
        }
      });
      for (const t of tags.values()) t.shared = [...tags.values()].filter((u) => u.tag === t.tag).length > 1;
      await Promise.all([...tags.values()].flatMap((t) => t.sessions.map(async (x) => {
        const p = await api('/api/scalar', {tag: t.tag, session: x.id, kind: t.kind, signature_run: x.run || null,
                                            time: state.x === 'time' ? 1 : null}, {quiet: true});
        x.points = p ? p.points : [];
      })));
      return tags;
    });
    if (answer === tide.STALE) return;
    if (reset) { charts.clear(); clear(chartsBox); }
    if (!answer.size) {
      clear(chartsBox).appendChild(h('p', {class: 'muted',
        text: 'No scalars yet: summary("loss", loss) in a run, or :watch a scalar node.'}));
      charts.clear();
      return;
    }
    if (!charts.size) clear(chartsBox);
    for (const [key, t] of answer) {
      let c = charts.get(key);
      if (!c) {
        const canvas = h('canvas', {class: 'chart', 'data-tag': t.tag, 'data-kind': t.kind});
        const tip = h('div', {class: 'tip', hidden: true});
        const legend = h('span', {class: 'kind'});
        chartsBox.appendChild(h('div', {class: 'card'}, h('h3', null, t.tag, legend),
          t.shared && t.signature ? h('div', {class: 'muted signature', text: t.signature}) : null,
          h('div', {style: {position: 'relative'}}, canvas, tip)));
        c = {canvas, tip, legend};
        charts.set(key, c);
      }
      c.curve = t;
      clear(c.legend).appendChild(document.createTextNode(t.kind + ' · '));
      for (const x of t.sessions)
        append(c.legend, [h('span', {class: 'swatch', style: {background: sessionColor(x.id)}}), 'session ' + x.id + ' (' + x.count + ') ']);
      draw(c);
    }
  }
  function draw(c) {
    const fmt = xFormats[state.x] || xFormats.step;
    const series = [];
    for (const x of c.curve.sessions) {
      const pts = x.points || [];
      const t0 = pts.length && pts[0].time !== null ? Math.min(...pts.filter((p) => p.time !== null).map((p) => p.time)) : 0;
      const raw = pts.map((p) => tide.num(p.value));
      const smooth = tide.charts.ema(raw, state.smooth);
      const at = (ys) => pts.map((p, i) => ({x: fmt.of(p, t0), y: ys[i], raw: raw[i]}));
      const color = sessionColor(x.id);
      if (state.smooth > 0) series.push({label: 'session ' + x.id + ' raw', color, points: at(raw), faint: true});
      series.push({label: 'session ' + x.id, color, points: at(state.smooth > 0 ? smooth : raw)});
    }
    tide.charts.line(c.canvas, series, {tip: c.tip, xlabel: fmt.label, xFormat: fmt.format, logY: state.logY});
  }
  function redrawCharts() { for (const c of charts.values()) if (c.curve) draw(c); }
  window.addEventListener('resize', redrawCharts);

  tide.topbar('runs');
  tide.onStatus(async (s, changed) => {
    if (changed.sessions) await loadSessions();
    if (changed.run || changed.first) await Promise.all([loadRuns(), loadScalars(false), images.load(shownSessions())]);
  });
})();
