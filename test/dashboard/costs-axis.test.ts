/**
 * The costs page's time axis spans the chosen window, in real headless Chromium against a real
 * `flotilla up`: with model calls on one day only (2 days ago) the "last 7 days" axis runs from
 * 6 days ago to today (it drew Feb 2027 – Aug 2029 with the point at the left edge: uPlot's
 * auto-range of one point on a time scale in seconds is 1,000 days), and "last 14 days" from 13
 * days ago to today; the point sits on its day. Every date is worked out here from the clock.
 */
import { describe, expect, it } from 'vitest';
import type { Page } from 'playwright-core';
import type { Store } from '../../src/store/types.js';
import { dashboardForFile, dashboardReady, screenshot, signIn } from './harness.js';

const ready = dashboardReady();
if (!ready.ok && process.env.CI) throw new Error(`dashboard tests cannot run: ${ready.why}`);

const DAY_MS = 86_400_000;
const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];
/** UTC midnight `n` days before today, epoch ms. */
const daysAgo = (n: number) => Math.floor(Date.now() / DAY_MS) * DAY_MS - n * DAY_MS;
/** `Nov 26` for an epoch-ms instant (UTC). */
const label = (ms: number) => `${MONTHS[new Date(ms).getUTCMonth()]} ${new Date(ms).getUTCDate()}`;

/** Two model calls 2 days ago (0.40 + 0.11 = $0.51), none on any other day. */
async function seed(store: Store): Promise<void> {
  const now = Date.now();
  const job = await store.createJob({ parentId: null, agent: 'parked', agentVersion: '1', input: {}, selector: { pool: 'nowhere' }, priority: 0, budgetMicros: 5_000_000, now });
  const call = (costMicros: number, startedAt: number) =>
    store.recordModelCall({ jobId: job.id, attempt: 0, provider: 'scripted', model: 'm', api: 'anthropic-messages', streamed: false, httpStatus: 200, inputTokens: 10, outputTokens: 5, cacheReadTokens: 0, cacheWriteTokens: 0, usageKnown: true, costMicros, startedAt, durationMs: 5, runnerId: null });
  await call(400_000, daysAgo(2) + 3_600_000);
  await call(110_000, daysAgo(2) + 7_200_000);
  await store.transitionJob(job.id, null, ['queued'], 'cancelled', now, { endReason: 'cancelled' });
}

interface Drawn {
  range: [number, number];
  labels: string[];
  x: number[];
  values: number[];
}

/** What the chart drew: uPlot's x scale (s), its x axis labels, and the plotted days and values. */
async function drawn(page: Page): Promise<Drawn> {
  const chart = page.locator('[data-testid=chart]');
  const [range, labels, points] = await Promise.all(['data-x-range', 'data-x-labels', 'data-points'].map(async (a) => JSON.parse((await chart.getAttribute(a)) ?? 'null')));
  return { range, labels, x: points.x, values: points.series[0].values };
}

describe.skipIf(!ready.ok)('costs page time axis (Chromium)', () => {
  const up = dashboardForFile({ agents: { parked: ['name: parked', 'harness: command', 'command: [echo, hi]', 'runnerLabels: { pool: nowhere }'].join('\n') }, seed });

  it('first the last 30 days (as the CLI and API default to); last 7 and last 14 days: the axis runs from the window\'s first day to today, the one day with spend at its place', async () => {
    const page = await signIn(up.browser, up.url, 'ada', 'admin-password-1');
    await page.goto(`${up.url}/costs`);
    // First the last 30 days, as `flotilla costs` and GET /api/costs default to: 29 days ago to today.
    const first = new Date(daysAgo(29)).toISOString().slice(0, 10);
    // whole UTC days, and the CLI command that sums the same window (fresh tester: the CLI's 30d counts back from now)
    await expect.poll(() => page.locator('.muted', { hasText: 'model calls since' }).textContent(), { timeout: 15_000 }).toContain(`since ${first} 00:00 UTC (whole days: flotilla costs --since ${first};`);
    expect(await page.locator('[data-testid=window]').inputValue()).toBe('30');
    await page.selectOption('[data-testid=window]', '7');
    await expect.poll(() => page.locator('.muted', { hasText: 'model calls since' }).textContent(), { timeout: 15_000 }).toContain(new Date(daysAgo(6)).toISOString().slice(0, 10));
    // the CLI's window of as many days (fresh tester: it said 30d for every window)
    expect(await page.locator('.muted', { hasText: 'model calls since' }).textContent()).toContain("the CLI's --since 7d counts back from now");
    await page.locator('[data-testid=chart] canvas').waitFor();
    await expect.poll(async () => (await drawn(page)).range?.[0], { timeout: 10_000 }).toBe((daysAgo(6) - DAY_MS / 2) / 1000);
    const week = await drawn(page);
    // The seven days, 6 days ago first and today last, each at its UTC midnight; half a day either side.
    expect(week.labels).toEqual([6, 5, 4, 3, 2, 1, 0].map((n) => label(daysAgo(n))));
    expect(week.range).toEqual([(daysAgo(6) - DAY_MS / 2) / 1000, (daysAgo(0) + DAY_MS / 2) / 1000]);
    // The single point: 2 days ago, $0.51; 4.5 of the 7 days from the left edge, not at it.
    expect(week.x).toEqual([daysAgo(2) / 1000]);
    expect(week.values.map((v) => Math.round(v * 1e6))).toEqual([510_000]);
    expect((week.x[0]! - week.range[0]) / (week.range[1] - week.range[0])).toBeCloseTo(4.5 / 7, 9);
    await screenshot(page, 'costs-axis-7-days');

    await page.selectOption('[data-testid=window]', '14');
    await expect.poll(async () => (await drawn(page)).range, { timeout: 10_000 }).toEqual([(daysAgo(13) - DAY_MS / 2) / 1000, (daysAgo(0) + DAY_MS / 2) / 1000]);
    const fortnight = await drawn(page);
    // Fourteen days, 13 days ago first and today last (one label a day at 1280 px).
    expect(fortnight.labels).toEqual(Array.from({ length: 14 }, (_, i) => label(daysAgo(13 - i))));
    expect(fortnight.x).toEqual([daysAgo(2) / 1000]);
    await screenshot(page, 'costs-axis-14-days');
    await page.context().close();
  }, 120_000);
});
