// lib.mjs — what the browser tests share: headless Chromium with the flags CI needs (playwright-core),
// a tide run log made by a real run of the binary, `tide serve LOG --port 0`, pages opened with every
// console error, failed request and HTTP error recorded, polling checks (page.waitForFunction compiles
// its predicate with eval, which the pages' Content-Security-Policy rightly forbids), canvas pixel
// counts, the pass/fail bookkeeping, and the Deep-MNIST-like CNN script the graph and timeline tests
// train. A test file imports it, calls start(), runs its checks and ends with done().
import {spawn, spawnSync} from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

// Deep MNIST for experts, small: 8x8 inputs, 4 and 8 filters, 16 hidden units, Adam, two summaries.
export const CNN = `
x = placeholder(float32, {nil, 8, 8, 1})
y_ = placeholder(int32, {-1})
function weight(shape) return variable(truncated_normal(shape, {stddev = 0.1})) end
function bias(n) return variable(zeros{n} + 0.1) end
scope("conv1", function()
  W_conv1 = weight({5, 5, 1, 4}); b_conv1 = bias(4)
  h_conv1 = relu(conv2d(x, W_conv1, {strides = {1, 1, 1, 1}, padding = "SAME"}) + b_conv1)
  h_pool1 = max_pool(h_conv1, {ksize = {1, 2, 2, 1}, strides = {1, 2, 2, 1}, padding = "SAME"})
end)
scope("conv2", function()
  W_conv2 = weight({3, 3, 4, 8}); b_conv2 = bias(8)
  h_conv2 = relu(conv2d(h_pool1, W_conv2, {strides = {1, 1, 1, 1}, padding = "SAME"}) + b_conv2)
  h_pool2 = max_pool(h_conv2, {ksize = {1, 2, 2, 1}, strides = {1, 2, 2, 1}, padding = "SAME"})
end)
scope("fc1", function()
  W_fc1 = weight({2 * 2 * 8, 16}); b_fc1 = bias(16)
  h_flat = reshape(h_pool2, {-1, 2 * 2 * 8})
  h_fc1 = relu(matmul(h_flat, W_fc1) + b_fc1)
end)
scope("fc2", function()
  W_fc2 = weight({16, 10}); b_fc2 = bias(10)
  y_conv = matmul(h_fc1, W_fc2) + b_fc2
end)
cross_entropy = mean(sparse_softmax_cross_entropy(y_, y_conv))
train_step = adam(1e-3):minimize(cross_entropy)
accuracy = mean(cast(equal(argmax(y_conv, 1), cast(y_, int64)), float32))
loss_summary = summary("loss", cross_entropy)
acc_summary = summary("accuracy", accuracy)
run(init())
bx = run(random_uniform({16, 8, 8, 1}))
by = tensor({0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 0, 1, 2, 3, 4, 5})
for i = 1, 6 do run({train_step, loss_summary, acc_summary}, {[x] = bx, [y_] = by}, {trace = true}) end
`;

export const CHROMIUM = process.env.TIDE_CHROMIUM || '/usr/bin/chromium';
export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

let failures = 0;
export function check(ok, what, detail) {
  console.log(`${ok ? 'ok  ' : 'FAIL'} ${what}${!ok && detail !== undefined ? ': ' + detail : ''}`);
  if (!ok) failures++;
  return ok;
}

// The arguments (TIDE_BINARY SCREENSHOT_DIR), playwright-core, or exit 77 (skip) / 2 (usage).
export async function start(file) {
  const [tide, shots] = process.argv.slice(2);
  if (!tide || !shots) {
    console.error(`usage: node ${file} TIDE_BINARY SCREENSHOT_DIR`);
    process.exit(2);
  }
  if (!fs.existsSync(CHROMIUM)) {
    console.log(`skip: no Chromium at ${CHROMIUM}`);
    process.exit(77);
  }
  let chromium;
  try {
    ({chromium} = await import('playwright-core'));
  } catch (e) {
    console.log('skip: playwright-core is not installed (run `npm install` in tests/browser)');
    process.exit(77);
  }
  fs.mkdirSync(shots, {recursive: true});
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tide-browser-'));
  return {tide, shots, dir, chromium};
}

export async function launch(chromium) {
  return chromium.launch({executablePath: CHROMIUM, headless: true,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking',
           '--disable-component-update', '--disable-sync']});
}

// Runs tide with args, statements on stdin (as the prompt reads them, so ':' commands work).
export function runTide(tide, args, input, env) {
  const r = spawnSync(tide, args, {input, encoding: 'utf8', timeout: 180000, env: {...process.env, TIDE_LOG: '', ...(env || {})}});
  if (r.status !== 0) throw new Error(`tide ${args.join(' ')} failed (status ${r.status}): ${r.stderr}`);
  return r;
}

export function serve(tide, db) {
  const child = spawn(tide, ['serve', db, '--port', '0'], {stdio: ['ignore', 'pipe', 'pipe']});
  let err = '';
  child.stderr.on('data', (d) => { err += d; });
  return new Promise((resolve, reject) => {
    let out = '';
    const timer = setTimeout(() => reject(new Error('tide serve printed no URL in 60 s: ' + out + err)), 60000);
    child.stdout.on('data', (d) => {
      out += d;
      const m = /serving .* at (http:\/\/\S+)/.exec(out);
      if (m) { clearTimeout(timer); resolve({child, url: m[1].endsWith('/') ? m[1] : m[1] + '/'}); }
    });
    child.on('exit', (code) => { clearTimeout(timer); reject(new Error(`tide serve exited (${code}): ${out}${err}`)); });
  });
}

// The CPU time (s) a child process has used so far, user and system, from /proc/PID/stat (Linux's
// clock ticks are 1/100 s): the work a server did, which a loaded machine does not stretch as it
// stretches wall time. null where /proc cannot be read.
export function cpuSeconds(child) {
  try {
    const stat = fs.readFileSync(`/proc/${child.pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' '); // fields from the 3rd (state) on
    return (Number(fields[11]) + Number(fields[12])) / 100; // utime, stime: fields 14 and 15
  } catch (e) {
    return null;
  }
}

// A page that records console errors, page errors, failed requests and HTTP errors. opts.before(page)
// runs before the navigation (routes, listeners).
export async function open(browser, base, url, opts) {
  const page = await browser.newPage({viewport: {width: 1400, height: 900}});
  const problems = [];
  page.on('console', (m) => { if (m.type() === 'error') problems.push('console: ' + m.text()); });
  page.on('pageerror', (e) => problems.push('page error: ' + e.message));
  page.on('requestfailed', (r) => {
    const f = r.failure();
    // A navigation away (or the page closing) aborts the status poll in flight: not a failure.
    if (!(f && /ERR_ABORTED/.test(f.errorText))) problems.push('request failed: ' + r.url() + ' ' + (f && f.errorText));
  });
  page.on('response', (r) => { if (r.status() >= 400) problems.push(`HTTP ${r.status()}: ${r.url()}`); });
  if (opts && opts.before) await opts.before(page);
  await page.goto(base + url.replace(/^\//, ''), {waitUntil: 'load'});
  return {page, problems};
}

export async function finish(shots, name, {page, problems}) {
  await sleep(300);
  check(problems.length === 0, `${name}: no console errors, failed requests or HTTP errors`, problems.join('; '));
  await page.screenshot({path: path.join(shots, name + '.png'), fullPage: true});
  await page.close();
}

// Polls fn(arg) in the page until it is true: for a minute unless told (it returns as soon as it is
// true; CI runs the browser beside two sanitizer builds on 2 cores, where 10 s was sometimes short).
export async function waitFor(page, what, fn, arg, timeout) {
  const end = Date.now() + (timeout || 60000);
  let last = null;
  while (Date.now() < end) {
    try {
      if (await page.evaluate(fn, arg)) return check(true, what);
    } catch (e) {
      last = e.message;
    }
    await sleep(100);
  }
  return check(false, what, 'timed out' + (last ? ' (' + last + ')' : ''));
}

// How many pixels of a canvas (or of a rectangle of it, in CSS px) are not white/transparent.
export async function inkedPixels(page, selector, rect) {
  return page.$eval(selector, (c, rect) => {
    const k = c.width / c.clientWidth;
    const r = rect ? rect.map((v) => Math.round(v * k)) : [0, 0, c.width, c.height];
    const d = c.getContext('2d').getImageData(r[0], r[1], Math.max(1, r[2]), Math.max(1, r[3])).data;
    let n = 0;
    for (let i = 0; i < d.length; i += 4) if (d[i + 3] > 0 && !(d[i] > 240 && d[i + 1] > 240 && d[i + 2] > 240)) n++;
    return n;
  }, rect || null);
}

// Ends the test: closes what is open, removes the directory, exits 0 or 1.
export async function done({dir, browser, servers}) {
  if (browser) await browser.close();
  for (const s of servers || []) s.child.kill('SIGTERM');
  fs.rmSync(dir, {recursive: true, force: true});
  console.log(failures ? `${failures} check(s) failed` : 'all browser checks passed');
  process.exit(failures ? 1 : 0);
}
