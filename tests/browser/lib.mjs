// lib.mjs — what the browser tests share: headless Chromium with the flags CI needs (playwright-core),
// a tide run log made by a real run of the binary, `tide serve LOG --port 0`, pages opened with every
// console error, failed request and HTTP error recorded, polling checks (page.waitForFunction compiles
// its predicate with eval, which the pages' Content-Security-Policy rightly forbids), canvas pixel
// counts, and the pass/fail bookkeeping. A test file imports it, calls start(), runs its checks and
// ends with done().
import {spawn, spawnSync} from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

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
export function runTide(tide, args, input) {
  const r = spawnSync(tide, args, {input, encoding: 'utf8', timeout: 180000, env: {...process.env, TIDE_LOG: ''}});
  if (r.status !== 0) throw new Error(`tide ${args.join(' ')} failed (status ${r.status}): ${r.stderr}`);
  return r;
}

export function serve(tide, db) {
  const child = spawn(tide, ['serve', db, '--port', '0'], {stdio: ['ignore', 'pipe', 'pipe']});
  let err = '';
  child.stderr.on('data', (d) => { err += d; });
  return new Promise((resolve, reject) => {
    let out = '';
    const timer = setTimeout(() => reject(new Error('tide serve printed no URL in 20 s: ' + out + err)), 20000);
    child.stdout.on('data', (d) => {
      out += d;
      const m = /serving .* at (http:\/\/\S+)/.exec(out);
      if (m) { clearTimeout(timer); resolve({child, url: m[1].endsWith('/') ? m[1] : m[1] + '/'}); }
    });
    child.on('exit', (code) => { clearTimeout(timer); reject(new Error(`tide serve exited (${code}): ${out}${err}`)); });
  });
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

// Polls fn(arg) in the page until it is true.
export async function waitFor(page, what, fn, arg, timeout) {
  const end = Date.now() + (timeout || 10000);
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
