// tensors.test.mjs — the tensor page's pictures and charts over steps, in headless Chromium, on the
// Deep-MNIST-like CNN of lib.mjs with its first convolution's weights and a tall [240, 6] variable
// watched. Checks: /api/tensor/histograms answers the histograms of every step; the convolution's
// weights are drawn as its filters with a colour scale; a tall 2-D tensor's heat map keeps a sensible
// aspect (at most 4:1) and has a colour scale (diverging: its values take both signs); the distributions
// (percentile bands) and histograms (one outline per step) over steps are drawn for every step; the
// values and the picture of a step answered late never replace those of the step chosen after it.
//
//   node tensors.test.mjs TIDE_BINARY SCREENSHOT_DIR      (exit 0 passed, 1 failed, 77 skipped)
import path from 'node:path';

import {check, CNN, done, finish as finishIn, inkedPixels, launch, open, runTide, serve, sleep, start, waitFor} from './lib.mjs';

const {tide, shots, dir, chromium} = await start('tensors.test.mjs');
const finish = (name, p) => finishIn(shots, name, p);

const WATCHED = `:watch conv1/W_conv1
:watch tall
tall = variable(random_normal({240, 6}))
tsum = sum(tall)
` + CNN + `
for i = 1, 6 do run({train_step, tsum}, {[x] = bx, [y_] = by}) end
`;

let browser = null;
const servers = [];
try {
  const db = path.join(dir, 'tensors.db');
  runTide(tide, ['--log', db, '-q'], WATCHED);
  const server = await serve(tide, db);
  servers.push(server);
  const base = server.url;
  const hist = await (await fetch(base + 'api/tensor/histograms?node=conv1/W_conv1')).json();
  check(hist.steps && hist.total === 12 && hist.steps.length === 12 && hist.steps.every((s) => s.counts.length === 30 &&
    s.counts.reduce((a, c) => a + c, 0) === 100 && s.min <= s.mean && s.mean <= s.max), 'api: a histogram per step', JSON.stringify(hist).slice(0, 300));
  const few = await (await fetch(base + 'api/tensor/histograms?node=conv1/W_conv1&max_steps=3')).json();
  check(few.steps.length === 3 && few.sampled && few.steps[0].step === hist.steps[0].step && few.steps[2].step === hist.steps[11].step,
    'api: max_steps keeps the first and the last', JSON.stringify(few.steps.map((s) => s.step)));
  browser = await launch(chromium);
  {
    const p = await open(browser, base, '/tensor?node=conv1/W_conv1&output=0');
    await waitFor(p.page, 'filters: the convolution\'s weights are drawn as filters', () => !!document.querySelector('#x-filters'));
    check(await inkedPixels(p.page, '#x-filters') > 100, 'filters: they have content');
    check(await p.page.evaluate(() => /4 filters × 1 input channel, 5 × 5/.test(document.querySelector('#x-picture').textContent)),
      'filters: they are described', await p.page.evaluate(() => document.querySelector('#x-picture').textContent));
    check(await p.page.$('#x-colorbar') !== null, 'filters: a colour scale');
    await waitFor(p.page, 'over steps: distributions for every step', () => document.querySelector('#x-distributions').dataset.steps === '12');
    await waitFor(p.page, 'over steps: histograms for every step', () => document.querySelector('#x-histograms').dataset.steps === '12');
    check(await inkedPixels(p.page, '#x-distributions') > 500 && await inkedPixels(p.page, '#x-histograms') > 500, 'over steps: both drawn');
    await finish('tensor-filters-and-distributions', p);
  }
  {
    const p = await open(browser, base, '/tensor?node=tall&output=0');
    await waitFor(p.page, 'heat map: a tall tensor is drawn', () => !!document.querySelector('#x-heat'));
    const box = await p.page.$eval('#x-heat', (c) => ({w: c.getBoundingClientRect().width, h: c.getBoundingClientRect().height, scale: c.dataset.scale}));
    check(box.h / box.w <= 4.05 && box.h / box.w >= 3.5, 'heat map: a [240, 6] tensor is drawn 4:1, not 40:1', JSON.stringify(box));
    check(box.scale === 'diverging', 'heat map: values of both signs on a diverging scale', box.scale);
    const labels = await p.page.$$eval('#x-picture .colorbar-labels span', (s) => s.map((x) => x.textContent));
    check(labels.length === 3 && labels[1] === '0' && Number(labels[0]) === -Number(labels[2]), 'heat map: a colour scale from -m through 0 to m', JSON.stringify(labels));
    await finish('tensor-tall-heat-map', p);
  }
  {
    // The first step's values (table and picture) answer late (2 s); the next step is chosen meanwhile:
    // its values stay, drawn once.
    const steps = (await (await fetch(base + 'api/tensor/histograms?node=tall')).json()).steps.map((x) => x.step);
    const [first, second] = steps;
    let delayed = 0;
    const p = await open(browser, base, `/tensor?node=tall&output=0&step=${first}`, {before: (page) => page.route('**/api/tensor/values?*', async (route) => {
      if (new URL(route.request().url()).searchParams.get('step') === String(first)) { delayed++; await sleep(2000); }
      await route.continue();
    })});
    await waitFor(p.page, 'stale: the first step is asked for', (v) => /at step (\d+)/.exec(document.querySelector('#x-title').textContent)?.[1] === String(v), first);
    await p.page.$eval('#x-step', (e, v) => { e.value = String(v); e.dispatchEvent(new Event('change')); }, second);
    await sleep(2600);
    const shown = await p.page.evaluate(() => ({title: document.querySelector('#x-title').textContent,
      heats: document.querySelectorAll('#x-picture canvas#x-heat').length, tables: document.querySelectorAll('#x-values table').length}));
    check(delayed === 2 && shown.title.endsWith('at step ' + second) && shown.heats === 1 && shown.tables === 1,
      'stale: the slower first step\'s values and picture were dropped', JSON.stringify({delayed, ...shown}));
    await finish('tensor-stale', p);
  }
} catch (e) {
  check(false, 'the tensors browser test ran to the end', e.stack || String(e));
}
await done({dir, browser, servers});
