// pages.test.mjs — the browser views end to end in headless Chromium (playwright-core): a real training
// run of the tide binary (two devices, traced runs, a summary, a watched 2-D tensor and a watched NHWC
// image tensor) makes a run log, `tide serve LOG --port 0` serves it, and every page is loaded and
// checked: no console errors, failed requests or HTTP errors; the graph's nodes are coloured by device
// and a scope expands and collapses on click; the node panel fills; the timeline has bars in more than
// one lane and a tooltip; the tensor page draws a heat map and an image grid; the runs page draws a
// curve, one of NaN and infinities with those points marked, and a fetched scalar labelled so;
// compare lists per-node times; a slower earlier answer of the runs table or of compare never replaces
// a newer one; the runs table grows while another process writes the log.
// Screenshots of every page go to the directory given as the second argument.
//
//   node pages.test.mjs TIDE_BINARY SCREENSHOT_DIR
//
// Exit status: 0 passed, 1 failed, 77 skipped (no Chromium, or `npm install` was not run here).
import path from 'node:path';

import {check, done, finish as finishIn, inkedPixels, launch, open, runTide, serve, sleep, start, waitFor} from './lib.mjs';

const {tide, shots, dir, chromium} = await start('pages.test.mjs');
const finish = (name, p) => finishIn(shots, name, p);

// A summary tag is free text: the pages must show it as text (an <img> made from it would also request
// /xss-probe and fail the no-HTTP-errors check).
const XSS_TAG = '<img src=/xss-probe>';

// The model: two scopes on two devices, traced training steps, a loss summary, watched W1 (2-D) and
// img (NHWC, 1 channel). Fed as entries through stdin so the ':watch' commands work.
function trainingInput(steps) {
  return `:watch layer1/W1
:watch img
x = placeholder(float32, {nil, 4})
labels = placeholder(int32, {-1})
device("/cpu:0", function() scope("layer1", function() W1 = variable(random_normal({4, 8}, {stddev = 0.5})); b1 = variable(zeros{8}); h = relu(matmul(x, W1) + b1) end) end)
device("/cpu:1", function() scope("layer2", function() W2 = variable(random_normal({8, 3}, {stddev = 0.5})); b2 = variable(zeros{3}); logits = matmul(h, W2) + b2 end) end)
loss = mean(sparse_softmax_cross_entropy(labels, logits))
img = reshape(x, {-1, 2, 2, 1})
s = summary("loss", loss)
s2 = summary("${XSS_TAG}", loss * 2)
train = sgd(0.5):minimize(loss)
odd = placeholder(float32, "[]", {name = "odd"})
s3 = summary("nonfinite", odd)
odds = {1.5, math.huge, 0 / 0, -math.huge, 2}
run(init())
bx = tensor({{1,0,0,0},{0,1,0,0},{0,0,1,0},{0,0,0,1},{1,1,0,0},{0,1,1,0}})
by = tensor({0,1,2,0,1,2})
for i = 1, ${steps} do run({train, s, s2, img, s3}, {[x] = bx, [labels] = by, [odd] = tensor(odds[(i - 1) % 5 + 1])}, {trace = true}) end
run(loss, {[x] = bx, [labels] = by})
`;
}
function train(db, steps) {
  runTide(tide, ['--devices', '2', '--log', db, '-q'], trainingInput(steps));
}

// ---------------------------------------------------------------------------------------- the test
const db = path.join(dir, 'runs.db');
let server = null, browser = null;
try {
  train(db, 8);
  server = await serve(tide, db);
  console.log('serving at ' + server.url);
  const base = server.url;
  const api = async (p) => (await fetch(base + p.replace(/^\//, ''))).json();
  const runs = (await api('/api/runs')).runs;
  const tracedRuns = runs.filter((r) => r.traced && String(r.status).toLowerCase() === 'ok');
  check(tracedRuns.length >= 2, 'the log has traced runs', JSON.stringify(runs.slice(0, 3)));
  const lastTraced = tracedRuns[tracedRuns.length - 1].id, prevTraced = tracedRuns[tracedRuns.length - 2].id;

  browser = await launch(chromium);

  // -- runs page: tables, the loss curve, compare link
  {
    const p = await open(browser, base, '/');
    await waitFor(p.page, 'runs: the runs table lists every run', (n) => document.querySelectorAll('#runs tbody tr').length >= n, runs.length);
    await waitFor(p.page, 'runs: the sessions table lists the session', () => document.querySelectorAll('#sessions tbody tr').length >= 1);
    await waitFor(p.page, 'runs: a loss chart exists', () => !!document.querySelector('canvas[data-tag="loss"]'));
    await sleep(500);
    const ink = await inkedPixels(p.page, 'canvas[data-tag="loss"]');
    check(ink > 200, 'runs: the loss curve is drawn', ink + ' inked pixels');
    // A summary of NaN and infinities (sent as "NaN", "Infinity", "-Infinity"): drawn, its line broken,
    // the non-finite points marked in red (#e15759).
    await waitFor(p.page, 'runs: the non-finite curve exists', () => !!document.querySelector('canvas[data-tag="nonfinite"]'));
    await sleep(300);
    check(await inkedPixels(p.page, 'canvas[data-tag="nonfinite"]') > 100, 'runs: the non-finite curve is drawn');
    const red = await p.page.$eval('canvas[data-tag="nonfinite"]', (c) => {
      const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
      let n = 0;
      for (let i = 0; i < d.length; i += 4) if (Math.abs(d[i] - 225) < 20 && Math.abs(d[i + 1] - 87) < 25 && Math.abs(d[i + 2] - 89) < 25) n++;
      return n;
    });
    check(red > 20, 'runs: NaN and infinities are marked in red', red + ' red pixels');
    // An evaluation that fetched loss: a curve of its own, labelled fetched (not watched), beside the
    // summary tagged "loss".
    await waitFor(p.page, 'runs: the fetched loss is a curve of its own, labelled fetched', () => {
      const c = document.querySelector('canvas[data-tag="loss"][data-kind="fetched"]');
      return !!c && /^fetched · .*\(1\)/.test(c.closest('.card').querySelector('h3 .kind').textContent);
    });
    check(await p.page.evaluate((tag) => [...document.querySelectorAll('.card h3')].some((e) => e.firstChild.nodeValue === tag) &&
      !document.querySelector('img'), XSS_TAG), 'runs: a tag with markup is shown as text');
    const boxes = await p.page.$$('#runs input.tick');
    if (check(boxes.length >= 2, 'runs: runs can be ticked')) {
      await boxes[0].check(); await boxes[1].check();
      check(!(await p.page.$eval('#compare', (b) => b.disabled)), 'runs: two ticked runs enable compare');
    }
    await p.page.selectOption('#f-traced', '0');
    await waitFor(p.page, 'runs: the traced filter leaves the untraced runs',
      (n) => document.querySelectorAll('#runs tbody tr').length === n, runs.filter((r) => !r.traced).length);
    await p.page.selectOption('#f-traced', '');
    await finish('runs', p);
  }
  // -- runs page: the runs of the traced filter answer late (2 s); the filter moves on to "not traced"
  // meanwhile: the untraced runs stay.
  {
    let delayed = false;
    const p = await open(browser, base, '/', {before: (page) => page.route('**/api/runs?*', async (route) => {
      if (!delayed && new URL(route.request().url()).searchParams.get('traced') === '1') { delayed = true; await sleep(2000); }
      await route.continue();
    })});
    await waitFor(p.page, 'runs stale: the runs table lists every run', (n) => document.querySelectorAll('#runs tbody tr').length >= n, runs.length);
    await p.page.selectOption('#f-traced', '1');
    await sleep(200);
    await p.page.selectOption('#f-traced', '0');
    await sleep(2600);
    const untraced = runs.filter((r) => !r.traced).length;
    const rows = await p.page.$$eval('#runs tbody tr', (r) => r.length);
    check(delayed && rows === untraced, 'runs stale: the slower traced runs did not replace the untraced ones', `${rows} rows, ${untraced} untraced`);
    await finish('runs-stale', p);
  }

  // -- graph page: colours by device, expand and collapse a scope, the node panel
  {
    const p = await open(browser, base, '/graph');
    await waitFor(p.page, 'graph: the SVG has nodes', () => document.querySelectorAll('#g-view svg g.node').length > 0);
    const fills = await p.page.$$eval('#g-view svg g.node', (gs) => gs.map((g) => {
      const s = g.querySelector('ellipse[fill], polygon[fill], path[fill]');
      return s ? s.getAttribute('fill').toLowerCase() : null;
    }).filter((f) => f && f !== 'none' && f !== '#d3d3d3'));
    check(new Set(fills).size >= 2, 'graph: node fills differ by device', JSON.stringify([...new Set(fills)]));
    check(await p.page.$('[id="scope:layer1"]') !== null, 'graph: layer1 is drawn collapsed');
    await p.page.click('[id="scope:layer1"]');
    await waitFor(p.page, 'graph: clicking scope:layer1 expands it (cluster:layer1)', () =>
      [...document.querySelectorAll('#g-view svg g.cluster')].some((g) => g.id === 'cluster:layer1'));
    check(/expand=layer1/.test(p.page.url()), 'graph: the expanded set is in the URL', p.page.url());
    await p.page.click('[id="node:layer1/W1"]');
    await waitFor(p.page, 'graph: the node panel shows W1 (a Variable)', () =>
      document.querySelector('#n-name') && document.querySelector('#n-name').textContent === 'layer1/W1' &&
      document.querySelector('#n-op').textContent === 'Variable');
    check(await p.page.$$eval('#n-consumers li', (l) => l.length) >= 1, 'graph: the node panel lists consumers');
    const shapes = await p.page.$eval('#n-shapes', (e) => e.textContent);
    check(/^\[\d+, \d+\]$/.test(shapes), 'graph: the node panel shows the shape W1 had in the run', shapes);
    check(await p.page.$('#n-tensor') !== null, 'graph: the node panel shows the watched tensor\'s statistics');
    await p.page.screenshot({path: path.join(shots, 'graph-expanded.png')});
    await p.page.locator('[id="cluster:layer1"] > text').first().click();
    await waitFor(p.page, 'graph: clicking the cluster label collapses it again', () =>
      !![...document.querySelectorAll('#g-view svg g.node')].find((g) => g.id === 'scope:layer1'));
    await p.page.fill('#g-search', 'layer2/W2');
    await p.page.press('#g-search', 'Enter');
    await waitFor(p.page, 'graph: search expands the scope and opens the node', () =>
      document.querySelector('#n-name') && document.querySelector('#n-name').textContent === 'layer2/W2');
    await waitFor(p.page, 'graph: the legend lists devices', () => document.querySelectorAll('#g-legend .entry').length >= 2);
    await p.page.selectOption('#g-color', 'time');
    await waitFor(p.page, 'graph: colour by time changes the legend and the URL', () =>
      /time/.test(document.querySelector('#g-legend').textContent) && /color=time/.test(location.search));
    await finish('graph', p);
  }

  // -- timeline: bars in more than one lane, tooltip, export link, side by side
  {
    const p = await open(browser, base, `/timeline?run=${lastTraced}`);
    await waitFor(p.page, 'timeline: the run is loaded', () => /events/.test(document.querySelector('#t-info').textContent));
    const lanes = JSON.parse(await p.page.$eval('#t-canvas', (c) => c.dataset.lanes || '[]'));
    const width = await p.page.$eval('#t-canvas', (c) => c.clientWidth);
    const inked = [];
    for (const y of lanes) inked.push(await inkedPixels(p.page, '#t-canvas', [200, y - 3, width - 210, 6]));
    check(inked.filter((n) => n > 0).length >= 2, 'timeline: bars in more than one lane', JSON.stringify(inked));
    // Hover the first inked pixel of the first lane: the tooltip names a node.
    const spot = await p.page.$eval('#t-canvas', (c, y) => {
      const k = c.width / c.clientWidth, d = c.getContext('2d').getImageData(0, Math.round(y * k), c.width, 1).data;
      for (let x = Math.round(200 * k); x < c.width; x++) { const i = x * 4; if (d[i + 3] && !(d[i] > 240 && d[i + 1] > 240 && d[i + 2] > 240) && !(d[i] === d[i + 1] && d[i + 1] === d[i + 2])) return x / k; }
      return -1;
    }, lanes[0]);
    if (check(spot > 0, 'timeline: a bar to hover')) {
      const box = await p.page.$eval('#t-canvas', (c) => { const r = c.getBoundingClientRect(); return {x: r.left, y: r.top}; });
      await p.page.mouse.move(box.x + spot + 1, box.y + lanes[0]);
      await waitFor(p.page, 'timeline: the tooltip shows node, op and duration', () => {
        const t = document.querySelector('.tl-wrap .tip');
        return t && !t.hidden && /duration/.test(t.textContent) && /op /.test(t.textContent);
      });
    }
    const href = await p.page.$eval('#t-export a', (a) => a.getAttribute('href'));
    check(href === `/api/trace.json?run=${lastTraced}`, 'timeline: the export link', href);
    const trace = await p.page.request.get(base + href.slice(1));
    check(trace.status() === 200, 'timeline: the Chrome trace downloads', trace.status());
    await finish('timeline', p);
    const q = await open(browser, base, `/timeline?runs=${prevTraced},${lastTraced}`);
    await waitFor(q.page, 'timeline: side by side shows two runs', () => /^2 runs/.test(document.querySelector('#t-info').textContent));
    await finish('timeline-side-by-side', q);
  }

  // -- tensor page: heat map of W1, images of img
  {
    const p = await open(browser, base, '/tensor?node=layer1/W1&output=0');
    await waitFor(p.page, 'tensor: W1\'s statistics', () => /\[4, 8\]/.test(document.querySelector('#x-stats').textContent));
    await waitFor(p.page, 'tensor: the heat map is drawn', () => !!document.querySelector('#x-heat'));
    const colours = await p.page.$eval('#x-heat', (c) => {
      const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data, s = new Set();
      for (let i = 0; i < d.length; i += 4) s.add(d[i] + ',' + d[i + 1] + ',' + d[i + 2]);
      return s.size;
    });
    check(colours >= 8, 'tensor: the heat map has many colours', colours);
    await waitFor(p.page, 'tensor: the histogram and the history are drawn', () => !!document.querySelector('#x-hist') && !!document.querySelector('#x-history'));
    check(await inkedPixels(p.page, '#x-hist') > 50, 'tensor: the histogram has bars');
    check(await p.page.$$eval('#x-values tbody tr', (r) => r.length) === 32, 'tensor: the 32 values are listed');
    await finish('tensor', p);
    const q = await open(browser, base, '/tensor?node=img&output=0');
    await waitFor(q.page, 'tensor: the NHWC image grid is drawn', () => !!document.querySelector('#x-images'));
    check(await inkedPixels(q.page, '#x-images') > 20, 'tensor: the images have content');
    await finish('tensor-images', q);
  }

  // -- compare
  {
    const p = await open(browser, base, `/compare?a=${prevTraced}&b=${lastTraced}`);
    await waitFor(p.page, 'compare: per-node time differences', () => document.querySelectorAll('#c-times tbody tr').length > 3);
    await finish('compare', p);
    // The first comparison answers late (2 s); swapped meanwhile, the swapped one stays.
    let delayed = false;
    const q = await open(browser, base, `/compare?a=${prevTraced}&b=${lastTraced}`, {before: (page) => page.route('**/api/compare?*', async (route) => {
      if (!delayed) { delayed = true; await sleep(2000); }
      await route.continue();
    })});
    await waitFor(q.page, 'compare stale: the runs are listed', () => document.querySelectorAll('#c-a option').length > 2);
    await sleep(200);
    await q.page.click('text=swap');
    await sleep(2600);
    const a = await q.page.evaluate(() => [...document.querySelectorAll('#c-runs .card table.kv')].map((t) => t.querySelector('td + td').textContent).join(','));
    check(delayed && a === lastTraced + ',' + prevTraced, 'compare stale: the slower first comparison did not replace the swapped one', a);
    await finish('compare-stale', q);
  }

  // -- live: another process appends runs; the open runs page picks them up
  {
    const p = await open(browser, base, '/');
    await waitFor(p.page, 'live: the runs page is loaded', (n) => document.querySelectorAll('#runs tbody tr').length >= n, runs.length);
    train(db, 3);
    const total = (await api('/api/runs')).runs.length;
    await waitFor(p.page, 'live: new runs appear without a reload', (n) => document.querySelectorAll('#runs tbody tr').length >= n, total);
    await finish('runs-live', p);
  }
} catch (e) {
  check(false, 'the browser test ran to the end', e.stack || String(e));
}
await done({dir, browser, servers: server ? [server] : []});
