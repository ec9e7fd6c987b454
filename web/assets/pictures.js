/* pictures.js — tensors drawn as pictures on the tensor page (on tide.pictures): a heat map of a 2-D
 * tensor with its colour scale (a diverging blue-white-red ramp centred on 0 when the values take both
 * signs, viridis otherwise) and an aspect kept sensible for tall or wide tensors (a [784, 10] weight is
 * drawn 4:1, not 78:1); an image grid of NHWC tensors with 1, 3 or 4 channels (uint8 as they are,
 * floats min-max scaled per image); and the filters of a convolution's weights ([kh, kw, in, out],
 * TensorFlow's HWIO): one tile per output filter (an RGB tile when there are 3 input channels), or per
 * (input, output) pair, on one symmetric scale. Hovering tells the element's index and value. Needs
 * common.js. */
'use strict';
tide.pictures = (() => {
  const {h, append, fmtNum} = tide;
  const MAX_SIDE = 600;   /* CSS px of a heat map's longer side at most */
  const MAX_ASPECT = 4;   /* a heat map is drawn no narrower or flatter than 1:4 */

  /* Colour ramps: f in [0, 1] -> [r, g, b]. */
  function lerpStops(stops, f) {
    f = Math.max(0, Math.min(1, isFinite(f) ? f : 0)) * (stops.length - 1);
    const i = Math.min(Math.floor(f), stops.length - 2), u = f - i;
    return stops[i].map((c, k) => Math.round(c + (stops[i + 1][k] - c) * u));
  }
  const VIRIDIS = [[68, 1, 84], [59, 82, 139], [33, 145, 140], [94, 201, 98], [253, 231, 37]];
  const DIVERGING = [[33, 102, 172], [146, 197, 222], [247, 247, 247], [244, 165, 130], [178, 24, 43]];
  const NONFINITE = [255, 0, 255];

  /* The scale of values: {lo, hi, rgb(v)}; diverging (symmetric about 0) when they take both signs. */
  function scaleOf(vals) {
    let lo = Infinity, hi = -Infinity;
    for (const v of vals) if (isFinite(v)) { lo = Math.min(lo, v); hi = Math.max(hi, v); }
    if (lo === Infinity) { lo = 0; hi = 1; }
    if (lo < 0 && hi > 0) {
      const m = Math.max(-lo, hi);
      return {lo: -m, hi: m, diverging: true, rgb: (v) => (isFinite(v) ? lerpStops(DIVERGING, (v + m) / (2 * m)) : NONFINITE)};
    }
    return {lo, hi, diverging: false, rgb: (v) => (isFinite(v) ? lerpStops(VIRIDIS, hi > lo ? (v - lo) / (hi - lo) : 0.5) : NONFINITE)};
  }

  /* A horizontal colour bar of a scale, labelled at its ends (and at 0 when diverging). */
  function colorBar(scale, id) {
    const W = 240, H = 12;
    const cv = h('canvas', {class: 'colorbar', id, width: W, height: H});
    const ctx = cv.getContext('2d');
    for (let x = 0; x < W; x++) {
      const [r, g, b] = scale.rgb(scale.lo + (scale.hi - scale.lo) * x / (W - 1));
      ctx.fillStyle = 'rgb(' + r + ',' + g + ',' + b + ')';
      ctx.fillRect(x, 0, 1, H);
    }
    return h('div', {class: 'colorbar-box'}, cv, h('div', {class: 'colorbar-labels'},
      h('span', {text: fmtNum(scale.lo, 4)}), scale.diverging ? h('span', {text: '0'}) : null, h('span', {text: fmtNum(scale.hi, 4)})));
  }

  /* The displayed size of a R x C grid: cells up to 24 px, the longer side at most MAX_SIDE, the aspect
   * clamped to MAX_ASPECT (cells stretch the other way). */
  function gridSize(R, C) {
    const cell = Math.max(1, Math.min(24, MAX_SIDE / Math.max(R, C)));
    let w = C * cell, hh = R * cell;
    if (w * MAX_ASPECT < hh) w = hh / MAX_ASPECT;
    if (hh * MAX_ASPECT < w) hh = w / MAX_ASPECT;
    return {w: Math.round(w), h: Math.round(hh)};
  }

  /* Paints rgb(v) of an R x C grid into a canvas of R x C pixels (scaled up by CSS, pixelated). */
  function paint(R, C, at, rgb, id, size) {
    const cv = h('canvas', {class: 'heat', id, width: C, height: R});
    const ctx = cv.getContext('2d'), img = ctx.createImageData(C, R);
    for (let r = 0; r < R; r++) for (let c = 0; c < C; c++) {
      const [cr, cg, cb] = rgb(at(r, c)), k = (r * C + c) * 4;
      img.data[k] = cr; img.data[k + 1] = cg; img.data[k + 2] = cb; img.data[k + 3] = 255;
    }
    ctx.putImageData(img, 0, 0);
    cv.style.width = size.w + 'px';
    cv.style.height = size.h + 'px';
    return cv;
  }

  /* A hover tip telling what cell(x, y) (CSS px) says; cell returns text or null. */
  function withTip(cv, cell) {
    const tip = h('div', {class: 'tip', hidden: true});
    cv.addEventListener('mousemove', (e) => {
      const text = cell(e.offsetX, e.offsetY);
      if (text === null) { tip.hidden = true; return; }
      tip.textContent = text;
      tip.hidden = false; tip.style.left = e.offsetX + 12 + 'px'; tip.style.top = e.offsetY + 12 + 'px';
    });
    cv.addEventListener('mouseleave', () => { tip.hidden = true; });
    return h('div', {style: {position: 'relative', display: 'inline-block'}}, cv, tip);
  }

  /* A heat map of a 2-D tensor's values (row-major) into box. */
  function heat(box, shape, vals) {
    const [R, C] = shape;
    const scale = scaleOf(vals), size = gridSize(R, C);
    const cv = paint(R, C, (r, c) => vals[r * C + c], scale.rgb, 'x-heat', size);
    cv.dataset.scale = scale.diverging ? 'diverging' : 'viridis';
    append(box, [h('div', {class: 'muted', text: 'heat map ' + R + ' × ' + C + (scale.diverging ? ' · blue < 0 < red' : '')}),
      withTip(cv, (x, y) => {
        const r = Math.floor(y / size.h * R), c = Math.floor(x / size.w * C);
        return r < R && c < C ? '[' + r + ', ' + c + '] = ' + fmtNum(vals[r * C + c], 6) : null;
      }), colorBar(scale, 'x-colorbar')]);
  }

  /* NHWC images, each min-max scaled (uint8 as it is), in a grid. */
  function images(box, shape, vals, isUint8) {
    const [N, H, W, C] = shape;
    const scale = Math.max(1, Math.min(32, Math.floor(96 / Math.max(H, W))));
    const cols = Math.max(1, Math.min(N, Math.floor(640 / (W * scale + 4))));
    const rowsN = Math.ceil(N / cols);
    const cv = h('canvas', {class: 'images', id: 'x-images', width: cols * (W * scale + 4), height: rowsN * (H * scale + 4)});
    const ctx = cv.getContext('2d');
    ctx.imageSmoothingEnabled = false;
    const tmp = document.createElement('canvas'); tmp.width = W; tmp.height = H;
    const tctx = tmp.getContext('2d');
    for (let n = 0; n < N; n++) {
      const img = vals.slice(n * H * W * C, (n + 1) * H * W * C);
      let lo = 0, hi = 255;
      if (!isUint8) {
        const fin = img.filter(isFinite);
        lo = fin.length ? Math.min(...fin) : 0; hi = fin.length ? Math.max(...fin) : 1;
      }
      const data = tctx.createImageData(W, H);
      for (let p = 0; p < H * W; p++) {
        for (let k = 0; k < 3; k++) {
          const x = img[p * C + (C >= 3 ? k : 0)];
          data.data[p * 4 + k] = isFinite(x) ? Math.round(hi > lo ? (x - lo) / (hi - lo) * 255 : 128) : 0;
        }
        data.data[p * 4 + 3] = C === 4 ? Math.round(isUint8 ? img[p * C + 3] : 255) : 255;
      }
      tctx.putImageData(data, 0, 0);
      ctx.drawImage(tmp, (n % cols) * (W * scale + 4) + 2, Math.floor(n / cols) * (H * scale + 4) + 2, W * scale, H * scale);
    }
    append(box, [h('div', {class: 'muted', text: N + ' image' + (N === 1 ? '' : 's') + ' ' + H + ' × ' + W + ' × ' + C +
      (isUint8 ? '' : ', each min-max scaled')}), cv]);
    return cv;
  }

  /* Convolution filters [kh, kw, in, out] on one symmetric scale: one tile per output filter (RGB when
   * in is 3; wrapped into rows of up to 16 when there is one tile per filter), or one tile per input
   * channel (a row) and output filter (a column), up to 16 x 64. */
  function filters(box, shape, vals) {
    const [KH, KW, IN, OUT] = shape;
    const at = (y, x, i, o) => vals[((y * KW + x) * IN + i) * OUT + o];
    const scale = scaleOf(vals), rgbTiles = IN === 3, single = rgbTiles || IN === 1;
    const cols = single ? Math.min(OUT, OUT <= 32 ? 8 : 16) : Math.min(OUT, 64);
    const rows = single ? Math.ceil(Math.min(OUT, 256) / cols) : Math.min(IN, 16);
    const px = Math.max(3, Math.min(12, Math.floor(48 / Math.max(KH, KW)))), gap = 4;
    const tileW = KW * px + gap, tileH = KH * px + gap;
    /* the (input channel, output filter) of tile (row r, column c), or null past the last filter */
    const tile = (r, c) => (single ? (r * cols + c < Math.min(OUT, 256) ? [0, r * cols + c] : null) : [r, c]);
    const cv = h('canvas', {class: 'images', id: 'x-filters', width: cols * tileW + gap, height: rows * tileH + gap});
    const ctx = cv.getContext('2d');
    const m = Math.max(Math.abs(scale.lo), Math.abs(scale.hi)) || 1;
    for (let r = 0; r < rows; r++) for (let c = 0; c < cols; c++) {
      const t = tile(r, c);
      if (!t) continue;
      for (let y = 0; y < KH; y++) for (let x = 0; x < KW; x++) {
        const rgb = rgbTiles ? [0, 1, 2].map((k) => Math.round((at(y, x, k, t[1]) + m) / (2 * m) * 255)) : scale.rgb(at(y, x, t[0], t[1]));
        ctx.fillStyle = 'rgb(' + rgb.join(',') + ')';
        ctx.fillRect(gap + c * tileW + x * px, gap + r * tileH + y * px, px, px);
      }
    }
    const what = rgbTiles ? OUT + ' filters ' + KH + ' × ' + KW + ' (RGB)'
                          : OUT + ' filters × ' + IN + ' input channel' + (IN === 1 ? '' : 's') + ', ' + KH + ' × ' + KW +
                            (!single && (IN > rows || OUT > cols) ? ' (the first ' + rows + ' × ' + cols + ' shown)' : '');
    append(box, [h('div', {class: 'muted', text: what + (single ? ' · one tile per filter' : ' · a row per input channel, a column per filter')}),
      withTip(cv, (ex, ey) => {
        const c = Math.floor((ex - gap) / tileW), r = Math.floor((ey - gap) / tileH), t = c >= 0 && c < cols && r >= 0 && r < rows ? tile(r, c) : null;
        return t ? 'filter ' + t[1] + (single ? '' : ', input channel ' + t[0]) : null;
      }), rgbTiles ? null : colorBar(scale, 'x-colorbar')]);
    return cv;
  }

  return {heat, images, filters, scaleOf, gridSize};
})();
