/**
 * Settings → model prices, in real headless Chromium against a real `flotilla up` configured by
 * a flotilla.yaml (FLOTILLA_CONFIG) with a price override: the page lists it with its source
 * (flotilla.yaml, no Remove: it is not the API's to remove) and the table entry it replaced, as
 * `flotilla models` does; an API override of the same name wins over it (source "set ...",
 * replaces flotilla.yaml's, removable), and once removed flotilla.yaml's shows again.
 * Needs `npm run build` first (dist/ and dist/web).
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tempDir } from '../helpers.js';
import { dashboardForFile, dashboardReady, signIn } from './harness.js';

const ready = dashboardReady();
if (!ready.ok && process.env.CI) throw new Error(`dashboard tests cannot run: ${ready.why}`);

describe.skipIf(!ready.ok)('model prices and their sources in Settings (Chromium)', () => {
  // registered before dashboardForFile's beforeAll: `up` (a child process) reads FLOTILLA_CONFIG
  const dir = tempDir('flotilla-dash-yaml-');
  const saved = process.env.FLOTILLA_CONFIG;
  beforeAll(() => {
    writeFileSync(join(dir.path, 'flotilla.yaml'), 'gateway:\n  prices:\n    claude-haiku-4-5: { input: 0.8, output: 4 }\n');
    process.env.FLOTILLA_CONFIG = join(dir.path, 'flotilla.yaml');
  });
  const up = dashboardForFile();
  afterAll(() => {
    if (saved === undefined) delete process.env.FLOTILLA_CONFIG;
    else process.env.FLOTILLA_CONFIG = saved;
    dir.cleanup();
  });

  it("lists flotilla.yaml's price with its source, an API override of the name over it, and flotilla.yaml's again once that is removed", async () => {
    const version = (await up.admin.listModelRoutes()).priceTableVersion;
    const admin = await signIn(up.browser, up.url, 'ada', 'admin-password-1');
    await admin.goto(`${up.url}/settings`);
    const row = admin.locator('[data-testid=prices] tr', { hasText: 'claude-haiku-4-5' });
    await row.waitFor({ timeout: 15_000 });
    // cache rates from the input (× 1.25, × 2, × 0.1); web search and max output the table's (data/prices.json: 10, 64000)
    expect(await row.textContent()).toBe(`claude-haiku-4-5in 0.8 · out 4 · cache w 1/1.6 · cache r 0.08 · web search 10/1k · max output 64000flotilla.yaml · replaces table ${version} claude-haiku-4-5 (keeps its web search, max output)`);
    expect(await row.locator('button').count()).toBe(0);

    await up.admin.setModelPrice('claude-haiku-4-5', { input: 0.5, output: 2, cacheWrite5m: 0.625, cacheWrite1h: 1, cacheRead: 0.05 });
    await admin.reload();
    await expect.poll(() => row.getAttribute('data-source'), { timeout: 10_000 }).toBe('api');
    expect(await row.locator('[data-testid=price-source]').textContent()).toMatch(/^set .+ · replaces flotilla\.yaml claude-haiku-4-5 \(keeps its web search, max output\)$/);
    expect(await row.locator('td.num').textContent()).toBe('in 0.5 · out 2 · cache w 0.625/1 · cache r 0.05 · web search 10/1k · max output 64000');

    await row.locator('button', { hasText: 'Remove' }).click();
    await expect.poll(() => row.getAttribute('data-source'), { timeout: 10_000 }).toBe('flotilla.yaml');
    expect((await up.admin.listModelRoutes()).prices).toEqual([]);
  });
});
