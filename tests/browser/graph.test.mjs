// graph.test.mjs — the graph page read as a TensorBoard user reads it, in headless Chromium: a
// Deep-MNIST-like CNN (two conv layers, two dense ones, Adam, summaries) trained by the tide binary on two
// devices, and a training loop that adds a summary at every step (6,034 nodes). Checks: at
// Fit the forward path runs top to bottom and every label shown is at least 7 px on screen, the
// gradients, optimizer and initialisers are one box each; clicking a group box dissolves it, clicking a
// scope opens it and zooms to it; opening everything hides the op names at Fit and shows them as you
// zoom; the 6,000-node graph draws a few boxes ("N nodes, collapsed") and its note, not a blank panel;
// search outlines a node without asking for a new drawing; a slower earlier drawing or node panel does not
// replace a newer one; polls of /api/status never overlap; the graph, its legend and the timeline take their
// device colours from the server; a fused group's nodes are outlined and labelled, counted in the legend and
// named in the node panel.
//
//   node graph.test.mjs TIDE_BINARY SCREENSHOT_DIR      (exit 0 passed, 1 failed, 77 skipped)
import path from 'node:path';

import {check, CNN, cpuSeconds, done, finish as finishIn, launch, open, runTide, serve, sleep, start, waitFor} from './lib.mjs';

const {tide, shots, dir, chromium} = await start('graph.test.mjs');
const finish = (name, p) => finishIn(shots, name, p);

// What a training loop that builds nodes at every step leaves (the REPL warns, and the graph grows to
// 6,034 nodes): 2,000 summaries of loss + i, with their Adds and Consts.
const GROWING = `
x = placeholder(float32, {nil, 4})
scope("layer1", function() W1 = variable(random_normal({4, 3})); logits = matmul(x, W1) end)
y_ = placeholder(float32, {nil, 3})
loss = mean(softmax_cross_entropy(y_, logits))
train = sgd(0.1):minimize(loss)
run(init())
bx = tensor({{1, 0, 0, 0}, {0, 1, 0, 0}})
oh = one_hot(tensor({0, 2}), 3)
for i = 1, 2000 do run({train, summary("loss", loss + i)}, {[x] = bx, [y_] = oh}) end
`;

// The on-screen size (px) of the smallest text shown in the drawing, and how many are shown.
async function smallestText(page) {
  return page.evaluate(() => {
    let min = Infinity, shown = 0;
    for (const t of document.querySelectorAll('#g-view svg text')) {
      if (getComputedStyle(t).display === 'none' || !t.textContent.trim()) continue;
      const r = t.getBoundingClientRect();
      if (r.width === 0) continue;
      const size = parseFloat(t.getAttribute('font-size')) * t.getScreenCTM().a;
      min = Math.min(min, size);
      shown++;
    }
    return {min, shown};
  });
}
// The vertical centre (client px) of a drawn item, or null.
async function yOf(page, id) {
  return page.evaluate((id) => {
    const g = [...document.querySelectorAll('#g-view svg g')].find((x) => x.id === id);
    if (!g) return null;
    const r = g.getBoundingClientRect();
    return r.top + r.height / 2;
  }, id);
}
// A traced run whose bias add, ReLU and scaling ran as one fused group (docs/fusion.md).
const FUSED = `
x = placeholder(float32, {nil, 4})
b = constant({1.5, -2, 3, -4})
h = bias_add(x, b)
r = relu(h)
out = r * 2
run(out, {[x] = {{1, 2, 3, 4}}}, {trace = true})
`;

const hasItem = (page, id) => page.evaluate((id) => [...document.querySelectorAll('#g-view svg g')].some((g) => g.id === id), id);

let browser = null;
const servers = [];
try {
  const cnnDb = path.join(dir, 'cnn.db'), growDb = path.join(dir, 'grow.db');
  runTide(tide, ['--devices', '2', '--log', cnnDb, '-q'], CNN);
  runTide(tide, ['--log', growDb, '-q'], GROWING);
  const cnn = await serve(tide, cnnDb), grow = await serve(tide, growDb);
  servers.push(cnn, grow);
  browser = await launch(chromium);

  // -- readable at first sight
  {
    const p = await open(browser, cnn.url, '/graph');
    await waitFor(p.page, 'cnn: the drawing is there', () => document.querySelectorAll('#g-view svg g.node').length > 5);
    for (const g of ['group:gradients', 'group:optimizer', 'group:init'])
      check(await hasItem(p.page, g), `cnn: ${g} is one box`);
    check(!(await hasItem(p.page, 'node:init')) && !(await hasItem(p.page, 'scope:gradients')),
      'cnn: no initialiser or gradient drawn in the model');
    const ys = [];
    for (const id of ['node:x', 'scope:conv1', 'scope:conv2', 'scope:fc1', 'scope:fc2', 'node:cross_entropy']) ys.push(await yOf(p.page, id));
    check(ys.every((y) => y !== null) && ys.every((y, i) => i === 0 || y > ys[i - 1]), 'cnn: the forward path runs top to bottom', JSON.stringify(ys));
    const t = await smallestText(p.page);
    check(t.shown > 20 && t.min >= 7, 'cnn: at Fit, every label shown is at least 7 px', JSON.stringify(t));
    await p.page.screenshot({path: path.join(shots, 'graph-cnn-fit.png')});
    // a group box dissolves on click
    await p.page.click('[id="group:gradients"]');
    await waitFor(p.page, 'cnn: clicking the gradients box dissolves it', () =>
      [...document.querySelectorAll('#g-view svg g')].some((g) => g.id === 'scope:gradients') &&
      ![...document.querySelectorAll('#g-view svg g')].some((g) => g.id === 'group:gradients'));
    check(/expand=group%3Agradients|expand=group:gradients/.test(p.page.url()), 'cnn: the dissolved group is in the URL', p.page.url());
    // a scope opens on click and the view zooms to it
    await p.page.click('[id="scope:conv2"]');
    await waitFor(p.page, 'cnn: clicking conv2 opens it', () =>
      [...document.querySelectorAll('#g-view svg g.cluster')].some((g) => g.id === 'cluster:conv2'));
    await sleep(200);
    const share = await p.page.evaluate(() => {
      const c = [...document.querySelectorAll('#g-view svg g.cluster')].find((g) => g.id === 'cluster:conv2');
      const r = c.getBoundingClientRect(), v = document.querySelector('#g-view').getBoundingClientRect();
      return Math.max(r.width / v.width, r.height / v.height);
    });
    check(share > 0.6, 'cnn: the view zooms to the opened scope', share);
    await finish('graph-cnn', p);
  }

  // -- level of detail: everything open at Fit hides op names; zooming in shows them
  {
    const p = await open(browser, cnn.url, '/graph?expand_all=1&expand=group:gradients,group:optimizer,group:init');
    await waitFor(p.page, 'lod: the open drawing is there', () => document.querySelectorAll('#g-view svg g.node').length > 100);
    const before = await smallestText(p.page);
    check(before.min >= 7, 'lod: no label smaller than 7 px is shown at Fit', JSON.stringify(before));
    check(await p.page.evaluate(() => document.querySelector('#g-view svg').classList.contains('lod-small')),
      'lod: op names are hidden at Fit');
    const box = await p.page.$eval('#g-view', (e) => { const r = e.getBoundingClientRect(); return {x: r.left + r.width / 2, y: r.top + r.height / 2}; });
    await p.page.mouse.move(box.x, box.y);
    for (let i = 0; i < 12; i++) { await p.page.mouse.wheel(0, -400); await sleep(30); }
    await waitFor(p.page, 'lod: zoomed in, the op names appear', () =>
      !document.querySelector('#g-view svg').classList.contains('lod-small'));
    const after = await smallestText(p.page);
    check(after.min >= 7, 'lod: and they are legible', JSON.stringify(after));
    await finish('graph-lod', p);
  }

  // -- a 6,000-node graph: boxes and a note, not a blank panel
  {
    const t0 = Date.now(), cpu0 = cpuSeconds(grow.child);
    const p = await open(browser, grow.url, '/graph');
    // Bounded by collapsing: what is laid out (counted) and the server's CPU time for it, not the wall
    // time of a loaded machine, which is printed for information.
    await waitFor(p.page, 'large: the drawing is there', () => document.querySelectorAll('#g-view svg g.node').length > 3, null);
    const cpu = cpuSeconds(grow.child) - cpu0, took = Date.now() - t0;
    const drawn = await p.page.evaluate(() => ['g.node', 'g.edge', 'g.cluster'].map((s) => document.querySelectorAll('#g-view svg ' + s).length));
    console.log(`large: ${drawn[0]} nodes, ${drawn[1]} edges and ${drawn[2]} clusters drawn; the server used ${cpu.toFixed(2)} s of CPU, ${took} ms of wall time`);
    check(drawn[0] + drawn[1] <= 100, 'large: a bounded drawing (at most 100 items and edges laid out)', JSON.stringify(drawn));
    check(cpu0 === null || cpu < 5, 'large: drawn with bounded work (under 5 s of the server\'s CPU)', cpu + ' s');
    const boxes = await p.page.evaluate(() => [...document.querySelectorAll('#g-view svg g.node')].map((g) => g.id).filter((id) => id.startsWith('series:')));
    check(boxes.length >= 2, 'large: the per-step nodes are series boxes', JSON.stringify(boxes));
    check(await p.page.evaluate(() => [...document.querySelectorAll('#g-view svg text')].some((t) => /2,000 nodes, collapsed/.test(t.textContent))),
      'large: a box says "2,000 nodes, collapsed"');
    const t = await smallestText(p.page);
    check(t.shown > 5 && t.min >= 7, 'large: its labels are legible at Fit', JSON.stringify(t));
    await finish('graph-large', p);
    // opened entirely: the cap's note above the drawing
    const q = await open(browser, grow.url, '/graph?expand=scalarsummary_*,add_*,const_*');
    await waitFor(q.page, 'large: ungrouped, the cap bundles the top level and says so', () =>
      !document.querySelector('#g-notes').hidden && /cap/.test(document.querySelector('#g-notes').textContent) &&
      [...document.querySelectorAll('#g-view svg g.node')].some((g) => g.id.startsWith('ops:')), null);
    await finish('graph-large-capped', q);
  }

  // -- search outlines without a new drawing; stale drawings are dropped
  {
    let drawings = 0;
    const p = await open(browser, cnn.url, '/graph', {before: (page) => page.on('request', (r) => { if (r.url().includes('/api/graph.svg')) drawings++; })});
    await waitFor(p.page, 'search: the drawing is there', () => document.querySelectorAll('#g-view svg g.node').length > 5);
    const n0 = drawings;
    await p.page.fill('#g-search', 'conv1/h_pool1');
    await p.page.press('#g-search', 'Enter');
    await waitFor(p.page, 'search: the box holding a hidden node is outlined', () => {
      const g = document.querySelector('#g-view svg g.highlight');
      return g && g.id === 'scope:conv1';
    });
    await p.page.fill('#g-search', 'cross_entropy');
    await p.page.press('#g-search', 'Enter');
    await waitFor(p.page, 'search: a drawn node is outlined', () => {
      const g = document.querySelector('#g-view svg g.highlight');
      return g && g.id === 'node:cross_entropy';
    });
    await sleep(300);
    check(drawings === n0, 'search: no new drawing was asked for', `${n0} -> ${drawings}`);
    await finish('graph-search', p);

    // The first drawing answers late (2 s), the second at once: the second stays.
    let delayed = false;
    const q = await open(browser, cnn.url, '/graph', {before: (page) => page.route('**/api/graph.svg*', async (route) => {
      if (!delayed) { delayed = true; await sleep(2000); }
      await route.continue();
    })});
    await sleep(300);
    await q.page.selectOption('#g-color', 'time');   /* a second drawing, asked while the first is slow */
    await sleep(2600);
    const shown = await q.page.evaluate(() => document.querySelector('#g-legend').textContent);
    const fill = await q.page.evaluate(() => {
      const g = [...document.querySelectorAll('#g-view svg g.node')].find((x) => x.id === 'node:cross_entropy');
      const s = g && g.querySelector('ellipse');
      return s ? s.getAttribute('fill') : null;
    });
    const reds = ['#fee5d9', '#fcae91', '#fb6a4a', '#de2d26', '#a50f15', '#d3d3d3'];
    check(/time/.test(shown) && reds.includes(fill), 'stale: the slower earlier drawing did not replace the newer one', `${shown} ${fill}`);
    await finish('graph-stale', q);

    // The node panel of x answers late (2 s); cross_entropy is clicked meanwhile: its panel stays.
    let slowNode = false;
    const r = await open(browser, cnn.url, '/graph', {before: (page) => page.route('**/api/node?*', async (route) => {
      if (!slowNode && new URL(route.request().url()).searchParams.get('name') === 'x') { slowNode = true; await sleep(2000); }
      await route.continue();
    })});
    await waitFor(r.page, 'stale panel: the drawing is there', () => !!document.querySelector('[id="node:cross_entropy"]'));
    await r.page.click('[id="node:x"]');
    await sleep(200);
    await r.page.click('[id="node:cross_entropy"]');
    await sleep(2600);
    const panel = await r.page.evaluate(() => [...document.querySelectorAll('#n-name')].map((e) => e.textContent).join(','));
    check(slowNode && panel === 'cross_entropy', 'stale: the slower earlier node panel did not replace the newer one', panel);
    await finish('graph-stale-panel', r);
  }

  // -- polls never overlap: /api/status answers after 2.5 s, longer than the poll period (2 s)
  {
    let active = 0, most = 0, seen = 0;
    const p = await open(browser, cnn.url, '/graph', {before: (page) => page.route('**/api/status', async (route) => {
      active++; seen++; most = Math.max(most, active);
      await sleep(2500);
      active--;
      await route.continue();
    })});
    await sleep(9000);
    check(seen >= 2 && most === 1, 'polls: a slow /api/status is never polled twice at once', `seen ${seen}, at most ${most} at once`);
    await finish('graph-polls', p);
  }

  // -- device colours from one place: the legend, the node panel, the timeline and /api/devices agree
  {
    const devs = await (await fetch(cnn.url + 'api/devices')).json();
    const palette = Object.fromEntries(devs.sessions[0].devices.map((d) => [d.device, d.color]));
    check(Object.keys(palette).length === 2, 'colours: /api/devices lists the two devices', JSON.stringify(devs));
    const p = await open(browser, cnn.url, '/graph');
    await waitFor(p.page, 'colours: the legend is there', () => document.querySelectorAll('#g-legend .entry').length >= 2);
    const legend = await p.page.evaluate(() => Object.fromEntries([...document.querySelectorAll('#g-legend .entry')].map((e) =>
      [e.textContent.trim(), getComputedStyle(e.querySelector('.swatch')).backgroundColor])));
    const rgb = (hex) => `rgb(${parseInt(hex.slice(1, 3), 16)}, ${parseInt(hex.slice(3, 5), 16)}, ${parseInt(hex.slice(5, 7), 16)})`;
    check(Object.entries(palette).every(([d, c]) => legend[d] === rgb(c)), 'colours: the graph legend uses the server palette', JSON.stringify(legend));
    await finish('graph-colours', p);
    const runs = (await (await fetch(cnn.url + 'api/runs?traced=1')).json()).runs;
    const tl = await (await fetch(cnn.url + 'api/timeline?run=' + runs[runs.length - 1].id)).json();
    check(tl.runs[0].lanes.length >= 2 && tl.runs[0].lanes.every((l) => l.color === palette[l.device]),
      'colours: the timeline lanes use the server palette', JSON.stringify(tl.runs[0].lanes));
  }

  // -- a fused group is visible: its nodes outlined and labelled, the legend counts it, the panel names it
  {
    const fusedDb = path.join(dir, 'fused.db');
    runTide(tide, ['--log', fusedDb, '-q'], FUSED);
    const fz = await serve(tide, fusedDb);
    servers.push(fz);
    const p = await open(browser, fz.url, '/graph');
    await waitFor(p.page, 'fused: the drawing is there', () => !!document.querySelector('[id="node:h"]'));
    const look = await p.page.evaluate(() => Object.fromEntries(['x', 'h', 'r', 'out'].map((n) => {
      const g = [...document.querySelectorAll('#g-view svg g.node')].find((e) => e.id === 'node:' + n);
      const s = g && g.querySelector('ellipse, polygon, path');
      return [n, {stroke: s && s.getAttribute('stroke'), text: g ? [...g.querySelectorAll('text')].map((t) => t.textContent).join('|') : null}];
    })));
    check(['h', 'r'].every((n) => look[n].stroke === '#e8590c' && /fused into out/.test(look[n].text)) &&
          look.out.stroke === '#e8590c' && /fused group of 3/.test(look.out.text),
      'fused: the group\'s nodes are outlined and say which group they ran in', JSON.stringify(look));
    check(look.x.stroke !== '#e8590c' && !/fused/.test(look.x.text), 'fused: a node outside the group is not marked', JSON.stringify(look.x));
    await waitFor(p.page, 'fused: the legend counts the group', () =>
      /fused: 1 group, 3 nodes/.test((document.querySelector('#g-fused') || {}).textContent || ''));
    await p.page.click('[id="node:h"]');
    await waitFor(p.page, 'fused: the node panel names its group and the members', () => {
      const f = document.querySelector('#n-fused');
      return f && /into out/.test(f.textContent) && /h, r, out/.test(f.textContent);
    });
    await finish('graph-fused', p);
  }
} catch (e) {
  check(false, 'the graph browser test ran to the end', e.stack || String(e));
}
await done({dir, browser, servers});
