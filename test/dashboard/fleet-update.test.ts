/**
 * The Fleet page's Update button in real headless Chromium against a real `flotilla up`: an
 * admin clicks it on the local runner's card (the server's own version is asked for); that
 * runner runs inside `up` and cannot restart itself, so its activity says so and it is online
 * again. A member sees the button disabled; a revoked runner's card has none.
 */
import { describe, expect, it } from 'vitest';
import { waitFor } from '../helpers.js';
import { dashboardForFile, dashboardReady, runnerOnline, screenshot, signIn } from './harness.js';

const ready = dashboardReady();
if (!ready.ok && process.env.CI) throw new Error(`dashboard tests cannot run: ${ready.why}`);

describe.skipIf(!ready.ok)('Fleet page: Update', () => {
  let localId = 0;
  let retiredId = 0;
  const up = dashboardForFile({
    seed: async (store) => {
      const now = Date.now();
      const retired = await store.createRunner({ name: 'retired', labels: {}, capacity: 1, credentialHash: 'retired'.padEnd(64, '0'), now });
      await store.revokeRunner(retired.id, now);
      retiredId = retired.id;
    },
    then: async (started) => {
      localId = (await runnerOnline(started)).id;
    },
    timeoutMs: 120_000,
  });

  it('an admin clicks Update: sent with the server’s version; the embedded runner reports it cannot restart itself and is online again', async () => {
    const page = await signIn(up.browser, up.url, 'ada', 'admin-password-1');
    const card = page.locator(`[data-testid=runner-${localId}]`);
    await card.waitFor();
    expect(await page.locator(`[data-testid=runner-${retiredId}] [data-testid=update-runner]`).count()).toBe(0);
    await card.locator('[data-testid=update-runner]').click();
    await expect.poll(() => card.locator('[data-testid=update-note]').textContent()).toMatch(/^Update to \d+\.\d+\.\d+ sent$/);
    const failed = await waitFor('the update_failed activity', async () => (await up.admin.getRunnerActivity(localId)).entries.find((e) => e.kind === 'update_failed'), 30_000);
    expect(failed.text).toContain('cannot restart itself');
    await expect.poll(() => card.locator('[data-testid=runner-status]').textContent(), { timeout: 10_000 }).toBe('online');
    await screenshot(page, 'fleet-update');
    await page.context().close();

    const member = await signIn(up.browser, up.url, 'mia', 'member-password-1');
    const button = member.locator(`[data-testid=runner-${localId}] [data-testid=update-runner]`);
    await button.waitFor();
    expect(await button.isDisabled()).toBe(true);
    await member.context().close();
  }, 120_000);
});
