/**
 * The Fleet page in real headless Chromium against a real `flotilla up`: a revoked runner's card
 * reads `revoked` (not a plain `offline`), the counts say so, and the status filter has
 * `revoked` (it shows only that runner; `offline` does not show it).
 */
import { describe, expect, it } from 'vitest';
import { dashboardForFile, dashboardReady, runnerOnline, screenshot, signIn } from './harness.js';

const ready = dashboardReady();
if (!ready.ok && process.env.CI) throw new Error(`dashboard tests cannot run: ${ready.why}`);

describe.skipIf(!ready.ok)('Fleet page: revoked runners', () => {
  let retiredId = 0;
  let quietId = 0;
  const up = dashboardForFile({
    seed: async (store) => {
      const now = Date.now();
      const retired = await store.createRunner({ name: 'retired', labels: {}, capacity: 1, credentialHash: 'retired'.padEnd(64, '0'), now });
      await store.revokeRunner(retired.id, now);
      retiredId = retired.id;
      // Registered, never connected: plainly offline.
      quietId = (await store.createRunner({ name: 'quiet', labels: {}, capacity: 1, credentialHash: 'quiet'.padEnd(64, '0'), now })).id;
    },
    then: runnerOnline,
    timeoutMs: 120_000,
  });

  it('the card reads revoked, the counts list it, and the status filter shows only revoked runners', async () => {
    const page = await signIn(up.browser, up.url, 'ada', 'admin-password-1');
    const retired = page.locator(`[data-testid=runner-${retiredId}]`);
    await retired.waitFor();
    expect(await retired.locator('[data-testid=runner-status]').textContent()).toBe('revoked');
    expect(await page.locator(`[data-testid=runner-${quietId}] [data-testid=runner-status]`).textContent()).toBe('offline');
    await expect.poll(() => page.locator('[data-testid=counts]').textContent()).toContain('1 revoked');
    await screenshot(page, 'fleet-revoked');

    await page.selectOption('select[aria-label=status]', 'revoked');
    await expect.poll(() => page.locator('article.runner').count()).toBe(1);
    expect(await retired.isVisible()).toBe(true);
    await page.selectOption('select[aria-label=status]', 'offline');
    await expect.poll(() => page.locator('article.runner').count()).toBe(1);
    expect(await page.locator(`[data-testid=runner-${quietId}]`).isVisible()).toBe(true);
    expect(await retired.count()).toBe(0);
    await page.context().close();
  }, 120_000);
});
