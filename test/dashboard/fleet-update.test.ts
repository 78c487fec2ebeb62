/**
 * The Fleet page's Update button in real headless Chromium against a real `flotilla up`: an
 * admin clicks it on the local runner's card; that runner runs inside `up` and cannot restart
 * itself (its hello says so), so the server refuses at once and the card shows why (it used to
 * say "sent", the refusal only in the runner's activity); the runner stays online. A member
 * sees the button disabled; a revoked runner's card has none.
 */
import { describe, expect, it } from 'vitest';
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

  it('an admin clicks Update on the embedded runner: refused at once, the card says why, the runner stays online', async () => {
    const page = await signIn(up.browser, up.url, 'ada', 'admin-password-1');
    const card = page.locator(`[data-testid=runner-${localId}]`);
    await card.waitFor();
    expect(await page.locator(`[data-testid=runner-${retiredId}] [data-testid=update-runner]`).count()).toBe(0);
    await card.locator('[data-testid=update-runner]').click();
    await expect.poll(() => card.locator('[data-testid=update-error]').textContent()).toMatch(/runs inside `flotilla up` and cannot update itself: update the package on its machine and start `flotilla up` again/);
    expect(await card.locator('[data-testid=update-note]').count()).toBe(0);
    expect((await up.admin.getRunnerActivity(localId)).entries.filter((e) => e.kind === 'update' || e.kind === 'update_failed')).toEqual([]);
    expect(await card.locator('[data-testid=runner-status]').textContent()).toBe('online');
    await screenshot(page, 'fleet-update');
    await page.context().close();

    const member = await signIn(up.browser, up.url, 'mia', 'member-password-1');
    const button = member.locator(`[data-testid=runner-${localId}] [data-testid=update-runner]`);
    await button.waitFor();
    expect(await button.isDisabled()).toBe(true);
    await member.context().close();
  }, 120_000);
});
