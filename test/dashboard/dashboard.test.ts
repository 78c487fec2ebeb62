/**
 * The dashboard in real headless Chromium (Debian's, via playwright-core) against a real
 * `flotilla up` (server, gateway, one runner, the scripted model, the real Claude Code CLI).
 * Issue 8's browser tests: a member sees the fleet and cannot change anything (the API
 * refuses too); an admin runs test-fixer from the form and watches its tool calls arrive live,
 * in order, ending `succeeded` with the API's dollar figure; the ledger filters by agent and
 * status and pages past 1,000 jobs. Screenshots go to test-results/screenshots/.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { ROOT, waitFor } from '../helpers.js';
import { dashboardForFile, dashboardReady, runnerOnline, screenshot, signIn } from './harness.js';

const ready = dashboardReady();
if (!ready.ok && process.env.CI) throw new Error(`dashboard tests cannot run: ${ready.why}`);

const script = parseYaml(readFileSync(join(ROOT, 'agents/test-fixer/script.yaml'), 'utf8')) as { turns: Array<{ content: Array<{ tool_use?: { name: string } }> }> };
const SCRIPT_TOOLS = script.turns.flatMap((t) => t.content.flatMap((c) => (c.tool_use ? [c.tool_use.name] : [])));

/** An agent no runner can take (label nobody has): its jobs stay queued, for the ledger. */
const PARKED = ['name: parked', 'harness: command', 'command: [echo, hi]', 'runnerLabels: { pool: nowhere }', 'inputSchema: { type: object, properties: { n: { type: integer } } }'].join('\n');

/** `$x.xxxxxx` the way the page must show µ$, exact as the CLI prints it (worked out here, not imported from the page). */
function dollars(micros: number): string {
  return '$' + (micros / 1e6).toFixed(6);
}

describe.skipIf(!ready.ok)('dashboard in Chromium', () => {
  /** 1,050 past (cancelled) jobs of agent `filler` put in the ledger before `up` starts, newest first. */
  let fillerIds: number[] = [];
  const up = dashboardForFile({
    agents: { parked: PARKED, filler: PARKED.replace('name: parked', 'name: filler') },
    seed: async (store) => {
      const t = Date.now() - 3_600_000;
      for (let i = 0; i < 1050; i++) {
        const j = await store.createJob({ parentId: null, agent: 'filler', agentVersion: '1', input: { n: i }, selector: { pool: 'nowhere' }, priority: 0, budgetMicros: 1_000_000, now: t + i });
        await store.transitionJob(j.id, null, ['queued'], 'cancelled', t + i, { endReason: 'cancelled' });
        fillerIds.push(j.id);
      }
      fillerIds = fillerIds.reverse();
    },
    then: runnerOnline,
    timeoutMs: 120_000,
  });

  it('a member sees the runner online, cannot press admin buttons, and the API refuses them', async () => {
    const page = await signIn(up.browser, up.url, 'mia', 'member-password-1');
    const runner = (await up.admin.listRunners())[0]!;
    const card = page.locator(`[data-testid=runner-${runner.id}]`);
    await card.waitFor();
    await expect.poll(() => card.locator('[data-testid=runner-status]').textContent(), { timeout: 10_000 }).toBe('online');
    expect(await card.locator('[data-testid=slots]').textContent()).toBe(`0/${runner.capacity}`);
    expect(await page.locator('[data-testid=who]').textContent()).toContain('member');
    expect(await page.locator('[data-testid=run-job]').isDisabled()).toBe(true);
    await screenshot(page, 'fleet-member');
    await page.setViewportSize({ width: 390, height: 844 });
    await screenshot(page, 'fleet-phone');
    await page.setViewportSize({ width: 1280, height: 900 });

    // Directly, from the signed-in page: reads work, changes are refused.
    const statuses = await page.evaluate(async () => {
      const h = { 'content-type': 'application/json', 'x-flotilla-csrf': '1' };
      const post = (p: string, b: unknown) => fetch(p, { method: 'POST', headers: h, body: JSON.stringify(b) }).then((r) => r.status);
      return {
        read: await fetch('/api/runners').then((r) => r.status),
        create: await post('/api/jobs', { agent: 'parked', input: {} }),
        token: await post('/api/runner-tokens', {}),
        user: await post('/api/users', { name: 'x', role: 'admin', password: 'long-password-1' }),
      };
    });
    expect(statuses).toEqual({ read: 200, create: 403, token: 403, user: 403 });
    expect((await up.admin.listJobs({ agent: 'parked' })).jobs).toEqual([]);

    // On a job page the Cancel button is disabled for a member.
    const job = await up.admin.createJob({ agent: 'parked', input: { n: 1 } });
    await page.goto(`${up.url}/jobs/${job.id}`);
    await page.locator('[data-testid=cancel]').waitFor();
    expect(await page.locator('[data-testid=cancel]').isDisabled()).toBe(true);
    await up.admin.cancelJob(job.id);
    await page.context().close();
  }, 120_000);

  it('an admin starts test-fixer from the Run job form and watches the tool calls arrive live, in order', async () => {
    const page = await signIn(up.browser, up.url, 'ada', 'admin-password-1');
    await page.click('[data-testid=run-job]');
    await page.selectOption('select[name=agent]', 'test-fixer');
    await page.fill('input[name="input.repo"]', 'examples/calc');
    await page.fill('input[name=budget]', '1');
    // a label key given twice is refused as the CLI refuses it, and no job starts (fresh tester: the last value won)
    const before = (await up.admin.listJobs({})).jobs.length;
    await page.fill('input[name=labels]', 'role=build,role=x');
    await page.click('[data-testid=start]');
    await expect.poll(() => page.locator('[data-testid=run-error]').textContent(), { timeout: 10_000 }).toBe('labels: label key "role" is given twice (role=build, role=x): give each key once');
    expect((await up.admin.listJobs({})).jobs.length).toBe(before);
    await page.fill('input[name=labels]', '');
    // a priority past 100 is blocked by the browser's own check: the labels error, now about an
    // empty field, is gone (it stayed: a fresh tester), and no job starts
    await page.fill('input[name=priority]', '1000');
    await page.click('[data-testid=start]');
    await expect.poll(() => page.locator('[data-testid=run-error]').count(), { timeout: 10_000 }).toBe(0);
    expect(await page.locator('input[name=priority]').evaluate((e) => (e as HTMLInputElement).validity.rangeOverflow)).toBe(true);
    expect((await up.admin.listJobs({})).jobs.length).toBe(before);
    await page.fill('input[name=priority]', '0');
    await page.click('[data-testid=start]');
    await page.waitForURL(/\/jobs\/\d+$/);
    const jobId = Number(/\/jobs\/(\d+)$/.exec(page.url())![1]);

    // Sample the transcript while the job runs: the list of tool names must only ever grow
    // by appending (live, in order), and must be seen part-way (not only all at once).
    const seen: string[][] = [];
    let status = '';
    const t0 = Date.now();
    while (Date.now() - t0 < 120_000) {
      const snap = await page.evaluate(() => ({
        tools: [...document.querySelectorAll('[data-testid=tool-call]')].map((e) => e.getAttribute('data-tool') ?? ''),
        status: document.querySelector('[data-testid=job-status]')?.textContent ?? '',
      }));
      if (seen.length === 0 || seen[seen.length - 1]!.join() !== snap.tools.join()) seen.push(snap.tools);
      status = snap.status;
      if (['succeeded', 'failed', 'cancelled', 'lost'].includes(status)) break;
      await new Promise((r) => setTimeout(r, 40));
    }
    expect(status).toBe('succeeded');
    await expect.poll(async () => (await page.locator('[data-testid=tool-call]').evaluateAll((els) => els.map((e) => e.getAttribute('data-tool')))).join(), { timeout: 10_000 }).toBe(SCRIPT_TOOLS.join());
    for (let i = 1; i < seen.length; i++) expect(seen[i]!.slice(0, seen[i - 1]!.length)).toEqual(seen[i - 1]);
    const partial = seen.filter((s) => s.length > 0 && s.length < SCRIPT_TOOLS.length);
    expect(partial.length, `snapshots: ${JSON.stringify(seen)}`).toBeGreaterThan(0);

    // The same dollar figure as the API.
    const apiJob = await up.admin.getJob(jobId);
    expect(apiJob.status).toBe('succeeded');
    expect(apiJob.usage!.costMicros).toBeGreaterThan(0);
    await expect.poll(() => page.locator('[data-testid=job-cost]').textContent(), { timeout: 10_000 }).toBe(dollars(apiJob.usage!.costMicros));
    // the cache tokens, most of the input a harness sends, beside in / out (they were left out: a fresh tester)
    const u = apiJob.usage!;
    expect(u.cacheReadTokens).toBeGreaterThan(0);
    expect(await page.locator('[data-testid=job-cache-tokens]').textContent()).toBe(` (${u.cacheReadTokens.toLocaleString('en-US')} cache read, ${u.cacheWriteTokens.toLocaleString('en-US')} cache write)`);
    const tree = await up.admin.getBudget(jobId);
    await expect.poll(() => page.locator('[data-testid=spent]').textContent(), { timeout: 10_000 }).toBe(dollars(tree.budget.spentMicros));

    // Folded tool call expands to show its output.
    await page.locator('[data-testid=tool-call] button.fold').first().click();
    await page.locator('.tool-body pre').first().waitFor();
    await screenshot(page, 'job-page');

    await page.goto(`${up.url}/costs`);
    await page.locator('[data-testid=chart] canvas').waitFor();
    // The total renders with the page's first data and updates when the rollup arrives: poll.
    await expect.poll(() => page.locator('[data-testid=total-cost]').textContent(), { timeout: 10_000 }).toBe(dollars(apiJob.usage!.costMicros));
    await screenshot(page, 'costs');
    await page.context().close();
  }, 180_000);

  it('an admin holds the runner for 1 h from its page: the card reads on hold with the time left, a queued job waits, Resume releases it', async () => {
    const page = await signIn(up.browser, up.url, 'ada', 'admin-password-1');
    const runner = (await up.admin.listRunners())[0]!;
    await page.goto(`${up.url}/runners/${runner.id}`);
    await page.locator('[data-testid=hold-for]').waitFor({ timeout: 60_000 }).catch(async (e: unknown) => {
      await screenshot(page, 'runner-page-failed');
      throw e;
    });
    await page.selectOption('[data-testid=hold-for]', '1h');
    await page.fill('[data-testid=hold-reason]', 'disk cleanup');
    const before = Date.now();
    await page.click('[data-testid=hold]');
    await expect.poll(() => page.locator('[data-testid=runner-status]').textContent(), { timeout: 10_000 }).toBe('on hold');
    const held = (await up.admin.listRunners()).find((r) => r.id === runner.id)!;
    expect(held.status).toBe('on_hold');
    const until = Date.parse(held.hold!.until);
    expect(until).toBeGreaterThanOrEqual(before + 3_600_000 - 1000);
    expect(until).toBeLessThanOrEqual(Date.now() + 3_600_000);

    await page.goto(`${up.url}/`);
    const card = page.locator(`[data-testid=runner-${runner.id}]`);
    await expect.poll(() => card.locator('[data-testid=runner-status]').textContent(), { timeout: 10_000 }).toBe('on hold');
    // 1 h minus the seconds since: "59m 5xs left" (or "1h 00m" in the first second).
    expect(await card.locator('[data-testid=hold-left]').textContent()).toMatch(/^(59m \d\ds|1h 00m) left — disk cleanup$/);
    await screenshot(page, 'fleet-on-hold');

    const job = await up.admin.createJob({ agent: 'hello-py', input: {} });
    await new Promise((r) => setTimeout(r, 3000));
    expect((await up.admin.getJob(job.id)).status).toBe('queued');
    // its page says why it waits, as `flotilla jobs show` does (the dispatcher's note names the held runner and its hold's end, in the page's local time)
    await page.goto(`${up.url}/jobs/${job.id}`);
    const localUntil = await page.evaluate((ms) => {
      const d = new Date(ms);
      const p = (n: number) => String(n).padStart(2, '0');
      return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())} ${p(d.getHours())}:${p(d.getMinutes())}:${p(d.getSeconds())}`;
    }, until);
    await expect
      .poll(() => page.locator('[data-testid=job-waiting]').textContent(), { timeout: 10_000 })
      .toBe(`every connected runner that matches this job is on hold (${runner.name} until ${localUntil}), waiting`);

    await page.goto(`${up.url}/runners/${runner.id}`);
    await page.click('[data-testid=resume]');
    await expect.poll(() => page.locator('[data-testid=runner-status]').textContent(), { timeout: 10_000 }).not.toBe('on hold');
    await waitFor('the queued job to leave the queue', async () => (await up.admin.getJob(job.id)).status !== 'queued', 30_000);
    await waitFor('the job to end', async () => ['succeeded', 'failed'].includes((await up.admin.getJob(job.id)).status), 60_000);
    await page.context().close();
  }, 180_000);

  it('the ledger filters by agent and status and pages past 1,000 jobs', async () => {
    const ids = fillerIds; // newest first, as the ledger shows them
    expect(ids.length).toBe(1050);
    const page = await signIn(up.browser, up.url, 'mia', 'member-password-1');
    await page.goto(`${up.url}/jobs?agent=filler&status=cancelled&size=200`);
    const rows = page.locator('[data-testid=ledger-row]');
    const firstIds = async () => (await rows.locator('td:first-child a').allTextContents()).map((t) => Number(t.slice(1)));
    await expect.poll(async () => (await firstIds())[0], { timeout: 15_000 }).toBe(ids[0]);
    const shown: number[] = [];
    for (let p = 1; p <= 6; p++) {
      await expect.poll(() => page.locator('[data-testid=page-number]').textContent()).toBe(`page ${p}`);
      await expect.poll(async () => (await firstIds())[0], { timeout: 15_000 }).toBe(ids[(p - 1) * 200]);
      const got = await firstIds();
      shown.push(...got);
      const statuses = await rows.locator('[data-testid=job-status]').allTextContents();
      expect(new Set(statuses)).toEqual(new Set(['cancelled']));
      const agents = await rows.locator('td:nth-child(3)').allTextContents();
      expect(new Set(agents)).toEqual(new Set(['filler']));
      if (p < 6) await page.click('[data-testid=older]');
    }
    expect(shown).toEqual(ids);
    expect(await page.locator('[data-testid=older]').isDisabled()).toBe(true);
    await page.click('[data-testid=newer]');
    await expect.poll(async () => (await firstIds())[0]).toBe(ids[800]);

    // Another filter: test-fixer jobs that succeeded are exactly the API's.
    await page.goto(`${up.url}/jobs?agent=test-fixer&status=succeeded`);
    const want = (await up.admin.listJobs({ agent: 'test-fixer', status: 'succeeded' })).jobs.map((j) => j.id);
    await expect.poll(async () => (await firstIds()).join(), { timeout: 15_000 }).toBe(want.join());
    await screenshot(page, 'ledger');

    // A date range of one day: "to" includes the day picked (the API's `to` is exclusive: the
    // page sends the next midnight; it listed nothing for from = to = today, fresh-tester finding).
    const listed = (await up.admin.listJobs({ agent: 'test-fixer', status: 'succeeded' })).jobs;
    const day = listed[0]!.createdAt.slice(0, 10);
    const sameDay = listed.filter((j) => j.createdAt.startsWith(day)).map((j) => j.id);
    expect(sameDay.length).toBeGreaterThan(0);
    await page.goto(`${up.url}/jobs?agent=test-fixer&status=succeeded&from=${day}&to=${day}`);
    await expect.poll(async () => (await firstIds()).join(), { timeout: 15_000 }).toBe(sameDay.join());
    await page.context().close();
  }, 240_000);
});
