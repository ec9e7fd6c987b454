// curves.test.mjs — the scalar curves of the runs page as a TensorBoard user reads them, in headless
// Chromium: two sessions train the same model with two learning rates (a loss that falls over decades).
// Checks: both sessions' curves are overlaid in one chart, each in its colour and named in the legend,
// and a session can be left out; the y axis goes log; the x axis goes by step, by run (the log's run
// counter) or by wall time since each session's first point; the choices live in the URL.
//
//   node curves.test.mjs TIDE_BINARY SCREENSHOT_DIR      (exit 0 passed, 1 failed, 77 skipped)
import path from 'node:path';

import {check, done, finish as finishIn, inkedPixels, launch, open, runTide, serve, start, waitFor} from './lib.mjs';

const {tide, shots, dir, chromium} = await start('curves.test.mjs');
const finish = (name, p) => finishIn(shots, name, p);

const TRAIN = (lr) => `
x = placeholder(float32, {nil, 4})
labels = placeholder(int32, {-1})
scope("layer1", function() W1 = variable(random_normal({4, 8}, {stddev = 0.5, seed = 1})); h = relu(matmul(x, W1)) end)
scope("layer2", function() W2 = variable(random_normal({8, 3}, {stddev = 0.5, seed = 2})); logits = matmul(h, W2) end)
loss = mean(sparse_softmax_cross_entropy(labels, logits))
s = summary("loss", loss)
train = sgd(${lr}):minimize(loss)
run(init())
bx = tensor({{1,0,0,0},{0,1,0,0},{0,0,1,0},{0,0,0,1},{1,1,0,0},{0,1,1,0}})
by = tensor({0,1,2,0,1,2})
for i = 1, 60 do run({train, s}, {[x] = bx, [labels] = by}) end
`;

const chart = (page) => page.$eval('canvas[data-tag="loss"]', (c) => ({...c.dataset}));
// Chooses an x axis and waits until the chart is drawn with it (to or from wall time, it asks again).
async function xAxis(page, value) {
  await page.selectOption('#curve-x', value);
  await waitFor(page, `curves: redrawn by ${value}`, (v) => document.querySelector('canvas[data-tag="loss"]').dataset.xlabel === v, value);
  return chart(page);
}

let browser = null;
const servers = [];
try {
  const db = path.join(dir, 'curves.db');
  runTide(tide, ['--log', db, '-q'], TRAIN(0.05));
  runTide(tide, ['--log', db, '-q'], TRAIN(0.5));
  const server = await serve(tide, db);
  servers.push(server);
  const base = server.url;
  const runs = (await (await fetch(base + 'api/runs?limit=5000')).json()).runs;
  browser = await launch(chromium);

  const p = await open(browser, base, '/');
  await waitFor(p.page, 'curves: the loss chart shows both sessions', () => {
    const c = document.querySelector('canvas[data-tag="loss"]');
    return c && c.dataset.series === '2';
  });
  check(await p.page.evaluate(() => /session 1 \(60\).*session 2 \(60\)/.test(document.querySelector('canvas[data-tag="loss"]')
    .closest('.card').querySelector('h3').textContent)), 'curves: the legend names both sessions');
  check(await inkedPixels(p.page, 'canvas[data-tag="loss"]') > 300, 'curves: the curves are drawn');
  // x axis by run: the runs' ids
  let c = await xAxis(p.page, 'run');
  const lastRun = Math.max(...runs.map((r) => r.id));
  check(c.xlabel === 'run' && Number(c.x1) === lastRun && Number(c.x0) < 5, 'curves: the x axis by run counter', JSON.stringify(c));
  const width = await p.page.$eval('canvas[data-tag="loss"]', (e) => e.clientWidth);
  let xticks = JSON.parse(c.xticks);
  check(xticks.length >= 3 && Number(xticks.at(-1).text) >= 100 && xticks.every((t) => t.left >= 0 && t.right <= width &&
    (Math.abs((t.left + t.right) / 2 - t.at) <= 1 || t.left === 0 || t.right >= width - 2)),
    'curves: each x tick label centred under its tick and inside the chart (3 digits too)', `${c.xticks} width ${width}`);
  // x axis by wall time: seconds since each session's first point
  c = await xAxis(p.page, 'time');
  check(c.xlabel === 'time' && Number(c.x0) === 0 && Number(c.x1) > 0 && Number(c.x1) < 60, 'curves: the x axis by wall time', JSON.stringify(c));
  xticks = JSON.parse(c.xticks);
  check(xticks.length >= 3 && xticks[0].text === '0 s' && xticks.slice(1).every((t) => /^\d+(\.\d+)? (ms|s)$/.test(t.text)),
    'curves: wall time reads 0 s, then ms or s', c.xticks);
  c = await xAxis(p.page, 'step');
  check(c.xlabel === 'step' && Number(c.x0) === 1 && Number(c.x1) === 60, 'curves: the x axis by step', JSON.stringify(c));
  // log scale
  await p.page.check('#curve-log');
  c = await chart(p.page);
  check(c.scale === 'log' && c.series === '2' && Number(c.hidden) === 0, 'curves: a log y axis', JSON.stringify(c));
  check(/log=1/.test(p.page.url()), 'curves: the log scale is in the URL', p.page.url());
  await p.page.screenshot({path: path.join(shots, 'curves-overlaid-log.png'), fullPage: true});
  // leave session 1 out
  await p.page.uncheck('#curve-sessions input[data-session="1"]');
  await waitFor(p.page, 'curves: unticking a session leaves its curve out', () =>
    document.querySelector('canvas[data-tag="loss"]').dataset.series === '1');
  check(/curves=2/.test(p.page.url()), 'curves: the sessions shown are in the URL', p.page.url());
  await finish('curves', p);
  // the URL brings it all back
  const q = await open(browser, base, '/?x=run&log=1&curves=1,2');
  await waitFor(q.page, 'curves: a URL with x, log and sessions', () => {
    const c = document.querySelector('canvas[data-tag="loss"]');
    return c && c.dataset.series === '2' && c.dataset.scale === 'log' && c.dataset.xlabel === 'run';
  });
  await finish('curves-from-url', q);
} catch (e) {
  check(false, 'the curves browser test ran to the end', e.stack || String(e));
}
await done({dir, browser, servers});
