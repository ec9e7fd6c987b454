// timeline.test.mjs — the timeline page as a profiler's user reads it, in headless Chromium, on the
// Deep-MNIST-like CNN of lib.mjs trained on two devices, then steps whose /cpu:0 half waits for /cpu:1. Checks: the server says which events are asynchronous and how
// long each _Recv waited; a long wait is drawn as waiting (a faint band), not as a solid bar of work,
// and its tooltip says so; under the timeline a "top ops" table per run gives busy time (waiting left
// out) per op type and per node, sorted by a click on any column; side by side, one table per run; a
// slower earlier timeline does not replace a newer one.
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
    const waits = JSON.parse(await p.page.$eval('#t-canvas', (c) => c.dataset.waits));
    const w = waits.reduce((a, x) => (x.x1 - x.x0 > a.x1 - a.x0 ? x : a));
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
} catch (e) {
  check(false, 'the timeline browser test ran to the end', e.stack || String(e));
}
await done({dir, browser, servers});
