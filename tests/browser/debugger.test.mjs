// debugger.test.mjs — the debugger page in headless Chromium, driving a real REPL: `tide --debug --web
// --port 0 SCRIPT` trains a small network in a loop; the page (the address with the token that tide
// prints) sets a breakpoint by clicking a node and "Break here", the next run stops there (the node
// drawn as stopped, the status line names it), Step moves the stop and changes the states, Continue
// runs to the breakpoint in the next run, deleting it and Continue (a POST with the token) lets the
// script finish. Control
// requests without the token, with a wrong one or from another Origin get 403; `tide serve` has no
// debugger (404).
//
//   node debugger.test.mjs TIDE_BINARY SCREENSHOT_DIR      (exit 0 passed, 1 failed, 77 skipped)
import {spawn} from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

import {check, done, finish as finishIn, launch, open, runTide, serve, sleep, start, waitFor} from './lib.mjs';

const {tide, shots, dir, chromium} = await start('debugger.test.mjs');
const finish = (name, p) => finishIn(shots, name, p);

const SCRIPT = `
x = placeholder(float32, {nil, 4})
W1 = variable(random_normal({4, 8}, {stddev = 0.5}))
W2 = variable(random_normal({8, 1}, {stddev = 0.5}))
hidden = relu(matmul(x, W1))
out = matmul(hidden, W2)
loss = mean(out * out)
train = sgd(0.01):minimize(loss)
run(init())
bx = run(random_uniform({16, 4}))
for i = 1, 200000 do
  run({train, loss}, {[x] = bx})
  if io.open(STOP_FILE) then break end
end
print("script done")
`;

// Starts `tide --debug --web` on the script; resolves with the debugger's address once printed.
function startRepl(db, script) {
  const child = spawn(tide, ['--log', db, '--debug', '--web', '--port', '0', script],
                      {stdio: ['pipe', 'pipe', 'pipe'], env: {...process.env, TIDE_LOG: ''}});
  let out = '', err = '';
  child.stderr.on('data', (d) => { err += d; });
  const urls = new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('tide printed no debugger address in 60 s: ' + out + err)), 60000);
    child.stdout.on('data', (d) => {
      out += d;
      const m = /(http:\/\/\S+\/debugger\?token=[0-9a-f]+)/.exec(out);
      if (m) { clearTimeout(timer); resolve(m[1]); }
    });
    child.on('exit', (code) => { clearTimeout(timer); reject(new Error(`tide exited (${code}): ${out}${err}`)); });
  });
  return {child, urls, output: () => out, errors: () => err};
}

async function post(base, command, headers) {
  const r = await fetch(base + 'api/debug/command?command=' + encodeURIComponent(command), {method: 'POST', headers});
  return r.status;
}

let browser = null;
const servers = [];
let repl = null;
try {
  const db = path.join(dir, 'debug.db');
  const stopFile = path.join(dir, 'stop');
  const script = path.join(dir, 'train.lua');
  fs.writeFileSync(script, `STOP_FILE = ${JSON.stringify(stopFile)}\n` + SCRIPT);
  repl = startRepl(db, script);
  const debugUrl = await repl.urls;
  const base = debugUrl.replace(/debugger\?token=.*$/, '');
  const token = /token=([0-9a-f]+)/.exec(debugUrl)[1];
  check(token.length === 32, 'tide prints the debugger address with a 32-hex-digit token', debugUrl);

  // Control without the token, with a wrong one, or from another site: 403, nothing done.
  check(await post(base, 'abort', {}) === 403, 'POST without the token: 403');
  check(await post(base, 'abort', {'X-Tide-Token': '0'.repeat(32)}) === 403, 'POST with a wrong token: 403');
  check(await post(base, 'abort', {'X-Tide-Token': token, Origin: 'http://evil.example'}) === 403,
        'POST from a foreign Origin: 403');
  const st = await (await fetch(base + 'api/debug/state', {headers: {'X-Tide-Token': token}})).json();
  check(!st.stopped && Array.isArray(st.breakpoints) && st.breakpoints.length === 0,
        'state: not stopped, no breakpoints yet', JSON.stringify(st).slice(0, 300));

  browser = await launch(chromium);
  const p = await open(browser, base, debugUrl.slice(base.length));
  const {page} = p;
  await waitFor(page, 'the graph is drawn with the hidden layer',
                () => !!document.querySelector('#dbg-graph g.node[id="node:hidden"]'), null, 30000);
  await waitFor(page, 'the buttons are disabled while nothing is stopped',
                () => document.querySelector('#dbg-step').disabled && document.querySelector('#dbg-continue').disabled);

  // A breakpoint by clicking the node, then "Break here".
  await page.click('#dbg-graph g.node[id="node:hidden"]');
  await waitFor(page, 'clicking a node shows it in the node panel',
                () => (document.querySelector('#dbg-node-name') || {}).textContent === 'hidden');
  await page.click('#dbg-toggle-break');
  await waitFor(page, 'the breakpoint is listed',
                () => /hidden/.test(document.querySelector('#dbg-breaks').textContent));
  await waitFor(page, 'the next run stops at the breakpoint: the status line names the node',
                () => document.querySelector('#dbg-where').classList.contains('stopped') &&
                      /'hidden'/.test(document.querySelector('#dbg-where').textContent), null);
  await waitFor(page, 'the stopped node is highlighted in the drawing',
                () => document.querySelector('#dbg-graph g.node[id="node:hidden"]').classList.contains('dbg-stopped'));
  // The side panel's node table is readable: nothing in it is clipped or needs a sideways scroll (long
  // gradient names wrap; the state and the health pill stay in view).
  await waitFor(page, 'the node table lists the step\'s nodes, gradients among them',
                () => /gradients/.test((document.querySelector('#dbg-nodes') || {}).textContent || ''));
  const clipped = await page.evaluate(() => {
    const panel = document.querySelector('#dbg-nodes'), right = panel.getBoundingClientRect().right + 0.5;
    const box = panel.querySelector('.scroll') || panel;
    const out = [];
    if (box.scrollWidth > box.clientWidth + 1) out.push('scrolls sideways: ' + box.scrollWidth + ' > ' + box.clientWidth);
    for (const td of panel.querySelectorAll('td')) {
      for (const el of [td, ...td.children]) {
        const r = el.getBoundingClientRect();
        if (r.width && r.right > right) { out.push((td.textContent || el.className) + ' ends at ' + r.right + ' > ' + right); break; }
      }
    }
    return out.slice(0, 5).join('; ');
  });
  check(clipped === '', 'the node table fits the side panel: no cell clipped, no sideways scroll', clipped);
  const runAtStop = (await (await fetch(base + 'api/debug/state', {headers: {'X-Tide-Token': token}})).json()).run;
  await page.screenshot({path: path.join(shots, 'debugger-stopped.png'), fullPage: true});
  const statesBefore = await page.evaluate(() => [...document.querySelectorAll('#dbg-graph g.node')]
    .map((g) => g.id + '=' + g.getAttribute('class')).join('|'));
  const whereBefore = await page.$eval('#dbg-where', (e) => e.textContent);

  // Step: the stop moves on and the states change.
  await page.click('#dbg-step');
  await waitFor(page, 'Step: the status line changes and still says stopped',
                (w) => document.querySelector('#dbg-where').classList.contains('stopped') &&
                       document.querySelector('#dbg-where').textContent !== w, whereBefore);
  await waitFor(page, 'Step: the nodes\' states in the drawing change',
                (s) => [...document.querySelectorAll('#dbg-graph g.node')]
                  .map((g) => g.id + '=' + g.getAttribute('class')).join('|') !== s, statesBefore);
  await waitFor(page, 'a node that ran is drawn as done',
                () => document.querySelectorAll('#dbg-graph g.node.dbg-done').length > 0);

  // Continue: on to the breakpoint in a later run.
  await page.click('#dbg-continue');
  await waitFor(page, 'Continue: stopped again at the breakpoint in a later run',
                async (r) => {
                  const w = document.querySelector('#dbg-where');
                  const m = /run (\d+)/.exec(w.textContent);
                  return w.classList.contains('stopped') && /'hidden'/.test(w.textContent) && m && Number(m[1]) > r;
                }, runAtStop);

  // Delete the breakpoint, Continue: the script runs on and ends.
  fs.writeFileSync(stopFile, '');
  await page.click('#dbg-breaks button:nth-of-type(2)');
  await waitFor(page, 'the breakpoint is deleted',
                () => /None/.test(document.querySelector('#dbg-breaks').textContent), null);
  // The page is checked and closed before the script ends (its polls would then find no server).
  await finish('debugger', p);
  check(await post(base, 'continue', {'X-Tide-Token': token}) === 200, 'Continue by POST with the token: 200');
  const ended = await new Promise((resolve) => {
    const t = setTimeout(() => resolve(false), 60000);
    repl.child.on('exit', () => { clearTimeout(t); resolve(true); });
    repl.child.stdin.end();
  });
  check(ended && /script done/.test(repl.output()), 'with no breakpoint the script runs to its end',
        repl.output().slice(-300) + repl.errors().slice(-300));

  // tide serve: read-only, no debugger.
  const server = await serve(tide, db);
  servers.push(server);
  check((await fetch(server.url + 'api/debug/state')).status === 404, 'tide serve: /api/debug/state is 404');
  check(await post(server.url, 'step', {'X-Tide-Token': token}) === 405, 'tide serve: POST is 405');
} catch (e) {
  check(false, 'debugger page test ran to its end', e.stack || e.message);
} finally {
  if (repl && repl.child.exitCode === null) repl.child.kill('SIGKILL');
}
await done({dir, browser, servers});
