// images.test.mjs — image summaries in headless Chromium: a small convolution trained with an
// ImageSummary of its inputs (gray) and one of its activations (RGB). Checks: the runs page's Images
// panel has a card per tag with the images of the latest step; its slider goes back to an earlier
// step; a slower earlier step's images never replace a later choice's; images over the value cap are
// explained; images of more than one page of values are drawn whole; the tensor page of an ImageSummary
// draws its uint8 images as they are.
//
//   node images.test.mjs TIDE_BINARY SCREENSHOT_DIR      (exit 0 passed, 1 failed, 77 skipped)
import path from 'node:path';

import {check, done, finish as finishIn, inkedPixels, launch, open, runTide, serve, sleep, start, waitFor} from './lib.mjs';

const {tide, shots, dir, chromium} = await start('images.test.mjs');
const finish = (name, p) => finishIn(shots, name, p);

const TRAIN = `
x = placeholder(float32, {nil, 8, 8, 1})
W = variable(random_normal({5, 5, 1, 3}, {stddev = 0.5}))
h = relu(conv2d(x, W, {strides = {1, 1, 1, 1}, padding = "SAME"}))
inputs = image_summary(x, {tag = "inputs", max_images = 4})
activations = image_summary(h, {tag = "conv1 activations", max_images = 2})
loss = mean(h * h)
train = sgd(0.1):minimize(loss)
run(init())
bx = run(random_uniform({6, 8, 8, 1}))
for i = 1, 5 do run({train, inputs, activations}, {[x] = bx}) end
`;

let browser = null;
const servers = [];
try {
  const db = path.join(dir, 'images.db');
  runTide(tide, ['--log', db, '-q'], TRAIN);
  const server = await serve(tide, db);
  servers.push(server);
  const base = server.url;
  const list = (await (await fetch(base + 'api/images')).json()).images;
  check(list.length === 2 && list.every((x) => x.count === 5), 'api: two image summaries, five steps each', JSON.stringify(list));
  const last = Math.max(...list.map((x) => x.last_step)), first = Math.min(...list.map((x) => x.first_step));
  browser = await launch(chromium);
  {
    const p = await open(browser, base, '/');
    await waitFor(p.page, 'images: a card per tag, at the latest step', (last) => {
      const cards = [...document.querySelectorAll('#images .image-card')];
      return cards.length === 2 && cards.every((c) => c.querySelector('canvas') && c.querySelector('canvas').dataset.step === String(last));
    }, last);
    const card = '#images .image-card[data-tag="inputs"]';
    check(await p.page.evaluate((c) => /4 images 8 × 8 × 1/.test(document.querySelector(c).textContent), card),
      'images: the inputs card shows 4 gray images');
    check(await inkedPixels(p.page, card + ' canvas') > 500, 'images: they are drawn');
    check(await p.page.evaluate(() => /2 images 8 × 8 × 3/.test(document.querySelector('#images .image-card[data-tag="conv1 activations"]').textContent)),
      'images: the activations card shows 2 RGB images');
    await p.page.$eval(card + ' input.image-step', (s, v) => { s.value = String(v); s.dispatchEvent(new Event('input')); }, first);
    await waitFor(p.page, 'images: the slider goes back to the first step', ([c, v]) =>
      document.querySelector(c + ' canvas') && document.querySelector(c + ' canvas').dataset.step === String(v), [card, first]);
    await finish('images', p);
  }
  {
    // The first step's images answer late (2 s); the slider moves on to the step after it meanwhile:
    // that step's images stay.
    let delayed = false;
    const p = await open(browser, base, '/', {before: (page) => page.route('**/api/tensor?*', async (route) => {
      const q = new URL(route.request().url()).searchParams;
      if (!delayed && q.get('node') === 'inputs' && q.get('step') === String(first)) { delayed = true; await sleep(2000); }
      await route.continue();
    })});
    const card = '#images .image-card[data-tag="inputs"]';
    await waitFor(p.page, 'stale: the inputs card at the latest step', ([c, v]) =>
      document.querySelector(c + ' canvas') && document.querySelector(c + ' canvas').dataset.step === String(v), [card, last]);
    const move = (v) => p.page.$eval(card + ' input.image-step', (s, v) => { s.value = String(v); s.dispatchEvent(new Event('input')); }, v);
    await move(first);
    await sleep(200);
    await move(first + 1);
    await sleep(2600);
    const shown = await p.page.evaluate((c) => document.querySelector(c + ' canvas').dataset.step + ' ' +
      document.querySelector(c + ' .toolbar span').textContent, card);
    check(delayed && shown === `${first + 1} step ${first + 1}`, 'stale: the slower earlier step did not replace the later one', shown);
    await finish('images-stale', p);
  }
  {
    const p = await open(browser, base, '/tensor?node=inputs&output=0');
    await waitFor(p.page, 'tensor page: an image summary\'s images', () => !!document.querySelector('#x-images'));
    check(await p.page.evaluate(() => !/min-max/.test(document.querySelector('#x-picture').textContent)), 'tensor page: uint8 images drawn as they are');
    await finish('tensor-image-summary', p);
  }
  {
    // Two white RGB 160 x 160 images: 153,600 values, more than one page of /api/tensor/values
    // (100,000): every pixel of both is drawn (the second was black past the first page).
    const big = path.join(dir, 'big.db');
    runTide(tide, ['--log', big, '-q'], `x = placeholder(float32, {nil, 160, 160, 3})
white = image_summary(x, {tag = "white", max_images = 2})
run(white, {[x] = run(ones({2, 160, 160, 3}))})
`);
    const s3 = await serve(tide, big);
    servers.push(s3);
    const p = await open(browser, s3.url, '/');
    await waitFor(p.page, 'large: the white card is drawn', () => !!document.querySelector('#images .image-card[data-tag="white"] canvas'));
    const white = await p.page.$eval('#images .image-card[data-tag="white"] canvas', (c) => {
      const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
      let n = 0;
      for (let i = 0; i < d.length; i += 4) if (d[i] === 255 && d[i + 1] === 255 && d[i + 2] === 255 && d[i + 3] === 255) n++;
      return n;
    });
    check(white === 2 * 160 * 160, 'large: both 160 x 160 images drawn whole (153,600 values, two pages)', white + ' white pixels');
    await finish('images-large', p);
  }
  {
    // Images over the run log's value cap: the card says why they are missing and what to do.
    const capped = path.join(dir, 'capped.db');
    runTide(tide, ['--log', capped, '-q'], `:log cap 100
x = placeholder(float32, {nil, 8, 8, 1})
big = image_summary(x, {tag = "big", max_images = 2})
run(big, {[x] = run(random_uniform({2, 8, 8, 1}))})
`);
    const s2 = await serve(tide, capped);
    servers.push(s2);
    const p = await open(browser, s2.url, '/');
    await waitFor(p.page, 'cap: the card says its 128 bytes are over the value cap and how to fit', () => {
      const c = document.querySelector('#images .image-card[data-tag="big"]');
      return c && /128 bytes\) were not stored: they are over the run log's value cap .*:log cap BYTES.*max_images/.test(c.textContent);
    });
    await finish('images-over-cap', p);
  }
} catch (e) {
  check(false, 'the images browser test ran to the end', e.stack || String(e));
}
await done({dir, browser, servers});
