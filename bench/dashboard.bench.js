/* global document, requestAnimationFrame -- used inside page.evaluate (runs in the browser) */
// The dashboard's weight and speed (issue 8).
// 1. Page weight: every JS and CSS file of dist/web, raw and gzipped (zlib level 9), and what the
//    first load fetches (the files index.html names).
// 2. Time to first render in headless Chromium (Debian's, playwright-core), median of N:
//    - baseline: loading /healthz (a tiny JSON page) in the same browser, same run;
//    - the fleet with 20 runners: navigation → the first runner card on screen;
//    - a job with 10,000 events, measured from Playwright's side (issue 8: under a second):
//      navigation → the transcript's last event visible (the page opens on the tail); the
//      page's own marks too; the bytes of API replies the first screen needed;
//    - then reading the whole history by scrolling up from the end to event 0 (older pages load
//      as it nears the top): time taken and frame times (p50/p95).
import { mkdtempSync, readdirSync, readFileSync, rmSync, existsSync } from 'node:fs';
import { gzipSync } from 'node:zlib';
import { tmpdir } from 'node:os';
import { join, dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';
import { openStore } from '../dist/store/open.js';
import { startServer } from '../dist/server/server.js';
import { hashPassword } from '../dist/server/passwords.js';
import { loadGatewayConfig } from '../dist/gateway/config.js';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const N = Number(process.env.BENCH_RUNS ?? 5);
const EVENTS = 10_000;
const CHROMIUM = process.env.FLOTILLA_CHROMIUM ?? '/usr/bin/chromium';
const FLAGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'];
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const pct = (xs, p) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((xs.length * p) / 100))];
const kb = (n) => `${(n / 1024).toFixed(1)} KiB`;
const ms = (x) => `${x.toFixed(0)} ms`;

// --- 1. page weight ------------------------------------------------------------------------
const assets = join(ROOT, 'dist', 'web', 'assets');
if (!existsSync(assets)) {
  console.error('dist/web is missing: run `npm run build` first');
  process.exit(1);
}
let raw = 0;
let gz = 0;
for (const f of readdirSync(assets).filter((f) => /\.(js|css)$/.test(f))) {
  const b = readFileSync(join(assets, f));
  const g = gzipSync(b, { level: 9 }).length;
  raw += b.length;
  gz += g;
  console.log(`  ${f.padEnd(28)} ${kb(b.length).padStart(10)} raw  ${kb(g).padStart(9)} gzipped`);
}
console.log(`page weight (JS + CSS): ${kb(raw)} raw, ${kb(gz)} gzipped`);
// What the first load of any page fetches: the files index.html names (later chunks, e.g. the
// costs page's charts, load when their page opens).
const first = [...readFileSync(join(ROOT, 'dist', 'web', 'index.html'), 'utf8').matchAll(/(?:src|href)="\/assets\/([^"]+\.(?:js|css))"/g)].map((m) => m[1]);
const firstBytes = first.map((f) => readFileSync(join(assets, f)));
console.log(`first load (${first.join(', ')}): ${kb(firstBytes.reduce((n, b) => n + b.length, 0))} raw, ${kb(firstBytes.reduce((n, b) => n + gzipSync(b, { level: 9 }).length, 0))} gzipped`);

if (!existsSync(CHROMIUM)) {
  console.error(`no Chromium at ${CHROMIUM}: apt-get install -y chromium`);
  process.exit(1);
}

// --- 2. a server with 20 runners and a 10,000-event job ------------------------------------
const dir = mkdtempSync(join(tmpdir(), 'bench-dash-'));
const store = await openStore({ dataDir: join(dir, 'db') });
const now = Date.now();
for (let i = 0; i < 20; i++) {
  const r = await store.createRunner({ name: `box-${i}`, labels: { os: 'linux', pool: i % 2 ? 'a' : 'b' }, capacity: 2, credentialHash: `c${i}x`.padEnd(64, "0"), now });
  await store.touchRunner(r.id, now, { version: '0.1.0' });
}
const job = await store.createJob({ parentId: null, agent: 'test-fixer', agentVersion: '1', input: { repo: 'x' }, selector: {}, priority: 0, budgetMicros: 1_000_000, now });
let rows = 0;
for (let i = 0; i < EVENTS; i++) {
  const k = i % 4;
  const body =
    k === 0
      ? { type: 'message', data: { role: 'assistant', text: `Step ${i}: looking at the next file to see what the test expects.` } }
      : k === 1
        ? { type: 'tool.call', data: { id: `t${i}`, name: 'Bash', input: { command: `npm test -- --grep case-${i}` } } }
        : k === 2
          ? { type: 'tool.result', data: { id: `t${i - 1}`, output: `ok ${i}\n`.repeat(5), isError: false } }
          : { type: 'log', data: { stream: 'stderr', line: `line ${i}` } };
  if (k !== 2) rows++; // a result folds into its call's row
  await store.appendServerEvent(job.id, body, now);
}
await store.transitionJob(job.id, null, ['queued'], 'cancelled', now, { endReason: 'cancelled' });
await store.createUser({ name: 'bench', role: 'member', passwordHash: await hashPassword('bench-password'), now });
const server = await startServer({ store, dataDir: dir, port: 0, agentsDirs: [join(ROOT, 'agents')], gateway: loadGatewayConfig({ ANTHROPIC_API_KEY: '' }), heartbeatTimeoutMs: 3_600_000 });

const browser = await chromium.launch({ executablePath: CHROMIUM, args: FLAGS, headless: true });
try {
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  const page = await context.newPage();
  const signIn = await context.request.post(server.url + '/api/session', { headers: { 'x-flotilla-csrf': '1' }, data: { name: 'bench', password: 'bench-password' } });
  if (!signIn.ok()) throw new Error(`sign-in failed: ${signIn.status()}`);

  const base = [];
  const fleet = [];
  const jobFirst = [];
  const jobMark = [];
  const frameMark = [];
  const apiBytes = [];
  const lastLine = `line ${EVENTS - 1}`; // the job's last event (a log line)
  for (let i = 0; i < N; i++) {
    let t0 = performance.now();
    await page.goto(server.url + '/healthz');
    base.push(performance.now() - t0);

    t0 = performance.now();
    await page.goto(server.url + '/');
    await page.waitForSelector('[data-testid^=runner-]');
    fleet.push(performance.now() - t0);

    let bytes = 0;
    const count = (res) => {
      if (new URL(res.url()).pathname.startsWith(`/api/jobs/${job.id}/events`)) bytes += Number(res.headers()['content-length'] ?? 0);
    };
    page.on('response', count);
    t0 = performance.now();
    await page.goto(`${server.url}/jobs/${job.id}`);
    await page.locator('.transcript .row', { hasText: lastLine }).waitFor({ state: 'visible' });
    jobFirst.push(performance.now() - t0);
    page.off('response', count);
    apiBytes.push(bytes);
    const marks = await page.evaluate(() => Object.fromEntries(performance.getEntriesByType('mark').map((m) => [m.name, m.startTime])));
    jobMark.push(marks['flotilla:first-row'] ?? NaN);
    frameMark.push(marks['flotilla:first-frame'] ?? NaN);
  }
  // Read the whole history: hold the transcript at its top (older pages load as it nears it)
  // until event 0 shows; then scroll through all of it in 240 frames, as a reader would.
  const t1 = performance.now();
  const top = await page.evaluate(async () => {
    const el = document.querySelector('.transcript');
    let frames = 0;
    for (; frames < 5000; frames++) {
      el.scrollTop = 0;
      await new Promise((r) => requestAnimationFrame(r));
      if (!document.querySelector('[data-testid=older-events]') && el.textContent.includes('Step 0:')) break;
    }
    return { frames, shown: document.querySelector('h3 .muted')?.textContent };
  });
  const readAll = performance.now() - t1;
  const frames = await page.evaluate(async () => {
    const el = document.querySelector('.transcript');
    el.scrollTop = 0;
    const out = [];
    let last = performance.now();
    const step = el.scrollHeight / 240;
    for (let i = 0; i < 240; i++) {
      el.scrollTop += step;
      await new Promise((r) => requestAnimationFrame(r));
      const t = performance.now();
      out.push(t - last);
      last = t;
    }
    return { out, domRows: document.querySelectorAll('.transcript .row').length };
  });
  const b = median(base);
  console.log(`baseline /healthz load: ${ms(b)} (median of ${N})`);
  console.log(`fleet, 20 runners, to first card: ${ms(median(fleet))} = ${(median(fleet) / b).toFixed(1)}× baseline`);
  console.log(`job page, ${EVENTS} events: navigation → last event visible, seen from Playwright: ${ms(median(jobFirst))} (max ${ms(Math.max(...jobFirst))}) = ${(median(jobFirst) / b).toFixed(1)}× baseline; goal < 1000 ms`);
  console.log(`job page, ${EVENTS} events: first row rendered ${ms(median(jobMark))}, first frame drawn with rows ${ms(median(frameMark.filter(Number.isFinite)))} after navigation start (page marks)`);
  console.log(`job page, ${EVENTS} events: event replies the first screen read: ${kb(median(apiBytes))}`);
  console.log(`reading the whole history (held at the top while older pages load, to event 0): ${ms(readAll)} in ${top.frames} frames; header "${top.shown}" (expected "${rows} rows")`);
  console.log(`scrolling the whole transcript in 240 frames: p50 ${ms(pct(frames.out, 50))}, p95 ${ms(pct(frames.out, 95))} per frame; ${frames.domRows} rows in the DOM`);
} finally {
  await browser.close();
  await server.close();
  await store.close();
  rmSync(dir, { recursive: true, force: true });
}
