// timeline.test.mjs — the timeline page as a profiler's user reads it, in headless Chromium, on the
// Deep-MNIST-like CNN of lib.mjs trained on two devices, then steps whose /cpu:0 half waits for /cpu:1. Checks: the server says which events are asynchronous and how
// long each _Recv waited; a long wait is drawn as waiting (a faint band), not as a solid bar of work,
// and its tooltip says so; under the timeline a "top ops" table per run gives busy time (waiting left
// out) per op type and per node, sorted by a click on any column; side by side, one table per run; a
// slower earlier timeline does not replace a newer one. Then a run on the simulated accelerator /sim:0:
// its compute stream is a lane of its own, labelled "/sim:0 compute", its kernels drawn there (a solid
// bar where the API says a kernel ran), their tooltip saying when the host launched them, and the
// run's memory per device in a table; a watched tensor's host copy is an event on the copy d2h lane,
// marked as a copy (as the _Recvs are), and that lane is drawn.
//
//   node timeline.test.mjs TIDE_BINARY SCREENSHOT_DIR      (exit 0 passed, 1 failed, 77 skipped)
import path from 'node:path';

import {check, CNN, done, finish as finishIn, launch, open, runTide, serve, sleep, start, waitFor} from './lib.mjs';

const {tide, shots, dir, chromium} = await start('timeline.test.mjs');

// After the CNN, a step whose /cpu:0 half waits for /cpu:1's three matmuls: its _Recv starts at once and
// waits milliseconds for its value, every time.
const WAIT = `
big = placeholder(float32, {256, 256})
device("/cpu:1", function() h = matmul(matmul(matmul(big, big), big), big) end)
device("/cpu:0", function() y = sum(h) end)
bbig = run(random_uniform({256, 256}))
for i = 1, 3 do run(y, {[big] = bbig}, {trace = true}) end
`;
const finish = (name, p) => finishIn(shots, name, p);

// A small MLP-like chain on /sim:0, x fed from the host; every kernel takes at least 300 µs on the device.
const SIM = `
x = placeholder(float32, {64, 64})
device("/sim:0", function() y = sum(matmul(relu(matmul(x, x)), x)) end)
:watch relu
xv = run(random_uniform({64, 64}))
for i = 1, 3 do run(y, {[x] = xv}, {trace = true}) end
`;

let browser = null;
const servers = [];
try {
  const db = path.join(dir, 'cnn.db');
  runTide(tide, ['--devices', '2', '--log', db, '-q'], CNN + WAIT);
  const server = await serve(tide, db);
  servers.push(server);
  const base = server.url;
  const get = async (p) => (await fetch(base + p.replace(/^\//, ''))).json();
  const traced = (await get('/api/runs?traced=1')).runs;
  const last = traced[traced.length - 1].id, prev = traced[traced.length - 2].id;
  const tl = (await get('/api/timeline?run=' + last)).runs[0];
  const recvs = tl.events.filter((e) => e.op === '_Recv');
  check(recvs.length > 0 && recvs.every((e) => e.async && e.wait_us >= 0 && e.wait_us <= e.end_us - e.start_us + 1e-6),
    'api: every _Recv is asynchronous, its wait within its span', JSON.stringify(recvs.slice(0, 2)));
  check(tl.events.filter((e) => e.op !== '_Recv').every((e) => !e.async && e.wait_us === 0), 'api: other events do not wait');
  const longest = recvs.reduce((a, e) => (e.wait_us > (a ? a.wait_us : -1) ? e : a), null);
  check(longest && longest.wait_us > 100, 'api: some _Recv waited for its value', longest && longest.wait_us);

  browser = await launch(chromium);
  {
    const p = await open(browser, base, `/timeline?run=${last}`);
    await waitFor(p.page, 'timeline: the run is drawn', () => JSON.parse(document.querySelector('#t-canvas').dataset.waits || '[]').length > 0);
    // The widest waiting band: its middle is faint, not the lane's solid colour.
    const readWaits = async () => JSON.parse(await p.page.$eval('#t-canvas', (c) => c.dataset.waits));
    let w = (await readWaits()).reduce((a, x) => (x.x1 - x.x0 > a.x1 - a.x0 ? x : a));
    // On a loaded machine the step may last far longer than the wait, which is then a few pixels wide:
    // zoom in on it (the wheel keeps the time under the mouse) until it is wide enough to read.
    const canvasBox = await p.page.$eval('#t-canvas', (c) => { const r = c.getBoundingClientRect(); return {x: r.left, y: r.top}; });
    for (let i = 0; i < 30 && w.x1 - w.x0 <= 40; i++) {
      await p.page.mouse.move(canvasBox.x + (w.x0 + w.x1) / 2, canvasBox.y + w.y);
      await p.page.mouse.wheel(0, -400);
      await sleep(60);
      const same = (await readWaits()).find((x) => x.node === w.node);
      if (!same) break;
      w = same;
    }
    check(w.x1 - w.x0 > 20, 'timeline: a long wait is on screen', JSON.stringify(w));
    // Pixels along the band's right part (its label is on the left), composed over the white page: the
    // lightest must be light (a solid bar would be the lane's colour everywhere).
    const pixel = await p.page.$eval('#t-canvas', (c, w) => {
      const k = c.width / c.clientWidth, ctx = c.getContext('2d');
      let best = null;
      for (const f of [0.6, 0.7, 0.8, 0.9, 0.97]) {
        const d = ctx.getImageData(Math.round((w.x0 + f * (w.x1 - w.x0)) * k), Math.round(w.y * k), 1, 1).data;
        const a = d[3] / 255, rgb = [0, 1, 2].map((i) => Math.round(d[i] * a + 255 * (1 - a)));
        if (!best || Math.min(...rgb) > Math.min(...best)) best = rgb;
      }
      return best;
    }, w);
    check(Math.min(...pixel) > 200, 'timeline: the wait is drawn as waiting (faint), not as busy time', JSON.stringify(pixel));
    const box = await p.page.$eval('#t-canvas', (c) => { const r = c.getBoundingClientRect(); return {x: r.left, y: r.top}; });
    await p.page.mouse.move(box.x + (w.x0 + w.x1) / 2, box.y + w.y);
    await waitFor(p.page, 'timeline: the tooltip says it waited without holding a thread', () => {
      const t = document.querySelector('.tl-wrap .tip');
      return t && !t.hidden && /waited .* no thread held/.test(t.textContent);
    });
    // top ops: busy time per op type and per node, sortable
    await waitFor(p.page, 'top ops: a table per op type and per node', (id) =>
      !!document.querySelector('#t-ops-' + id + ' table.ops-by-op tbody tr') &&
      !!document.querySelector('#t-ops-' + id + ' table.ops-by-node tbody tr'), last);
    const opsRows = await p.page.$$eval(`#t-ops-${last} table.ops-by-op tbody tr`, (rows) =>
      rows.map((r) => [...r.children].map((td) => td.textContent)));
    const ops = new Set(tl.events.map((e) => e.op));
    check(opsRows.length === ops.size, 'top ops: one row per op type', `${opsRows.length} rows, ${ops.size} op types`);
    const counts = Object.fromEntries(opsRows.map((r) => [r[0], Number(r[1])]));
    check([...ops].every((op) => counts[op] === tl.events.filter((e) => e.op === op).length), 'top ops: the counts', JSON.stringify(counts));
    const recvSpan = recvs.reduce((a, e) => a + e.end_us - e.start_us, 0), recvWait = recvs.reduce((a, e) => a + e.wait_us, 0);
    const recvRow = opsRows.find((r) => r[0] === '_Recv');
    const us = (text) => { const m = /([\d.]+) (µs|ms|s)/.exec(text || ''); return m ? Number(m[1]) * {'µs': 1, ms: 1e3, s: 1e6}[m[2]] : NaN; };
    const shownTotal = recvRow ? us(recvRow[2]) : NaN, busy = recvSpan - recvWait;
    check(Math.abs(shownTotal - busy) <= 0.03 * busy + 1 && shownTotal < recvSpan - recvWait / 2,
      'top ops: the _Recv total is its busy time, waiting left out', `shown ${shownTotal} µs, busy ${busy}, span ${recvSpan}`);
    const sortedBy = async (key) => p.page.$eval(`#t-ops-${last} table.ops-by-op`, (t, key) => {
      const i = [...t.querySelectorAll('th')].findIndex((th) => th.dataset.key === key);
      return {dir: t.querySelectorAll('th')[i].dataset.sort, values: [...t.querySelectorAll('tbody tr')].map((r) => Number(r.children[i].textContent))};
    }, key);
    await p.page.click(`#t-ops-${last} table.ops-by-op th[data-key="count"]`);
    let s = await sortedBy('count');
    check(s.dir === 'desc' && s.values.every((v, i) => i === 0 || v <= s.values[i - 1]), 'top ops: a click sorts by count, largest first', JSON.stringify(s));
    await p.page.click(`#t-ops-${last} table.ops-by-op th[data-key="count"]`);
    s = await sortedBy('count');
    check(s.dir === 'asc' && s.values.every((v, i) => i === 0 || v >= s.values[i - 1]), 'top ops: a second click, smallest first', JSON.stringify(s));
    await p.page.click(`#t-ops-${last} table.ops-by-node th[data-key="node"]`);
    const names = await p.page.$$eval(`#t-ops-${last} table.ops-by-node tbody tr td:first-child`, (tds) => tds.map((t) => t.textContent));
    check(names.length >= 5 && names.every((n, i) => i === 0 || names[i - 1].localeCompare(n) <= 0), 'top ops: per node, sorted by name');
    await finish('timeline-waits-and-top-ops', p);
  }
  {
    const p = await open(browser, base, `/timeline?runs=${prev},${last}`);
    await waitFor(p.page, 'side by side: a top ops table per run', (ids) => ids.every((id) => !!document.querySelector('#t-ops-' + id)), [prev, last]);
    await finish('timeline-side-by-side-ops', p);
  }
  {
    // The timeline of the first run answers late (2 s); the next one asked meanwhile stays.
    let delayed = false;
    const p = await open(browser, base, `/timeline?run=${prev}`, {before: (page) => page.route('**/api/timeline*', async (route) => {
      if (!delayed && route.request().url().includes('run=' + prev)) { delayed = true; await sleep(2000); }
      await route.continue();
    })});
    await sleep(300);
    await p.page.selectOption('#t-run', String(last));
    await sleep(2600);
    const shown = await p.page.evaluate(() => [...document.querySelectorAll('#t-ops > div')].map((d) => d.id));
    check(shown.length === 1 && shown[0] === 't-ops-' + last, 'stale: the slower earlier timeline did not replace the newer one', JSON.stringify(shown));
    await finish('timeline-stale', p);
  }
  {
    const db = path.join(dir, 'sim.db');
    runTide(tide, ['--log', db, '-q'], SIM, {TIDE_SIM_DEVICES: '1', TIDE_SIM_DELAY_US: '300'});
    const server = await serve(tide, db);
    servers.push(server);
    const get = async (p) => (await fetch(server.url + p.replace(/^\//, ''))).json();
    const runs = (await get('/api/runs?traced=1')).runs;
    const id = runs[runs.length - 1].id;
    const r = (await get('/api/timeline?run=' + id)).runs[0];
    const lane = r.lanes.findIndex((l) => l.label === '/sim:0 compute');
    check(lane >= 0 && r.lanes[lane].stream === 'compute' && r.lanes[lane].device === '/sim:0',
      'sim api: /sim:0 compute is a lane of its own', JSON.stringify(r.lanes));
    const kernels = r.events.filter((e) => e.lane === lane);
    check(kernels.length >= 4 && ['MatMul', 'Relu', 'Sum'].every((op) => kernels.some((e) => e.op === op)),
      'sim api: the kernels are on the compute lane', JSON.stringify(kernels.map((e) => e.op)));
    check(kernels.every((e) => e.end_us >= e.start_us && e.launch_start_us <= e.start_us),
      'sim api: each kernel ends after it starts, and starts after its launch');
    check(r.events.filter((e) => e.lane !== lane).every((e) => !['MatMul', 'Relu'].includes(e.op)),
      'sim api: no kernel left on a host thread lane');
    // the watched relu's host copy for the run log: an event named after the tensor on the copy d2h lane,
    // marked as a copy, inside the run
    const d2h = r.lanes.findIndex((l) => l.label === '/sim:0 copy d2h');
    const copies = r.events.filter((e) => e.op === '_CopyToHost');
    check(d2h >= 0 && copies.length === 1 && copies[0].node === 'relu:0' && copies[0].lane === d2h && copies[0].copy &&
      copies[0].start_us <= copies[0].end_us && copies[0].end_us <= r.wall_us,
      'sim api: the watched tensor\'s host copy is on the copy d2h lane', JSON.stringify(copies));
    check(r.events.filter((e) => e.op === '_Recv').every((e) => e.copy) && kernels.every((e) => !e.copy),
      'sim api: the _Recv copies are marked as copies, the kernels are not');
    const mem = r.device_memory.find((m) => m.device === '/sim:0');
    check(mem && mem.peak_bytes > 0, 'sim api: the run\'s memory on /sim:0', JSON.stringify(r.device_memory));
    const p = await open(browser, server.url, `/timeline?run=${id}`);
    await waitFor(p.page, 'sim timeline: the /sim:0 compute lane is drawn', () =>
      JSON.parse(document.querySelector('#t-canvas').dataset.laneLabels || '[]').includes('/sim:0 compute'), undefined, 30000);
    check(await p.page.$eval('#t-canvas', (c) => JSON.parse(c.dataset.laneLabels).includes('/sim:0 copy d2h')),
      'sim timeline: the copy d2h lane is drawn');
    // the longest kernel: a solid bar in the compute lane's row (the darkest of a few pixels across it,
    // composed over the white page: however narrow the bar on a slow run, one pixel is mostly covered)
    const k = kernels.reduce((a, e) => (e.end_us - e.start_us > a.end_us - a.start_us ? e : a));
    const at = await p.page.$eval('#t-canvas', (c, {k, r}) => {
      const labels = JSON.parse(c.dataset.laneLabels), ys = JSON.parse(c.dataset.lanes), lw = Number(c.dataset.labelWidth);
      const maxT = Math.max(1, r.wall_us || 0, ...r.events.map((e) => e.end_us));
      const sx = (t) => lw + t / maxT * (c.clientWidth - lw - 10);
      const x0 = sx(k.start_us), x1 = Math.max(sx(k.end_us), x0 + 1), y = ys[labels.indexOf('/sim:0 compute')];
      const s = c.width / c.clientWidth, ctx = c.getContext('2d');
      let best = null;
      for (let f = 0; f <= 1.0001; f += 0.125) {
        const d = ctx.getImageData(Math.floor((x0 + f * (x1 - x0)) * s), Math.round(y * s), 1, 1).data;
        const a = d[3] / 255, rgb = [0, 1, 2].map((i) => Math.round(d[i] * a + 255 * (1 - a)));
        if (!best || Math.min(...rgb) < Math.min(...best)) best = rgb;
      }
      const rect = c.getBoundingClientRect();
      return {x: (x0 + x1) / 2, y, rgb: best, left: rect.left, top: rect.top};
    }, {k, r});
    check(Math.min(...at.rgb) < 200, 'sim timeline: the kernel is a solid bar in the compute lane', JSON.stringify(at));
    await p.page.mouse.move(at.left + at.x, at.top + at.y);
    await waitFor(p.page, 'sim timeline: the kernel\'s tooltip names its lane and its launch', () => {
      const t = document.querySelector('.tl-wrap .tip');
      return t && !t.hidden && /\/sim:0 compute \(device stream\)/.test(t.textContent) && /launched by the host/.test(t.textContent);
    }, undefined, 30000);
    await waitFor(p.page, 'sim timeline: the memory per device table has /sim:0', (id) =>
      [...document.querySelectorAll('#t-mem-' + id + ' table tbody tr td:first-child')].some((td) => td.textContent === '/sim:0'), id, 30000);
    await finish('timeline-sim-lanes', p);
  }
} catch (e) {
  check(false, 'the timeline browser test ran to the end', e.stack || String(e));
}
await done({dir, browser, servers});
