/* timeline.js — the timeline page (/timeline?run=N or ?runs=A,B,C): one lane per device and thread,
 * and one per device stream that ran kernels or copies ("/sim:0 compute", "/sim:0 copy h2d": tinted
 * rows, after their device's threads; labels on the left), one bar per node execution coloured by its
 * device (the server's colour; a kernel on a stream at the device's times, its tooltip saying when the
 * host launched it), each run's memory per device (its kernels' peak, and what it held at the end) in
 * the run's row and in a table under the timeline, a
 * tooltip (node, op, start, duration, output shapes and bytes; a fused group's members; inside a loop its
 * frame and iteration, and the bar says "name #k"), arrows from each _Send to its _Recv,
 * zoom (wheel) and pan (drag) on a canvas, a run picker with previous/next, a side-by-side mode that
 * stacks several runs on one time axis (each from its own start), and the "Export Chrome trace" link.
 * A copy between memory spaces (a _Recv's, or an observer's host copy, op _CopyToHost, named after the
 * tensor "y:0") is drawn in its copy stream's lane ("/sim:0 copy d2h") and its tooltip says which.
 * An asynchronous _Recv waiting for its value holds no thread: that part of its bar is drawn as
 * waiting (a faint dashed band), not as work. Under the timeline, a "top ops" table per run: busy
 * time (waiting left out) per op type and per node, total and mean, sortable by any column. Follows the
 * latest traced run when none is chosen; a slower earlier answer never replaces a newer one. */
'use strict';
(() => {
  const {h, api, clear, option, params, setParams, append, fmtUs} = tide;
  const page = document.getElementById('page');
  const LABEL_W = 190, AXIS_H = 24, SUB_H = 16, RUN_H = 22;
  const q = params();
  const state = {runs: (q.get('runs') || q.get('run') || '').split(',').map(Number).filter((x) => x > 0)};
  let traced = [];           /* traced runs, oldest first */
  let data = null;           /* /api/timeline answer */
  let rows = [];             /* [{kind: 'run'|'lane', y, run, lane, label}] */
  let view = {t0: 0, t1: 1}; /* µs */
  let maxT = 1;

  const runSel = h('select', {id: 't-run', onchange: () => choose([Number(runSel.value)])});
  const prevBtn = h('button', {text: '◀ prev', title: 'the previous traced run', onclick: () => step(-1)});
  const nextBtn = h('button', {text: 'next ▶', title: 'the next traced run', onclick: () => step(1)});
  const multi = h('input', {id: 't-runs', type: 'text', placeholder: 'e.g. 3,5,9', size: '14',
    onkeydown: (e) => { if (e.key === 'Enter') sideBySide(); }});
  const sbsBtn = h('button', {id: 't-sbs', text: 'Side by side', onclick: () => sideBySide()});
  const resetBtn = h('button', {text: 'Reset zoom', onclick: () => { view = {t0: 0, t1: maxT}; draw(); }});
  const exportBox = h('span', {id: 't-export'});
  const info = h('span', {class: 'muted', id: 't-info'});
  const canvas = h('canvas', {id: 't-canvas'});
  const tip = h('div', {class: 'tip', hidden: true});
  const wrap = h('div', {class: 'tl-wrap'}, canvas, tip);
  const opsBox = h('div', {id: 't-ops'});
  const memBox = h('div', {id: 't-mem'});
  const timelineGuard = tide.latest();
  append(page, [
    h('div', {class: 'toolbar'}, h('label', null, 'run', runSel), prevBtn, nextBtn,
      h('label', null, 'runs', multi), sbsBtn, resetBtn, exportBox, info),
    wrap,
    h('p', {class: 'hint', text: 'wheel: zoom · drag: pan · double-click: reset · arrows: _Send → _Recv transfers · ' +
      'faint dashed bars: a _Recv waiting for its value (no thread held)'}),
    memBox,
    opsBox,
  ]);

  function sideBySide() {
    const ids = multi.value.split(/[\s,]+/).map(Number).filter((x) => Number.isInteger(x) && x > 0);
    if (!ids.length) { tide.message('give run ids separated by commas, e.g. 3,5,9', 'info'); return; }
    choose(ids.slice(0, 8));
  }
  function choose(ids) {
    state.runs = ids;
    setParams(ids.length > 1 ? {runs: ids, run: ''} : {run: ids[0], runs: ''});
    load(true);
  }
  function step(d) {
    const cur = state.runs[0] || (traced.length ? traced[traced.length - 1].id : 0);
    const i = traced.findIndex((r) => r.id === cur);
    const j = i + d;
    if (i >= 0 && j >= 0 && j < traced.length) choose([traced[j].id]);
  }

  async function loadPicker() {
    const r = await api('/api/runs', {traced: 1, limit: 1000});
    if (!r) return;
    traced = r.runs;
    clear(runSel);
    for (const x of traced.slice().reverse()) runSel.appendChild(option(x.id, 'run ' + x.id + ' · session ' + x.session + ' · step ' + x.step));
    if (state.runs.length === 1) runSel.value = String(state.runs[0]);
  }

  async function load(resetView) {
    let ids = state.runs;
    if (!ids.length) {
      if (!traced.length) {
        info.textContent = '';
        tide.message('No traced runs yet: run(..., {trace = true}) or :trace on records per-node timings.', 'info');
        return;
      }
      ids = [traced[traced.length - 1].id];
      runSel.value = String(ids[0]);
    }
    const d = await timelineGuard(() => api('/api/timeline', ids.length > 1 ? {runs: ids.join(',')} : {run: ids[0]}));
    if (d === tide.STALE || !d) return;
    data = d;
    multi.value = ids.join(',');
    clear(exportBox);
    for (const r of d.runs)
      exportBox.appendChild(h('a', {href: tide.url('/api/trace.json', {run: r.id}), download: 'tide-run-' + r.id + '.trace.json',
        text: 'Export Chrome trace' + (d.runs.length > 1 ? ' (' + r.id + ')' : ''), style: {marginRight: '8px'}}));
    layout();
    if (resetView) view = {t0: 0, t1: maxT};
    const ev = d.runs.reduce((a, r) => a + r.events.length, 0);
    info.textContent = d.runs.length + (d.runs.length > 1 ? ' runs · ' : ' run · ') + ev + ' events';
    draw();
    topOps();
  }

  /* ------------------------------------------------------------------ top ops */
  /* Busy time of an event: its span less the time it waited (an asynchronous _Recv). */
  const busy = (e) => Math.max(0, (e.end_us - e.start_us) - (e.wait_us || 0));
  function totals(events, keyOf) {
    const by = new Map();
    for (const e of events) {
      const k = keyOf(e);
      const t = by.get(k) || {key: k, op: e.op, count: 0, total: 0, waited: 0, max: 0};
      t.count++; t.total += busy(e); t.waited += e.wait_us || 0; t.max = Math.max(t.max, busy(e));
      by.set(k, t);
    }
    return [...by.values()];
  }
  /* An execution's label: inside a loop the node runs once per iteration, marked "#k". */
  function label(e) { return e.frame ? e.node + ' #' + e.iteration : e.node; }
  /* Each run's memory per device: its kernels' peak and what the device held at the run's end. */
  function memoryTable(r) {
    const mem = r.device_memory || [];
    if (!mem.length) return null;
    return h('div', {class: 'panel', id: 't-mem-' + r.id},
      h('h2', null, 'memory per device', h('span', {class: 'h2-note', text: 'run ' + r.id +
        ' · peak: the most its kernels held at once in tensors they allocated · held: what the device held when it ended'})),
      tide.table([{label: 'device', get: (m) => m.device}, {label: 'peak', get: (m) => tide.fmtBytes(m.peak_bytes), num: true},
                  {label: 'held', get: (m) => tide.fmtBytes(m.held_bytes), num: true}], mem, 'grid t-mem'));
  }
  function topOps() {
    clear(opsBox);
    clear(memBox);
    for (const r of data.runs) {
      const mt = memoryTable(r);
      if (mt) memBox.appendChild(mt);
      if (!r.events.length) continue;
      const all = r.events.reduce((a, e) => a + busy(e), 0) || 1;
      const pct = (x) => (100 * x.total / all).toFixed(1) + ' %';
      const us = (k) => (x) => tide.fmtUs(x[k]);
      const ops = totals(r.events, (e) => e.op), nodes = totals(r.events, (e) => e.node);
      opsBox.appendChild(h('div', {class: 'panel', id: 't-ops-' + r.id},
        h('h2', null, 'top ops', h('span', {class: 'h2-note', text: 'run ' + r.id + ' · busy ' + tide.fmtUs(all) +
          ' in all lanes (waiting left out) · click a column to sort'})),
        h('div', {class: 'ops-grid'},
          h('div', {class: 'scroll'}, tide.sortableTable([
            {label: 'op type', key: 'op', get: (x) => x.key},
            {label: 'count', key: 'count', get: (x) => x.count, value: (x) => x.count, num: true},
            {label: 'total', key: 'total', get: us('total'), value: (x) => x.total, num: true},
            {label: 'mean', key: 'mean', get: (x) => tide.fmtUs(x.total / x.count), value: (x) => x.total / x.count, num: true},
            {label: 'share', key: 'share', get: pct, value: (x) => x.total, num: true},
            {label: 'waited', key: 'waited', get: us('waited'), value: (x) => x.waited, num: true},
          ], ops, {key: 'total', desc: true}, 'grid ops-by-op')),
          h('div', {class: 'scroll'}, tide.sortableTable([
            {label: 'node', key: 'node', get: (x) => h('span', {class: 'mono', text: x.key}), value: (x) => x.key},
            {label: 'op', key: 'op', get: (x) => x.op},
            {label: 'count', key: 'count', get: (x) => x.count, value: (x) => x.count, num: true},
            {label: 'total', key: 'total', get: us('total'), value: (x) => x.total, num: true},
            {label: 'mean', key: 'mean', get: (x) => tide.fmtUs(x.total / x.count), value: (x) => x.total / x.count, num: true},
            {label: 'max', key: 'max', get: us('max'), value: (x) => x.max, num: true},
          ], nodes, {key: 'total', desc: true}, 'grid ops-by-node')))));
    }
  }

  function layout() {
    rows = [];
    let y = AXIS_H;
    maxT = 1;
    for (const r of data.runs) {
      const mem = (r.device_memory || []).filter((m) => m.peak_bytes > 0 || m.held_bytes > 0)
        .map((m) => m.device + ' ' + tide.fmtBytes(m.peak_bytes) + ' / ' + tide.fmtBytes(m.held_bytes)).join(', ');
      rows.push({kind: 'run', y, run: r, label: 'run ' + r.id + ' · step ' + r.step + ' · ' + fmtUs(r.wall_us) +
                 (r.peak_bytes != null ? ' · peak ' + tide.fmtBytes(r.peak_bytes) : '') +
                 (mem ? ' · peak / held per device: ' + mem : '')});
      y += RUN_H;
      const depth = stack(r);
      r.lanes.forEach((l, i) => {
        const hgt = depth[i] * SUB_H + 4;
        rows.push({kind: 'lane', y, h: hgt, run: r, lane: i, label: l.label || (l.device + ' t' + l.thread), device: l.device,
                   color: l.color || tide.UNPLACED, stream: l.stream || null});
        y += hgt;
      });
      for (const e of r.events) maxT = Math.max(maxT, e.end_us);
      maxT = Math.max(maxT, r.wall_us || 0);
    }
    canvas.style.height = (y + 8) + 'px';
  }
  /* Overlapping events of a lane (asynchronous _Recv waits, inter-op parallelism on one thread) go on
   * sub-rows: each event takes the first sub-row free at its start (e.row). Returns the depth per lane. */
  function stack(r) {
    const ends = r.lanes.map(() => []);
    for (const e of r.events.slice().sort((a, b) => a.start_us - b.start_us || b.end_us - a.end_us)) {
      const subs = ends[e.lane] || (ends[e.lane] = []);
      let k = subs.findIndex((end) => end <= e.start_us);
      if (k < 0) { k = subs.length; subs.push(0); }
      subs[k] = e.end_us;
      e.row = k;
    }
    return ends.map((x) => Math.max(1, x.length));
  }
  const laneY = (r, lane) => { const row = rows.find((x) => x.kind === 'lane' && x.run === r && x.lane === lane); return row ? row.y : 0; };

  function draw() {
    if (!data) return;
    const dpr = window.devicePixelRatio || 1;
    const W = canvas.clientWidth, H = canvas.clientHeight;
    canvas.width = Math.round(W * dpr); canvas.height = Math.round(H * dpr);
    const ctx = canvas.getContext('2d');
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    ctx.clearRect(0, 0, W, H);
    ctx.font = '11px system-ui, sans-serif';
    const sx = (t) => LABEL_W + (t - view.t0) / (view.t1 - view.t0) * (W - LABEL_W - 10);
    /* axis */
    ctx.fillStyle = '#666'; ctx.strokeStyle = '#eee';
    for (const t of tide.ticks(view.t0, view.t1, Math.max(2, Math.floor((W - LABEL_W) / 110)))) {
      const x = sx(t);
      ctx.beginPath(); ctx.moveTo(x + 0.5, AXIS_H - 4); ctx.lineTo(x + 0.5, H); ctx.stroke();
      ctx.fillText(fmtUs(t), x + 3, 14);
    }
    for (const row of rows) {
      if (row.kind === 'run') {
        ctx.fillStyle = '#f0f0f0'; ctx.fillRect(0, row.y, W, RUN_H - 2);
        ctx.fillStyle = '#222'; ctx.font = '600 11px system-ui, sans-serif'; ctx.fillText(row.label, 6, row.y + 14);
        ctx.font = '11px system-ui, sans-serif';
      } else {
        if (row.stream) { /* a device stream's lane: tinted, its marker hollow */
          ctx.globalAlpha = 0.07; ctx.fillStyle = row.color; ctx.fillRect(0, row.y, W, row.h); ctx.globalAlpha = 1;
          ctx.strokeStyle = row.color; ctx.lineWidth = 2; ctx.strokeRect(5, row.y + 6, 6, 6); ctx.lineWidth = 1;
        } else {
          ctx.fillStyle = row.color; ctx.fillRect(4, row.y + 5, 8, 8);
        }
        ctx.fillStyle = '#333'; ctx.fillText(fit(ctx, row.label, LABEL_W - 20), 16, row.y + 13);
        ctx.strokeStyle = '#e8e8e8'; ctx.beginPath(); ctx.moveTo(0, row.y + row.h - 0.5); ctx.lineTo(W, row.y + row.h - 0.5); ctx.stroke();
      }
    }
    ctx.save();
    ctx.beginPath(); ctx.rect(LABEL_W, AXIS_H, W - LABEL_W, H - AXIS_H); ctx.clip();
    const waits = [];   /* where waiting is drawn (CSS px), for tests that read the canvas back */
    for (const r of data.runs) {
      for (const e of r.events) {
        const x0 = sx(e.start_us), x1 = sx(e.end_us), xw = sx(e.start_us + (e.wait_us || 0));
        if (x1 < LABEL_W || x0 > W) continue;
        const y = laneY(r, e.lane);
        const color = r.lanes[e.lane] ? r.lanes[e.lane].color : tide.UNPLACED;
        const by = y + 2 + e.row * SUB_H;
        if (xw > x0) {   /* waiting: a faint dashed band, no work */
          if (waits.length < 100) waits.push({x0: Math.max(x0, LABEL_W), x1: Math.min(xw, W), y: by + SUB_H / 2 - 1, node: e.node});
          ctx.globalAlpha = 0.15; ctx.fillStyle = color; ctx.fillRect(x0, by + 3, xw - x0, SUB_H - 8); ctx.globalAlpha = 1;
          ctx.strokeStyle = color; ctx.lineWidth = 1; ctx.setLineDash([3, 3]);
          ctx.strokeRect(x0 + 0.5, by + 3.5, Math.max(1, xw - x0 - 1), SUB_H - 9); ctx.setLineDash([]);
        }
        ctx.fillStyle = color;
        if (x1 > xw || xw <= x0) ctx.fillRect(Math.max(x0, xw), by, Math.max(1, x1 - Math.max(x0, xw)), SUB_H - 2);
        const busyW = x1 - Math.max(x0, xw), l = Math.max(x0, LABEL_W);
        if (busyW > 30) {
          ctx.fillStyle = '#fff';
          ctx.fillText(fit(ctx, label(e), x1 - Math.max(l, xw) - 6), Math.max(l, xw) + 3, by + 11);
        } else if (xw - x0 > 60) {
          ctx.fillStyle = '#555';
          ctx.fillText(fit(ctx, label(e) + ' (waiting)', xw - l - 6), l + 3, by + 11);
        }
      }
      ctx.strokeStyle = '#222'; ctx.fillStyle = '#222'; ctx.lineWidth = 1;
      for (const t of r.transfers || []) arrow(ctx, sx(t.send_end_us), laneY(r, t.send_lane) + SUB_H / 2 + 1, sx(t.recv_end_us), laneY(r, t.recv_lane) + SUB_H / 2 + 1);
    }
    ctx.restore();
    /* Where the lanes are (CSS px, middle of each lane), for tests that read the canvas back. */
    canvas.dataset.lanes = JSON.stringify(rows.filter((r) => r.kind === 'lane').map((r) => r.y + 2 + SUB_H / 2));
    canvas.dataset.laneLabels = JSON.stringify(rows.filter((r) => r.kind === 'lane').map((r) => r.label));
    canvas.dataset.labelWidth = String(LABEL_W);
    canvas.dataset.waits = JSON.stringify(waits);
  }
  /* text cut to fit width px (with an ellipsis), instead of fillText's squeezing. */
  function fit(ctx, text, width) {
    if (ctx.measureText(text).width <= width) return text;
    let n = Math.max(0, Math.floor(width / 6.2));
    while (n > 0 && ctx.measureText(text.slice(0, n) + '…').width > width) n--;
    return n > 0 ? text.slice(0, n) + '…' : '';
  }
  function arrow(ctx, x0, y0, x1, y1) {
    ctx.beginPath(); ctx.moveTo(x0, y0); ctx.lineTo(x1, y1); ctx.stroke();
    const a = Math.atan2(y1 - y0, x1 - x0), s = 6;
    ctx.beginPath(); ctx.moveTo(x1, y1);
    ctx.lineTo(x1 - s * Math.cos(a - 0.4), y1 - s * Math.sin(a - 0.4));
    ctx.lineTo(x1 - s * Math.cos(a + 0.4), y1 - s * Math.sin(a + 0.4));
    ctx.closePath(); ctx.fill();
  }

  /* ------------------------------------------------------------------ interaction */
  const timeAt = (x) => view.t0 + (x - LABEL_W) / (canvas.clientWidth - LABEL_W - 10) * (view.t1 - view.t0);
  canvas.addEventListener('wheel', (e) => {
    if (!data || e.offsetX < LABEL_W) return;
    e.preventDefault();
    const k = Math.exp(Math.max(-0.5, Math.min(0.5, e.deltaY * 0.0015)));
    const t = timeAt(e.offsetX);
    const span = Math.max((view.t1 - view.t0) * k, 0.05);
    const f = span / (view.t1 - view.t0);
    view = {t0: t - (t - view.t0) * f, t1: t + (view.t1 - t) * f};
    draw();
  }, {passive: false});
  let drag = null;
  canvas.addEventListener('mousedown', (e) => { drag = {x: e.clientX, view: {...view}}; canvas.style.cursor = 'grabbing'; });
  window.addEventListener('mouseup', () => { drag = null; canvas.style.cursor = ''; });
  canvas.addEventListener('dblclick', () => { view = {t0: 0, t1: maxT}; draw(); });
  canvas.addEventListener('mouseleave', () => { tip.hidden = true; });
  window.addEventListener('mousemove', (e) => {
    if (!drag) return;
    const dt = (e.clientX - drag.x) / (canvas.clientWidth - LABEL_W - 10) * (drag.view.t1 - drag.view.t0);
    view = {t0: drag.view.t0 - dt, t1: drag.view.t1 - dt};
    draw();
  });
  canvas.addEventListener('mousemove', (e) => {
    if (drag || !data) return;
    const hit = eventAt(e.offsetX, e.offsetY);
    if (!hit) { tip.hidden = true; return; }
    const {ev, run} = hit;
    clear(tip);
    const lane = run.lanes[ev.lane];
    append(tip, [h('b', {text: ev.node}), h('div', {text: 'op ' + ev.op + ' · ' + (lane.stream ? lane.label + ' (device stream)' : lane.device)}),
      ev.launch_start_us != null ? h('div', {class: 't-launch', text: 'launched by the host at ' + fmtUs(ev.launch_start_us) +
        ' (for ' + fmtUs(ev.launch_end_us - ev.launch_start_us) + '); ran on the device ' +
        fmtUs(ev.start_us - ev.launch_start_us) + ' after the launch began'}) : null,
      ev.copy ? h('div', {class: 't-copy', text: ev.op === '_CopyToHost'
        ? 'copy of ' + ev.node + ' into host memory, for the observers (run log, watches)'
        : 'copy between memory spaces (the transfer\'s _Recv)'}) : null,
      ev.frame ? h('div', {class: 't-iteration', text: 'loop ' + ev.frame + ', iteration ' + ev.iteration}) : null,
      ev.fused ? h('div', {class: 't-fused', text: 'fused group: ' + ev.fused + ' (one pass)'}) : null,
      h('div', {text: 'start ' + fmtUs(ev.start_us) + ' · duration ' + fmtUs(ev.end_us - ev.start_us)}),
      ev.wait_us > 0 ? h('div', {text: 'waited ' + fmtUs(ev.wait_us) + ' for its value (asynchronous: no thread held) · busy ' +
                                       fmtUs(Math.max(0, ev.end_us - ev.start_us - ev.wait_us))}) : null,
      ev.scheduled_us !== undefined && ev.scheduled_us !== null ? h('div', {text: 'waited ' + fmtUs(ev.start_us - ev.scheduled_us) + ' after scheduling'}) : null,
      h('div', {text: 'output ' + (ev.shapes ? ev.shapes + ' · ' : '') + tide.fmtBytes(ev.bytes)})]);
    tip.hidden = false;
    tip.style.left = Math.min(e.offsetX + 12, canvas.clientWidth - 260) + 'px';
    tip.style.top = e.offsetY + 14 + 'px';
  });
  function eventAt(x, y) {
    const row = rows.find((r) => r.kind === 'lane' && y >= r.y && y < r.y + r.h);
    if (!row || x < LABEL_W) return null;
    const sub = Math.floor((y - row.y - 2) / SUB_H);
    const t = timeAt(x), slack = (view.t1 - view.t0) / (canvas.clientWidth - LABEL_W) * 2;
    let best = null;
    for (const ev of row.run.events)
      if (ev.lane === row.lane && ev.row === sub && ev.start_us - slack <= t && t <= ev.end_us + slack && (!best || ev.end_us - ev.start_us < best.end_us - best.start_us)) best = ev;
    return best ? {ev: best, run: row.run} : null;
  }
  window.addEventListener('resize', draw);

  tide.topbar('timeline');
  tide.onStatus(async (s, changed) => {
    if (changed.first || changed.run) {
      await loadPicker();
      if (changed.first || !state.runs.length) load(true);
    }
  });
})();
