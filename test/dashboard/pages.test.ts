/**
 * Issue 8's pages past the first suite, in real headless Chromium against a real `flotilla up`
 * (server, gateway, one runner): the costs page from the server's rollups (figures worked out
 * here from the seeded ledger), a job with 10,000 events opening fast and scrolling (the
 * transcript is virtualised), the result box, Top up and Resume on the job page, the runner page
 * (capacity, token rotation, recent jobs, activity) and settings; every page at 390 px wide
 * without sideways scrolling. Screenshots go to test-results/screenshots/.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser, Page } from 'playwright-core';
import { waitFor } from '../helpers.js';
import { FlotillaClient } from '../../src/client/client.js';
import type { EventBody } from '../../src/protocol/index.js';
import type { Store } from '../../src/store/types.js';
import { dashboardReady, launchBrowser, screenshot, signIn, startUp, type Up } from './harness.js';

const ready = dashboardReady();
if (!ready.ok && process.env.CI) throw new Error(`dashboard tests cannot run: ${ready.why}`);

const DAY = 86_400_000;
const parked = (name: string) => [`name: ${name}`, 'harness: command', 'command: [echo, hi]', 'runnerLabels: { pool: nowhere }'].join('\n');

/** `$x.xxxx` for µ$ under $10, worked out here (not imported from the page). */
function dollars(micros: number): string {
  return '$' + (micros / 1e6).toFixed(4);
}

/** Events of the 10,000-event job: message, tool.call, tool.result (folds into its call), log; repeated. */
const EVENTS = 10_000;
function eventAt(i: number): EventBody {
  const k = i % 4;
  if (k === 0) return { type: 'message', data: { role: 'assistant', text: `Step ${i}: reading the next file.` } } as EventBody;
  if (k === 1) return { type: 'tool.call', data: { id: `t${i}`, name: 'Bash', input: { command: `npm test -- --grep case-${i}` } } } as EventBody;
  if (k === 2) return { type: 'tool.result', data: { id: `t${i - 1}`, output: `ok ${i}\n`, isError: false } } as EventBody;
  return { type: 'log', data: { stream: 'stderr', line: `line ${i}` } } as EventBody;
}
/** Rows the transcript shows: every event but results (they fold into their call) = 3 of each 4. */
const ROWS = (EVENTS / 4) * 3;

interface Seeded {
  alpha: number;
  alphaChild: number;
  beta: number;
  big: number;
  done: number;
  box: number;
}

/** The ledger: 4 model calls on two UTC days over two trees and one named runner (µ$ below). */
async function seed(store: Store, ids: Partial<Seeded>): Promise<void> {
  const now = Date.now();
  const today = Math.floor(now / DAY) * DAY;
  const yesterday = today - DAY;
  const box = await store.createRunner({ name: 'box-a', labels: { pool: 'elsewhere' }, capacity: 1, credentialHash: 'b'.repeat(64), now });
  const job = (agent: string, parentId: number | null = null) => store.createJob({ parentId, agent, agentVersion: '1', input: {}, selector: { pool: 'nowhere' }, priority: 0, budgetMicros: 5_000_000, now });
  const alpha = await job('alpha');
  const alphaChild = await job('beta', alpha.id);
  const beta = await job('beta');
  const call = (jobId: number, costMicros: number, startedAt: number, runnerId: number | null) =>
    store.recordModelCall({ jobId, attempt: 0, provider: 'scripted', model: 'm', api: 'anthropic-messages', streamed: false, httpStatus: 200, inputTokens: 10, outputTokens: 5, cacheReadTokens: 0, cacheWriteTokens: 0, usageKnown: true, costMicros, startedAt, durationMs: 5, runnerId });
  await call(alpha.id, 1_250_000, today + 60_000, box.id);
  await call(alphaChild.id, 300_000, today + 120_000, box.id);
  await call(beta.id, 2_000_000, yesterday + 60_000, null);
  await call(alpha.id, 50_000, yesterday + 120_000, box.id);
  // alpha stays queued (no runner has pool=nowhere): a tree at work, with a budget bar.
  await store.transitionJob(alphaChild.id, null, ['queued'], 'cancelled', now, { endReason: 'cancelled' });
  await store.transitionJob(beta.id, null, ['queued'], 'cancelled', now, { endReason: 'cancelled' });

  const big = await job('beta');
  for (let i = 0; i < EVENTS; i++) await store.appendServerEvent(big.id, eventAt(i), now);
  await store.transitionJob(big.id, null, ['queued'], 'cancelled', now, { endReason: 'cancelled' });

  const done = await job('beta');
  await store.transitionJob(done.id, null, ['queued'], 'cancelled', now, {
    endReason: 'cancelled',
    result: { summary: 'Fixed it.', branch: 'flotilla/job-9', commit: '0123456789abcdef0123', changedFiles: ['a.js', 'b.js'], changeUrl: 'https://git.example/org/repo/pull/7' },
  });
  Object.assign(ids, { alpha: alpha.id, alphaChild: alphaChild.id, beta: beta.id, big: big.id, done: done.id, box: box.id });
}

/** True when the page scrolls sideways (content wider than the viewport). */
async function overflowsSideways(page: Page): Promise<boolean> {
  return page.evaluate(() => document.documentElement.scrollWidth > window.innerWidth + 1);
}

describe.skipIf(!ready.ok)('dashboard pages in Chromium', () => {
  let up: Up;
  let browser: Browser;
  const ids: Partial<Seeded> = {};
  const id = (k: keyof Seeded) => ids[k]!;
  beforeAll(async () => {
    up = await startUp({ alpha: parked('alpha'), beta: parked('beta') }, (store) => seed(store, ids));
    await up.admin.createUser({ name: 'ada', role: 'admin', password: 'admin-password-1' });
    await up.admin.createUser({ name: 'mia', role: 'member', password: 'member-password-1' });
    browser = await launchBrowser();
    await waitFor('the runner online', async () => (await up.admin.listRunners()).some((r) => r.status === 'online'), 30_000);
  }, 180_000);
  afterAll(async () => {
    await browser?.close();
    await up?.close();
  });

  it('costs: totals by agent, runner and tree, spend per day per group, and running trees, all from the server rollups', async () => {
    const page = await signIn(browser, up.url, 'mia', 'member-password-1');
    await page.goto(`${up.url}/costs`);
    // 1.25 + 0.3 + 2.0 + 0.05 = $3.60 in four calls.
    await expect.poll(() => page.locator('[data-testid=total-cost]').textContent(), { timeout: 15_000 }).toBe('$3.6000');
    const table = async (t: string) => Object.fromEntries(await page.locator(`[data-testid=${t}] tr`).evaluateAll((rows) => rows.map((r) => [r.querySelector('td')!.textContent, r.querySelector('[data-testid=cost]')!.textContent])));
    expect(await table('by-agent')).toEqual({ alpha: '$1.3000', beta: '$2.3000' });
    expect(await table('by-runner')).toEqual({ 'box-a': '$1.6000', 'no runner': '$2.0000' });
    expect(await table('top-trees')).toEqual({ [`tree #${id('beta')}`]: '$2.0000', [`tree #${id('alpha')}`]: '$1.6000' });

    const points = async () => JSON.parse((await page.locator('[data-testid=chart]').getAttribute('data-points')) ?? '{}') as { x: number[]; series: Array<{ name: string; values: number[] }> };
    const today = Math.floor(Date.now() / DAY) * DAY;
    await page.locator('[data-testid=chart] canvas').waitFor();
    const p = await points();
    expect(p.x).toEqual([(today - DAY) / 1000, today / 1000]);
    const byName = (q: typeof p) => Object.fromEntries(q.series.map((s) => [s.name, s.values.map((v) => Math.round(v * 1e6))]));
    expect(byName(p)).toEqual({ beta: [2_000_000, 300_000], alpha: [50_000, 1_250_000] });
    await page.click('[data-testid=by-runner]');
    await expect.poll(async () => byName(await points()), { timeout: 10_000 }).toEqual({ 'no runner': [2_000_000, 0], 'box-a': [50_000, 1_550_000] });
    await page.click('[data-testid=by-tree]');
    await expect.poll(async () => byName(await points()), { timeout: 10_000 }).toEqual({ [`tree #${id('beta')}`]: [2_000_000, 0], [`tree #${id('alpha')}`]: [50_000, 1_550_000] });

    // The queued alpha tree is at work: its bar shows the API's figures.
    const b = await up.admin.getBudget(id('alpha'));
    const tree = page.locator(`[data-testid=tree-${id('alpha')}]`);
    await tree.waitFor();
    expect(await tree.locator('[data-testid=spent]').textContent()).toBe(dollars(b.budget.spentMicros));
    expect(await tree.locator('.legend').textContent()).toContain(`limit ${dollars(b.budget.limitMicros)}`);
    await screenshot(page, 'costs-rollups');
    await page.setViewportSize({ width: 390, height: 844 });
    await page.waitForTimeout(300);
    expect(await overflowsSideways(page)).toBe(false);
    await screenshot(page, 'costs-phone');
    await page.context().close();
  }, 120_000);

  it('a job with 10,000 events opens in well under the bound, scrolls to the end, and keeps few rows in the DOM', async () => {
    const page = await signIn(browser, up.url, 'mia', 'member-password-1');
    const t0 = Date.now();
    await page.goto(`${up.url}/jobs/${id('big')}`);
    await page.locator('.transcript .row').first().waitFor({ timeout: 10_000 });
    const firstRowMs = Date.now() - t0;
    await page.waitForFunction((n) => document.querySelector('h3 .muted')?.textContent === `${n} rows`, ROWS, { timeout: 60_000 });
    const allMs = Date.now() - t0;
    const marks = await page.evaluate(() => Object.fromEntries(performance.getEntriesByType('mark').map((m) => [m.name, Math.round(m.startTime)])));
    console.log(`10,000-event job page: first frame with rows drawn ${marks['flotilla:first-frame']} ms (page mark), first row seen from outside ${firstRowMs} ms, all ${ROWS} rows folded in ${allMs} ms`);
    // The real figure is in bench/dashboard.bench.js; this bound only catches a page that
    // renders every row (seconds) on a loaded 2-core machine.
    expect(marks['flotilla:first-row']).toBeLessThan(5_000);
    expect(marks['flotilla:first-frame']).toBeLessThan(5_000);
    expect(allMs).toBeLessThan(30_000);
    // Virtualised: a few dozen rows in the DOM, not 7,500.
    expect(await page.locator('.transcript .row').count()).toBeLessThan(200);
    // It follows the end: the last event (log line 9999) is on screen; the top scrolls back to event 0.
    await expect.poll(() => page.locator('.transcript').textContent(), { timeout: 10_000 }).toContain(`line ${EVENTS - 1}`);
    await page.locator('.transcript').evaluate((el) => (el.scrollTop = 0));
    await expect.poll(() => page.locator('.transcript').textContent(), { timeout: 10_000 }).toContain('Step 0: reading the next file.');
    // Scrolling through it in 60 steps: every step shows rows (no blank frames).
    const blanks = await page.locator('.transcript').evaluate(async (el) => {
      let empty = 0;
      for (let i = 1; i <= 60; i++) {
        el.scrollTop = (el.scrollHeight * i) / 60;
        await new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)));
        const box = el.getBoundingClientRect();
        const hit = document.elementFromPoint(box.left + 20, box.top + box.height / 2);
        if (!hit?.closest('.row')) empty++;
      }
      return empty;
    });
    expect(blanks).toBe(0);
    await screenshot(page, 'job-10k-events');
    await page.setViewportSize({ width: 390, height: 844 });
    await page.waitForTimeout(300);
    expect(await overflowsSideways(page)).toBe(false);
    await screenshot(page, 'job-10k-phone');
    await page.context().close();
  }, 120_000);

  it('job page: result box; Top up raises the tree limit; members cannot press Resume or Top up', async () => {
    const member = await signIn(browser, up.url, 'mia', 'member-password-1');
    await member.goto(`${up.url}/jobs/${id('done')}`);
    await member.locator('[data-testid=result]').waitFor();
    expect(await member.locator('[data-testid=result-branch]').textContent()).toBe('flotilla/job-9');
    expect(await member.locator('[data-testid=result-commit]').textContent()).toBe('0123456789ab');
    expect(await member.locator('[data-testid=result-change]').getAttribute('href')).toBe('https://git.example/org/repo/pull/7');
    expect(await member.locator('[data-testid=result-files]').textContent()).toBe('a.js, b.js');
    expect(await member.locator('[data-testid=resume-job]').isDisabled()).toBe(true);
    await member.goto(`${up.url}/jobs/${id('alpha')}`);
    await member.locator('[data-testid=top-up]').waitFor();
    expect(await member.locator('[data-testid=top-up]').isDisabled()).toBe(true);
    await member.context().close();

    const admin = await signIn(browser, up.url, 'ada', 'admin-password-1');
    await admin.goto(`${up.url}/jobs/${id('alpha')}`);
    const before = (await up.admin.getBudget(id('alpha'))).budget.limitMicros;
    await admin.fill('[aria-label="top up, USD"]', '1.5');
    await admin.click('[data-testid=top-up]');
    await waitFor('the limit raised', async () => (await up.admin.getBudget(id('alpha'))).budget.limitMicros === before + 1_500_000, 10_000);
    await expect.poll(() => admin.locator('[data-testid=budget] .legend').textContent(), { timeout: 10_000 }).toContain(`limit ${dollars(before + 1_500_000)}`);
    // The tree: alpha ($1.25 + $0.05) and its child ($0.30), $1.60 in all.
    const tree = admin.locator('[data-testid=job-tree]');
    await tree.waitFor({ timeout: 10_000 });
    expect(await tree.locator('h3 .muted').textContent()).toBe('2 jobs · $1.6000');
    expect(await tree.locator(`[data-testid=tree-node-${id('alpha')}] [data-testid=node-cost]`).textContent()).toBe('$1.3000');
    expect(await tree.locator(`[data-testid=tree-node-${id('alphaChild')}] [data-testid=node-cost]`).textContent()).toBe('$0.3000');
    expect(await tree.locator(`[data-testid=tree-node-${id('alphaChild')}] [data-testid=node-status]`).textContent()).toBe('cancelled');
    expect(await tree.locator(`[data-testid=tree-node-${id('alphaChild')}] a`).getAttribute('href')).toBe(`/jobs/${id('alphaChild')}`);
    await screenshot(admin, 'job-top-up');
    await admin.context().close();
  }, 120_000);

  it('Resume on an ended job starts a job that continues its session on the same runner', async () => {
    const first = await up.admin.createJob({ agent: 'hello-py', input: {} });
    await waitFor('hello-py to end', async () => ['succeeded', 'failed'].includes((await up.admin.getJob(first.id)).status), 90_000);
    const ended = await up.admin.getJob(first.id);
    expect(ended.status).toBe('succeeded');
    expect(ended.sessionId).toBeTruthy();
    const page = await signIn(browser, up.url, 'ada', 'admin-password-1');
    await page.goto(`${up.url}/jobs/${first.id}`);
    const resume = page.locator('[data-testid=resume-job]');
    await expect.poll(() => resume.isDisabled(), { timeout: 10_000 }).toBe(false);
    await resume.click();
    await page.waitForURL((u) => /\/jobs\/\d+$/.test(u.pathname) && u.pathname !== `/jobs/${first.id}`, { timeout: 10_000 });
    const nextId = Number(/\/jobs\/(\d+)$/.exec(page.url())![1]);
    expect(nextId).toBeGreaterThan(first.id);
    await waitFor('the resumed job to end', async () => ['succeeded', 'failed'].includes((await up.admin.getJob(nextId)).status), 90_000);
    const next = await up.admin.getJob(nextId);
    expect(next.status).toBe('succeeded');
    expect(next.sessionId).toBe(ended.sessionId);
    expect(next.runnerId).toBe(ended.runnerId);
    await expect.poll(() => page.locator('[data-testid=job-status]').textContent(), { timeout: 15_000 }).toBe('succeeded');
    await page.context().close();
  }, 240_000);

  it('runner page: capacity, recent jobs, activity; token rotation revokes and shows a working registration token once', async () => {
    // A second runner, registered over the API (never connected), to rotate.
    const reg = await up.admin.createRunnerToken({ labels: { pool: 'spare' } });
    const res = await fetch(`${up.url}/api/runners/register`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ token: reg.token, name: 'spare', labels: { pool: 'spare' }, capacity: 1 }) });
    expect(res.status).toBe(201);
    const spare = (await up.admin.listRunners()).find((r) => r.name === 'spare')!;
    const local = (await up.admin.listRunners()).find((r) => r.status !== 'offline' && r.name !== 'spare' && r.name !== 'box-a')!;

    const member = await signIn(browser, up.url, 'mia', 'member-password-1');
    await member.goto(`${up.url}/runners/${local.id}`);
    await member.locator('[data-testid=capacity]').waitFor();
    expect(await member.locator('[data-testid=capacity-jobs]').isDisabled()).toBe(true);
    expect(await member.locator('[data-testid=rotate-start]').isDisabled()).toBe(true);
    expect(await member.locator('[data-testid=hold]').isDisabled()).toBe(true);
    // The hello-py jobs of the test before ran here: recent jobs and activity list them.
    const recent = (await up.admin.getRunner(local.id)).recentJobs;
    expect(recent.length).toBeGreaterThan(0);
    await expect.poll(() => member.locator('[data-testid=recent-jobs] tr').count(), { timeout: 10_000 }).toBe(recent.length);
    expect(await member.locator('[data-testid=activity]').textContent()).toContain(`job #${recent[0]!.id} ${recent[0]!.agent}`);
    await member.setViewportSize({ width: 390, height: 844 });
    await member.waitForTimeout(300);
    expect(await overflowsSideways(member)).toBe(false);
    await screenshot(member, 'runner-phone');
    await member.context().close();

    const admin = await signIn(browser, up.url, 'ada', 'admin-password-1');
    await admin.goto(`${up.url}/runners/${local.id}`);
    await admin.locator('[data-testid=capacity]').waitFor();
    await admin.selectOption('[data-testid=capacity-jobs]', '3');
    await admin.selectOption('[data-testid=capacity-browsers]', '4');
    // 4 browser slots on 3 parallel jobs: the form says no before the server has to.
    expect(await admin.locator('[data-testid=capacity-save]').isDisabled()).toBe(true);
    await admin.selectOption('[data-testid=capacity-browsers]', '2');
    await admin.click('[data-testid=capacity-save]');
    await waitFor('capacity 3', async () => (await up.admin.getRunner(local.id)).runner.capacity === 3, 10_000);
    expect((await up.admin.getRunner(local.id)).runner.browserSlots).toBe(2);
    await expect.poll(() => admin.locator('[data-testid=slots]').textContent(), { timeout: 10_000 }).toMatch(/\/3$/);
    await expect.poll(() => admin.locator('[data-testid=browser-slots]').textContent(), { timeout: 10_000 }).toBe('2');
    await screenshot(admin, 'runner-page');

    await admin.goto(`${up.url}/runners/${spare.id}`);
    await admin.click('[data-testid=rotate-start]');
    await admin.click('[data-testid=rotate-confirm]');
    const token = (await admin.locator('[data-testid=runner-token]').textContent({ timeout: 10_000 }))!.trim();
    expect(token).toMatch(/^flr_/);
    expect((await up.admin.getRunner(spare.id)).runner.revokedAt).toBeTruthy();
    const again = await fetch(`${up.url}/api/runners/register`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ token, name: 'spare-2', labels: { pool: 'spare' }, capacity: 1 }) });
    expect(again.status).toBe(201);
    // Shown once: a reload does not show it again.
    await admin.reload();
    await admin.locator('[data-testid=rotate]').waitFor();
    expect(await admin.locator('[data-testid=runner-token]').count()).toBe(0);
    await admin.context().close();
  }, 120_000);

  it('tasks: the list shows keys, status and queue; a task page queues a prompt, suspends, resumes and completes (admins only)', async (ctx) => {
    const probe = await fetch(`${up.url}/api/tasks`, { headers: { authorization: `Bearer ${up.adminToken}` } });
    if (probe.status !== 200) ctx.skip(); // issue 7's API not in this build yet
    const key = 'https://git.example/org/repo/issues/42';
    const task = await up.admin.createTask({ agent: 'alpha', title: 'Fix issue 42', keys: [key] });
    expect(task.status).toBe('idle');

    const member = await signIn(browser, up.url, 'mia', 'member-password-1');
    await member.goto(`${up.url}/tasks`);
    const row = member.locator('[data-testid=task-row]', { hasText: 'Fix issue 42' });
    await row.waitFor({ timeout: 10_000 });
    expect(await row.locator('[data-testid=task-status]').textContent()).toBe('idle');
    expect(await row.textContent()).toContain(key);
    expect(await row.locator('[data-testid=task-queue]').textContent()).toBe('0');
    await member.setViewportSize({ width: 390, height: 844 });
    await member.waitForTimeout(300);
    expect(await overflowsSideways(member)).toBe(false);
    await screenshot(member, 'tasks-phone');
    await member.goto(`${up.url}/tasks/${task.id}`);
    await member.locator('[data-testid=task-suspend]').waitFor();
    for (const b of ['suspend', 'resume', 'stop', 'complete', 'send']) expect(await member.locator(`[data-testid=task-${b}]`).isDisabled()).toBe(true);
    expect(await member.locator('[data-testid=task-prompt]').isDisabled()).toBe(true);
    await member.context().close();

    const admin = await signIn(browser, up.url, 'ada', 'admin-password-1');
    await admin.goto(`${up.url}/tasks/${task.id}`);
    await admin.click('[data-testid=task-suspend]');
    await waitFor('suspended', async () => (await up.admin.getTask(task.id)).task.status === 'suspended', 10_000);
    await expect.poll(() => admin.locator('[data-testid=task-status]').textContent(), { timeout: 10_000 }).toBe('suspended');
    // Suspended: the prompt queues and waits (no wake).
    await admin.fill('[data-testid=task-prompt]', 'Please rebase on main.');
    await admin.click('[data-testid=task-send]');
    await waitFor('the prompt queued', async () => (await up.admin.getTask(task.id)).task.queuedPrompts === 1, 10_000);
    await expect.poll(() => admin.locator('[data-testid=task-queue]').textContent(), { timeout: 10_000 }).toContain('1 prompts');
    await expect.poll(() => admin.locator('[data-testid=conversation]').textContent(), { timeout: 10_000 }).toContain('Please rebase on main.');
    await screenshot(admin, 'task-page');
    await admin.click('[data-testid=task-resume]');
    await waitFor('resumed', async () => (await up.admin.getTask(task.id)).task.status !== 'suspended', 10_000);
    await admin.click('[data-testid=task-complete]');
    await waitFor('completed', async () => (await up.admin.getTask(task.id)).task.status === 'completed', 10_000);
    await expect.poll(() => admin.locator('[data-testid=task-status]').textContent(), { timeout: 10_000 }).toBe('completed');
    await admin.context().close();
  }, 120_000);

  it('settings: admins see users, API tokens and effort tiers; members are turned away', async () => {
    const member = await signIn(browser, up.url, 'mia', 'member-password-1');
    await member.goto(`${up.url}/settings`);
    await expect.poll(() => member.locator('main').textContent(), { timeout: 10_000 }).toContain('Settings are for admins');
    await member.context().close();

    const admin = await signIn(browser, up.url, 'ada', 'admin-password-1');
    await admin.goto(`${up.url}/settings`);
    await expect.poll(() => admin.locator('[data-testid=users] td').allTextContents(), { timeout: 10_000 }).toEqual(expect.arrayContaining(['ada', 'mia']));
    await expect.poll(() => admin.locator('[data-testid=effort-tiers]').textContent(), { timeout: 10_000 }).toContain('hello-py');
    await admin.fill('[aria-label="token name"]', 'ci');
    await admin.click('[data-testid=api-tokens] button[type=submit]');
    const secret = (await admin.locator('[data-testid=new-token]').textContent({ timeout: 10_000 }))!;
    expect(secret).toMatch(/^fla_/);
    expect((await new FlotillaClient({ url: up.url, token: secret }).session()).principal.role).toBe('member');
    // Model routes, when this server has the gateway routes API (issue 3's, built in parallel).
    const routesApi = await fetch(`${up.url}/api/gateway/routes`, { headers: { authorization: `Bearer ${up.adminToken}` } });
    if (routesApi.status === 200) {
      await admin.locator('[data-testid=routes]').waitFor({ state: 'attached', timeout: 10_000 });
      await admin.fill('[aria-label="route pattern"]', 'gpt-*');
      await admin.selectOption('[aria-label=provider]', 'openai');
      await admin.click('[data-testid=add-route]');
      await expect.poll(() => admin.locator('[data-testid=routes]').textContent(), { timeout: 10_000 }).toContain('gpt-*');
      expect((await up.admin.listModelRoutes()).routes).toContainEqual(expect.objectContaining({ pattern: 'gpt-*', provider: 'openai', source: 'api' }));
    }
    const receiversApi = await fetch(`${up.url}/api/receivers`, { headers: { authorization: `Bearer ${up.adminToken}` } });
    if (receiversApi.status === 200) {
      await admin.fill('[aria-label="receiver name"]', 'gh-main');
      await admin.click('[data-testid=add-receiver]');
      await admin.locator('[data-testid=receiver-secret]').waitFor({ timeout: 10_000 });
      const made = (await up.admin.listReceivers()).find((r) => r.name === 'gh-main');
      expect(made).toMatchObject({ provider: 'github', auth: 'hmac' });
      expect(await admin.locator('[data-testid=receivers] table').textContent()).toContain(made!.path);
    }
    await screenshot(admin, 'settings');
    await admin.setViewportSize({ width: 390, height: 844 });
    await admin.waitForTimeout(300);
    expect(await overflowsSideways(admin)).toBe(false);
    await screenshot(admin, 'settings-phone');
    await admin.context().close();
  }, 120_000);
});
