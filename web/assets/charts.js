/* charts.js — the canvas charts of the pages (on tide.charts): line charts of curves (several series
 * overlaid, a linear or log y axis, any x: steps, runs, seconds; hover values; non-finite values marked
 * in red), and TensorBoard's distributions (percentile bands of a tensor's histograms over steps) and
 * histograms (one outline per step, offset back in time). Needs common.js. */
'use strict';
tide.charts = (() => {
  const {h, append, clear, fmtNum, ticks} = tide;

  /* Sizes canvas to its CSS box (device pixels) and returns its 2-D context in CSS pixels. */
  function setup(canvas) {
    const dpr = window.devicePixelRatio || 1;
    const W = canvas.clientWidth || 400, H = canvas.clientHeight || 200;
    canvas.width = Math.round(W * dpr); canvas.height = Math.round(H * dpr);
    const ctx = canvas.getContext('2d');
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    ctx.clearRect(0, 0, W, H);
    ctx.font = '11px system-ui, sans-serif';
    return {ctx, W, H};
  }

  /* An x tick's label centred under x, kept inside the canvas (the last tick's label was cut at the
   * right edge). */
  function xTickLabel(ctx, text, x, W, H) {
    const w = ctx.measureText(text).width, left = Math.max(0, Math.min(W - w - 1, x - w / 2));
    ctx.fillText(text, left, H - 6);
    return {text, at: Math.round(x), left: Math.round(left), right: Math.round(left + w)};
  }

  /* Ticks of a log axis over [a, b] (log10 values): the powers of ten, with 2 and 5 times them when
   * the range spans few decades. Returns log10 values. */
  function logTicks(a, b) {
    const out = [];
    const mults = b - a < 2.5 ? [1, 2, 5] : [1];
    for (let e = Math.floor(a); e <= Math.ceil(b); e++)
      for (const m of mults) {
        const t = e + Math.log10(m);
        if (t >= a - 1e-9 && t <= b + 1e-9) out.push(t);
      }
    return out.length >= 2 ? out : ticks(a, b, 4);
  }

  /* A line chart: series [{label, color, points: [{x, y, raw}], faint}] drawn into canvas (CSS size from
   * its box). opts: tip (an element for hover values), xlabel ('step'), xFormat(x) (tick and hover
   * text of an x), logY (a log10 y axis: values <= 0 are left out, and counted in canvas.dataset.hidden).
   * canvas.dataset also says what is drawn: series (not faint), scale (log/linear), xlabel, x0 and x1,
   * xticks (JSON: each x tick label's text, its tick's x and the label's left and right edge, CSS pixels).
   * A y of null is a gap; a non-finite y breaks the line and is marked in red: +Infinity by a triangle at
   * the top edge, -Infinity at the bottom, NaN by a dashed vertical line. */
  function line(canvas, series, opts) {
    opts = opts || {};
    const {ctx, W, H} = setup(canvas);
    const ty = opts.logY ? (y) => (y > 0 ? Math.log10(y) : null) : (y) => y;
    const fx = opts.xFormat || ((x) => fmtNum(x, 4));
    let hidden = 0;
    const drawn = series.map((s) => ({...s, points: s.points.map((p) => {
      if (p.y === null || !isFinite(p.y)) return {...p, ty: p.y};
      const t = ty(p.y);
      if (t === null) hidden++;
      return {...p, ty: t};
    })}));
    canvas.dataset.hidden = String(hidden);
    const placed = drawn.flatMap((s) => s.points).filter((p) => isFinite(p.x) && p.ty !== null);
    const all = placed.filter((p) => isFinite(p.ty));
    const L = 52, R = 10, T = 8, B = 22;
    if (!placed.length) {
      ctx.fillStyle = '#888'; ctx.fillText(hidden ? 'no positive values for a log scale' : 'no points', W / 2 - 40, H / 2);
      canvas._chart = null;
      return;
    }
    let x0 = Math.min(...placed.map((p) => p.x)), x1 = Math.max(...placed.map((p) => p.x));
    let y0 = all.length ? Math.min(...all.map((p) => p.ty)) : 0, y1 = all.length ? Math.max(...all.map((p) => p.ty)) : 0;
    if (x0 === x1) { x0 -= 1; x1 += 1; }
    if (y1 - y0 <= Math.abs(y0) * 1e-9) { y0 -= Math.abs(y0) * 0.1 || 1; y1 += Math.abs(y1) * 0.1 || 1; } /* flat, or flat but for rounding */
    const pad = (y1 - y0) * 0.05; y0 -= pad; y1 += pad;
    const sx = (x) => L + (x - x0) / (x1 - x0) * (W - L - R);
    const sy = (y) => T + (1 - (y - y0) / (y1 - y0)) * (H - T - B);
    ctx.strokeStyle = '#e3e3e3'; ctx.fillStyle = '#666'; ctx.lineWidth = 1;
    for (const t of opts.logY ? logTicks(y0, y1) : ticks(y0, y1, 5)) {
      ctx.beginPath(); ctx.moveTo(L, sy(t) + 0.5); ctx.lineTo(W - R, sy(t) + 0.5); ctx.stroke();
      ctx.fillText(fmtNum(opts.logY ? Math.pow(10, t) : t, 3), 2, sy(t) + 4);
    }
    const xticks = ticks(x0, x1, 6).map((t) => xTickLabel(ctx, fx(t), sx(t), W, H));
    for (const s of drawn) {
      ctx.strokeStyle = s.color; ctx.globalAlpha = s.faint ? 0.25 : 1; ctx.lineWidth = s.faint ? 1 : 1.6;
      ctx.beginPath();
      let pen = false;
      for (const p of s.points) {
        const ok = p.ty !== null && isFinite(p.ty) && isFinite(p.x);
        if (ok) (pen ? ctx.lineTo(sx(p.x), sy(p.ty)) : ctx.moveTo(sx(p.x), sy(p.ty)));
        pen = ok;
      }
      ctx.stroke();
      const one = s.points.filter((p) => p.ty !== null && isFinite(p.ty));
      if (one.length === 1) { ctx.fillStyle = s.color; ctx.fillRect(sx(one[0].x) - 2, sy(one[0].ty) - 2, 4, 4); }
      if (!s.faint) nonFiniteMarks(ctx, s.points, sx, T, H - B);
    }
    ctx.globalAlpha = 1;
    canvas._chart = {series: drawn, x0, x1, L, R, W, tip: opts.tip, xlabel: opts.xlabel || 'step', fx};
    /* What is drawn, for tests that read the chart back. */
    Object.assign(canvas.dataset, {series: String(drawn.filter((s) => !s.faint).length), scale: opts.logY ? 'log' : 'linear',
                                   xlabel: opts.xlabel || 'step', x0: String(x0), x1: String(x1), xticks: JSON.stringify(xticks)});
    if (!canvas._hover) {
      canvas._hover = true;
      canvas.addEventListener('mousemove', (ev) => hover(canvas, ev));
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
  /* The nearest point of each series to the pointer's x, in the tip. */
  function hover(canvas, ev) {
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
      lines.push(h('div', null, h('span', {class: 'swatch', style: {background: s.color}}),
        s.label + ': ' + fmtNum(p.y, 6) + (p.raw !== undefined && !Object.is(p.raw, p.y) ? ' (raw ' + fmtNum(p.raw, 6) + ')' : '')));
    }
    if (best === null) return;
    clear(c.tip);
    append(c.tip, [h('b', {text: c.xlabel + ' ' + c.fx(best)}), lines]);
    c.tip.hidden = false;
    c.tip.style.left = Math.min(ev.offsetX + 12, c.W - 180) + 'px';
    c.tip.style.top = ev.offsetY + 12 + 'px';
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

  /* ------------------------------------------------------------------ distributions and histograms */
  /* TensorBoard's percentiles (in %): the bands of a normal distribution at 0, 1, 1.5, 2 and 3 sigmas. */
  const PERCENTILES = [0, 6.68, 15.87, 30.85, 50, 69.15, 84.13, 93.32, 100];

  /* The values at PERCENTILES of one step's histogram ({min, max, counts}: equal bins from min to max),
   * interpolated within bins; null when it has no finite value. */
  function percentiles(step) {
    const c = step.counts, total = c ? c.reduce((a, x) => a + x, 0) : 0;
    if (!total || step.min === null || step.max === null) return null;
    const w = (step.max - step.min) / c.length;
    return PERCENTILES.map((q) => {
      const target = q / 100 * total;
      let cum = 0;
      for (let b = 0; b < c.length; b++) {
        if (cum + c[b] >= target && c[b] > 0) return step.min + (b + (target - cum) / c[b]) * w;
        cum += c[b];
      }
      return step.max;
    });
  }

  /* Distributions: for each step, bands between the percentiles (darker toward the median), the median
   * as a line. steps: [{step, min, max, counts}] in step order. */
  function distributions(canvas, steps, opts) {
    opts = opts || {};
    const {ctx, W, H} = setup(canvas);
    const pts = steps.map((s) => ({x: s.step, p: percentiles(s)})).filter((s) => s.p);
    canvas.dataset.steps = String(pts.length);
    const L = 52, R = 10, T = 8, B = 22;
    if (!pts.length) { ctx.fillStyle = '#888'; ctx.fillText('no finite values', W / 2 - 40, H / 2); return; }
    let x0 = pts[0].x, x1 = pts[pts.length - 1].x;
    let y0 = Math.min(...pts.map((s) => s.p[0])), y1 = Math.max(...pts.map((s) => s.p[8]));
    if (x0 === x1) { x0 -= 1; x1 += 1; }
    if (y0 === y1) { y0 -= 1; y1 += 1; }
    const sx = (x) => L + (x - x0) / (x1 - x0) * (W - L - R), sy = (y) => T + (1 - (y - y0) / (y1 - y0)) * (H - T - B);
    axes(ctx, sx, sy, x0, x1, y0, y1, W, H, L, R);
    const color = opts.color || '#ff7f0e';
    for (let band = 0; band < 4; band++) {
      ctx.globalAlpha = 0.18 + band * 0.12;
      ctx.fillStyle = color;
      ctx.beginPath();
      pts.forEach((s, i) => (i ? ctx.lineTo(sx(s.x), sy(s.p[8 - band])) : ctx.moveTo(sx(s.x), sy(s.p[8 - band]))));
      for (let i = pts.length - 1; i >= 0; i--) ctx.lineTo(sx(pts[i].x), sy(pts[i].p[band]));
      ctx.closePath(); ctx.fill();
    }
    ctx.globalAlpha = 1; ctx.strokeStyle = color; ctx.lineWidth = 1.5;
    ctx.beginPath();
    pts.forEach((s, i) => (i ? ctx.lineTo(sx(s.x), sy(s.p[4])) : ctx.moveTo(sx(s.x), sy(s.p[4]))));
    ctx.stroke();
    canvas.onmousemove = (e) => {
      if (!opts.tip) return;
      const x = x0 + (e.offsetX - L) / (W - L - R) * (x1 - x0);
      const s = pts.reduce((a, b) => (Math.abs(b.x - x) < Math.abs(a.x - x) ? b : a));
      opts.tip.textContent = 'step ' + s.x + ' · median ' + fmtNum(s.p[4], 4) + ' · 16–84 % ' + fmtNum(s.p[2], 3) + ' … ' +
        fmtNum(s.p[6], 3) + ' · min ' + fmtNum(s.p[0], 3) + ' · max ' + fmtNum(s.p[8], 3);
      opts.tip.hidden = false; opts.tip.style.left = Math.min(e.offsetX + 12, W - 320) + 'px'; opts.tip.style.top = e.offsetY + 12 + 'px';
    };
    canvas.onmouseleave = () => { if (opts.tip) opts.tip.hidden = true; };
  }
  function axes(ctx, sx, sy, x0, x1, y0, y1, W, H, L, R) {
    ctx.strokeStyle = '#e3e3e3'; ctx.fillStyle = '#666'; ctx.lineWidth = 1;
    for (const t of ticks(y0, y1, 5)) {
      ctx.beginPath(); ctx.moveTo(L, sy(t) + 0.5); ctx.lineTo(W - R, sy(t) + 0.5); ctx.stroke();
      ctx.fillText(fmtNum(t, 3), 2, sy(t) + 4);
    }
    for (const t of ticks(x0, x1, 6)) xTickLabel(ctx, fmtNum(t, 4), sx(t), W, H);
  }

  /* Histograms over time: one outline per step (at most 30, evenly chosen), the oldest at the back (top),
   * the newest in front (bottom), each the density of its values (counts over bin width) on a common
   * value axis, darker when newer. */
  function histograms(canvas, steps, opts) {
    opts = opts || {};
    const {ctx, W, H} = setup(canvas);
    const usable = steps.filter((s) => s.counts && s.min !== null && s.max !== null && s.counts.some((c) => c > 0));
    const pick = usable.length <= 30 ? usable : Array.from({length: 30}, (_, i) => usable[Math.round(i * (usable.length - 1) / 29)]);
    canvas.dataset.steps = String(pick.length);
    if (!pick.length) { ctx.fillStyle = '#888'; ctx.fillText('no finite values', W / 2 - 40, H / 2); return; }
    let v0 = Math.min(...pick.map((s) => s.min)), v1 = Math.max(...pick.map((s) => s.max));
    if (v0 === v1) { v0 -= 0.5; v1 += 0.5; }
    const L = 10, R = 60, T = 10, B = 22;
    const rowH = (H - T - B) / (pick.length + 2), peak = rowH * 3;
    const density = (s) => {
      const w = (s.max - s.min) / s.counts.length || (v1 - v0) / 100;
      return s.counts.map((c) => c / w);
    };
    const top = Math.max(...pick.flatMap(density)) || 1;
    const sx = (v) => L + (v - v0) / (v1 - v0) * (W - L - R);
    const color = opts.color || [255, 127, 14];
    pick.forEach((s, i) => {
      const base = T + (i + 3) * rowH, d = density(s), n = s.counts.length, w = (s.max - s.min) / n;
      const shade = 0.35 + 0.65 * (pick.length > 1 ? i / (pick.length - 1) : 1);
      ctx.beginPath(); ctx.moveTo(sx(s.min), base);
      d.forEach((y, b) => ctx.lineTo(sx(s.min + (b + 0.5) * w), base - y / top * peak));
      ctx.lineTo(sx(s.max), base); ctx.closePath();
      ctx.fillStyle = 'rgba(' + color.join(',') + ',' + (0.12 + 0.3 * shade).toFixed(2) + ')'; ctx.fill();
      ctx.strokeStyle = 'rgba(' + color.map((c) => Math.round(c * (1.1 - 0.5 * shade))).join(',') + ',' + shade.toFixed(2) + ')';
      ctx.lineWidth = 1; ctx.stroke();
      if (i === 0 || i === pick.length - 1 || i % 6 === 0) { ctx.fillStyle = '#666'; ctx.fillText('step ' + s.step, W - R + 4, base); }
    });
    ctx.fillStyle = '#666';
    for (const t of ticks(v0, v1, 6)) xTickLabel(ctx, fmtNum(t, 3), sx(t), W, H);
  }

  return {setup, line, ema, logTicks, percentiles, distributions, histograms};
})();
