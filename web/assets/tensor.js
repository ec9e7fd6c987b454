/* tensor.js — the tensor page (/tensor?node=&output=&session=&step=): a picker of the logged tensors,
 * the statistics at a step, the histogram, the values paged in a table, a picture (pictures.js: a heat
 * map of 2-D tensors with its colour scale, the filters of convolution weights, an image grid of NHWC
 * tensors), a chosen statistic across steps, and TensorBoard's distributions and histograms over the
 * steps (charts.js). Follows the latest step while none is chosen; a slower earlier answer never
 * replaces a newer one. */
'use strict';
(() => {
  const {h, api, clear, option, params, setParams, append, fmtNum} = tide;
  const page = document.getElementById('page');
  const PAGE = 100, MAX_DRAW = 100000;
  const q = params();
  const state = {node: q.get('node') || '', output: Number(q.get('output') || 0), session: q.get('session') || '',
                 step: q.has('step') ? Number(q.get('step')) : -1, offset: 0, stat: q.get('stat') || 'mean'};
  let tensors = [];
  let current = null;
  /* One guard per request kind: a slower earlier answer (another step, page or statistic) is dropped. */
  const tensorGuard = tide.latest(), valuesGuard = tide.latest(), pictureGuard = tide.latest();
  const overStepsGuard = tide.latest(), historyGuard = tide.latest();

  const pick = h('select', {id: 'x-tensor', onchange: () => {
    const t = tensors[Number(pick.value)];
    if (t) { state.node = t.node; state.output = t.output; state.step = -1; state.offset = 0; load(); }
  }});
  const stepIn = h('input', {id: 'x-step', type: 'number', style: {width: '70px'}, title: '-1: the latest step', value: String(state.step),
    onchange: () => { state.step = Number(stepIn.value); state.offset = 0; load(); }});
  const statSel = h('select', {id: 'x-stat', onchange: () => { state.stat = statSel.value; setParams({stat: state.stat}); loadHistory(); }},
    ['min', 'max', 'mean', 'std', 'nan_count', 'inf_count'].map((s) => option(s, s)));
  statSel.value = state.stat;
  const statsBox = h('div', {id: 'x-stats'});
  const histCanvas = h('canvas', {class: 'chart', id: 'x-hist', style: {height: '160px'}});
  const histTip = h('div', {class: 'tip', hidden: true});
  const valuesBox = h('div', {id: 'x-values'});
  const pictureBox = h('div', {id: 'x-picture'});
  const histCanvas2 = h('canvas', {class: 'chart', id: 'x-history'});
  const historyTip = h('div', {class: 'tip', hidden: true});
  const distCanvas = h('canvas', {class: 'chart', id: 'x-distributions'});
  const distTip = h('div', {class: 'tip', hidden: true});
  const ridgeCanvas = h('canvas', {class: 'chart tall', id: 'x-histograms'});
  const overStepsNote = h('span', {class: 'muted'});
  const title = h('h1', {id: 'x-title'});

  append(page, [
    h('div', {class: 'toolbar'}, h('label', null, 'tensor', pick),
      h('label', null, 'step', stepIn, h('button', {text: '◀', title: 'previous step', onclick: () => moveStep(-1)}),
        h('button', {text: '▶', title: 'next step', onclick: () => moveStep(1)}),
        h('button', {text: 'latest', onclick: () => { state.step = -1; stepIn.value = '-1'; load(); }}))),
    title,
    h('div', {class: 'tensor-grid'},
      h('div', null, h('div', {class: 'panel'}, h('h2', {text: 'statistics'}), statsBox),
        h('div', {class: 'panel'}, h('h2', {text: 'histogram'}), h('div', {style: {position: 'relative'}}, histCanvas, histTip))),
      h('div', null, h('div', {class: 'panel'}, h('h2', {text: 'picture'}), pictureBox),
        h('div', {class: 'panel'}, h('h2', {text: 'values'}), valuesBox),
        h('div', {class: 'panel'}, h('div', {class: 'toolbar'}, h('h2', {text: 'across steps', style: {margin: 0}}), statSel),
          h('div', {style: {position: 'relative'}}, histCanvas2, historyTip)),
        h('div', {class: 'panel'}, h('div', {class: 'toolbar'}, h('h2', {text: 'distributions', style: {margin: 0}}), overStepsNote),
          h('p', {class: 'hint', text: 'bands from the darkest out: 31–69 %, 16–84 %, 7–93 %, min–max of the values; the line is the median'}),
          h('div', {style: {position: 'relative'}}, distCanvas, distTip),
          h('h2', {text: 'histograms', style: {marginTop: '10px'}}),
          h('p', {class: 'hint', text: 'one outline per step, the oldest at the back'}), ridgeCanvas))),
  ]);

  async function loadPicker() {
    const t = await api('/api/tensors', {session: state.session});
    if (!t) return;
    /* One entry per node output (a tensor both fetched and watched is listed once per kind). */
    const seen = new Map();
    for (const x of t) {
      const k = x.node + ':' + x.output, y = seen.get(k);
      if (!y) seen.set(k, {...x});
      else { y.kind += ', ' + x.kind; y.first_step = Math.min(y.first_step, x.first_step); y.last_step = Math.max(y.last_step, x.last_step); }
    }
    tensors = [...seen.values()];
    clear(pick);
    if (!tensors.length) {
      pick.appendChild(option('', 'no logged tensors'));
      tide.message('No tensors are logged yet: :watch NODE logs a node\'s values at every run.', 'info');
      return;
    }
    tensors.forEach((x, i) => pick.appendChild(option(i, x.node + ':' + x.output + ' · ' + x.kind + ' · ' + (Array.isArray(x.shape) ? '[' + x.shape.join(', ') + ']' : String(x.shape || '')) + ' · steps ' + x.first_step + '–' + x.last_step)));
    let i = tensors.findIndex((x) => x.node === state.node && x.output === state.output);
    if (i < 0 && !state.node) { i = 0; state.node = tensors[0].node; state.output = tensors[0].output; }
    pick.value = i >= 0 ? String(i) : '';
  }

  function moveStep(d) {
    if (!current) return;
    state.step = Math.max(0, current.step + d);
    stepIn.value = String(state.step);
    state.offset = 0;
    load();
  }

  async function load() {
    if (!state.node) return;
    setParams({node: state.node, output: state.output, session: state.session, step: state.step >= 0 ? state.step : ''});
    const answer = await tensorGuard(() => Promise.all([
      api('/api/tensor', {node: state.node, output: state.output, session: state.session, step: state.step}),
      api('/api/node', {name: state.node, session: state.session}, {quiet: true})]));
    if (answer === tide.STALE) return;
    const [t, node] = answer;
    if (!t) return;
    current = t;
    current.op = node ? node.op : null;
    title.textContent = t.node + ':' + t.output + ' at step ' + t.step;
    showStats(t);
    drawHistogram(t.histogram);
    await Promise.all([loadValues(), loadPicture(t), loadHistory(), loadOverSteps()]);
  }

  function showStats(t) {
    const rows = [['node', t.node + ':' + t.output], ['session', t.session], ['run', t.run], ['step', t.step], ['dtype', t.dtype],
      ['shape', '[' + (t.shape || []).join(', ') + ']'], ['elements', t.num_elements], ['min', t.min], ['max', t.max], ['mean', t.mean],
      ['std', t.std], ['NaN', t.nan_count], ['±Inf', t.inf_count], ['value stored', t.has_value ? 'yes' : 'no (statistics only)']];
    clear(statsBox).appendChild(h('table', {class: 'kv'}, h('tbody', null, rows.map(([k, v]) =>
      h('tr', null, h('td', {text: k}), h('td', {class: 'mono', text: fmtNum(v, 6)}))))));
    const run = statsBox.querySelector('tr:nth-child(3) td:last-child');
    if (run && t.run) clear(run).appendChild(h('a', {href: tide.url('/timeline', {run: t.run}), text: String(t.run)}));
  }

  function drawHistogram(hist) {
    const dpr = window.devicePixelRatio || 1;
    const W = histCanvas.clientWidth || 300, H = histCanvas.clientHeight || 160;
    histCanvas.width = W * dpr; histCanvas.height = H * dpr;
    const ctx = histCanvas.getContext('2d');
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    ctx.clearRect(0, 0, W, H);
    ctx.font = '11px system-ui, sans-serif';
    const counts = hist && hist.counts ? hist.counts : [];
    if (!counts.length) { ctx.fillStyle = '#888'; ctx.fillText('no histogram', 10, H / 2); return; }
    const top = Math.max(...counts, 1), bw = (W - 10) / counts.length, B = 18;
    ctx.fillStyle = '#4e79a7';
    counts.forEach((c, i) => { const bh = c / top * (H - B - 6); ctx.fillRect(5 + i * bw, H - B - bh, Math.max(1, bw - 1), bh); });
    ctx.fillStyle = '#666';
    ctx.fillText(fmtNum(hist.min, 4), 5, H - 4);
    const mx = fmtNum(hist.max, 4);
    ctx.fillText(mx, W - 5 - ctx.measureText(mx).width, H - 4);
    histCanvas.onmousemove = (e) => {
      const i = Math.floor((e.offsetX - 5) / bw);
      if (i < 0 || i >= counts.length) { histTip.hidden = true; return; }
      const w = (hist.max - hist.min) / counts.length;
      histTip.textContent = '[' + fmtNum(hist.min + i * w, 4) + ', ' + fmtNum(hist.min + (i + 1) * w, 4) + '): ' + counts[i];
      histTip.hidden = false; histTip.style.left = Math.min(e.offsetX + 10, W - 150) + 'px'; histTip.style.top = e.offsetY + 10 + 'px';
    };
    histCanvas.onmouseleave = () => { histTip.hidden = true; };
  }

  const vparams = (offset, limit) => ({node: state.node, output: state.output, session: state.session, step: current.step, offset, limit});
  function index(shape, flat) {
    const idx = [];
    for (let d = shape.length - 1; d >= 0; d--) { idx.unshift(flat % shape[d]); flat = Math.floor(flat / shape[d]); }
    return '[' + idx.join(', ') + ']';
  }
  async function loadValues() {
    if (!current.has_value) {
      valuesGuard(() => null);
      clear(valuesBox).appendChild(h('p', {class: 'muted', text: 'Only statistics were logged at this step (the value was over the cap or pruned).'}));
      return;
    }
    const v = await valuesGuard(() => api('/api/tensor/values', vparams(state.offset, PAGE)));
    if (!v || v === tide.STALE) return;
    clear(valuesBox);
    const shape = v.shape || [];
    const rows = v.values.map((x, i) => ({i: v.offset + i, x}));
    const last = Math.min(v.offset + v.values.length, v.total);
    append(valuesBox, [
      h('div', {class: 'pager'},
        h('button', {id: 'x-prev', text: '◀ prev', disabled: v.offset === 0, onclick: () => { state.offset = Math.max(0, state.offset - PAGE); loadValues(); }}),
        h('span', {class: 'muted', text: (v.total ? v.offset + 1 : 0) + '–' + last + ' of ' + v.total}),
        h('button', {id: 'x-next', text: 'next ▶', disabled: last >= v.total, onclick: () => { state.offset += PAGE; loadValues(); }})),
      h('div', {class: 'scroll'}, tide.table([{label: 'index', get: (r) => (shape.length ? index(shape, r.i) : '[]')},
        {label: 'value', get: (r) => fmtNum(r.x, 7), num: true}], rows)),
    ]);
  }

  /* ------------------------------------------------------------------ pictures (pictures.js) */
  /* A 2-D tensor as a heat map; a 4-D Variable (a convolution's weights, HWIO) as its filters; other
   * 4-D tensors with 1, 3 or 4 channels as NHWC images. */
  async function loadPicture(t) {
    const shape = t.shape || [];
    const kind = shape.length === 2 ? 'heat' : shape.length === 4 && current.op === 'Variable' ? 'filters'
               : shape.length === 4 && [1, 3, 4].includes(shape[3]) ? 'images' : null;
    const note = !kind ? 'A heat map is drawn for 2-D tensors, the filters of 4-D weights, an image grid for NHWC tensors with 1, 3 or 4 channels.'
               : !t.has_value ? 'No stored value at this step.'
               : t.num_elements > MAX_DRAW ? 'Too large to draw (' + t.num_elements + ' elements).' : null;
    if (note) { pictureGuard(() => null); clear(pictureBox).appendChild(h('p', {class: 'muted', text: note})); return; }
    const v = await pictureGuard(() => api('/api/tensor/values', vparams(0, MAX_DRAW)));
    if (!v || v === tide.STALE) return;
    clear(pictureBox);
    const vals = v.values.map((x) => tide.num(x));
    if (kind === 'heat') tide.pictures.heat(pictureBox, shape, vals);
    else if (kind === 'filters') tide.pictures.filters(pictureBox, shape, vals);
    else tide.pictures.images(pictureBox, shape, vals, t.dtype === 'uint8');
  }

  /* ------------------------------------------------------------------ over steps */
  async function loadOverSteps() {
    const r = await overStepsGuard(() => api('/api/tensor/histograms', {node: state.node, output: state.output, session: state.session}, {quiet: true}));
    if (!r || r === tide.STALE) return;
    overStepsNote.textContent = r.steps.length + ' of ' + r.total + ' steps' + (r.sampled ? ' (evenly chosen)' : '');
    tide.charts.distributions(distCanvas, r.steps, {tip: distTip});
    tide.charts.histograms(ridgeCanvas, r.steps);
  }

  async function loadHistory() {
    if (!state.node) return;
    const r = await historyGuard(() => api('/api/tensor/history', {node: state.node, output: state.output, session: state.session, stat: state.stat}));
    if (!r || r === tide.STALE) return;
    tide.charts.line(histCanvas2, [{label: state.stat, color: '#f28e2b',
      points: r.points.map((p) => ({x: p.step, y: tide.num(p.value)}))}], {tip: historyTip});
  }

  tide.topbar('tensor');
  tide.onStatus(async (s, changed) => {
    if (changed.first) { await loadPicker(); load(); return; }
    if (changed.run) { await loadPicker(); if (state.step < 0) load(); else loadHistory(); }
  });
})();
