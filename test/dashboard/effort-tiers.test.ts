/**
 * Issue 8, Settings → effort tiers, in real headless Chromium against a real `flotilla up`: an
 * admin adds a tier (model + effort level) and sees it listed, the API and the CLI's client
 * see the same stored tier, the admin replaces and deletes it; a member reads the tiers with
 * the form disabled (and the API refuses a member's change); the admin sets the account default
 * tier from the page (stored; the tier it names cannot then be deleted) and clears it.
 */
import { describe, expect, it } from 'vitest';
import { FlotillaClient } from '../../src/client/client.js';
import { main } from '../../src/cli/main.js';
import { recordingIO } from '../../src/cli/test-io.js';
import { dashboardForFile, dashboardReady, screenshot, signIn } from './harness.js';

const ready = dashboardReady();
if (!ready.ok && process.env.CI) throw new Error(`dashboard tests cannot run: ${ready.why}`);

describe.skipIf(!ready.ok)('effort tiers in Settings (Chromium)', () => {
  const up = dashboardForFile();

  it('an admin adds, replaces and deletes a tier; a member reads it and cannot change it', async () => {
    const admin = await signIn(up.browser, up.url, 'ada', 'admin-password-1');
    await admin.goto(`${up.url}/settings`);
    await admin.locator('[data-testid=tier-max]').waitFor({ timeout: 15_000 });
    await admin.fill('[data-testid=tier-name]', 'cheap');
    await admin.fill('[data-testid=tier-model]', 'claude-haiku-4-5');
    await admin.selectOption('[data-testid=tier-level]', 'low');
    await admin.click('[data-testid=tier-save]');
    const row = admin.locator('[data-testid=tier-cheap] td');
    await expect.poll(() => row.allTextContents(), { timeout: 10_000 }).toEqual(['cheap', 'claude-haiku-4-5', 'low', 'account', 'Delete']);
    expect((await up.admin.listEffortTiers()).tiers).toContainEqual(expect.objectContaining({ name: 'cheap', model: 'claude-haiku-4-5', level: 'low', source: 'account' }));

    // Redefine a built-in tier for this account.
    await admin.fill('[data-testid=tier-name]', 'max');
    await admin.fill('[data-testid=tier-model]', 'claude-opus-4-6');
    await admin.selectOption('[data-testid=tier-level]', 'xhigh');
    await admin.click('[data-testid=tier-save]');
    await expect.poll(() => admin.locator('[data-testid=tier-max] td').allTextContents(), { timeout: 10_000 }).toEqual(['max', 'claude-opus-4-6', 'xhigh', 'account', 'Delete']);
    await screenshot(admin, 'settings-effort-tiers');

    // A job run at the stored tier is accepted; an unknown one is refused naming the known tiers.
    await expect(up.admin.createJob({ agent: 'hello-py', input: {}, priority: 0, effort: 'nope' })).rejects.toThrow(/known: cheap, max, high, medium|known: .*cheap/);

    const member = await signIn(up.browser, up.url, 'mia', 'member-password-1');
    await member.goto(`${up.url}/settings`);
    await expect.poll(() => member.locator('[data-testid=tier-cheap] td').allTextContents(), { timeout: 10_000 }).toEqual(['cheap', 'claude-haiku-4-5', 'low', 'account', 'Delete']);
    expect(await member.locator('[data-testid=tier-save]').isDisabled()).toBe(true);
    expect(await member.locator('[data-testid=tier-delete-cheap]').isDisabled()).toBe(true);
    const memberToken = (await up.admin.createApiToken({ name: 'reader', role: 'member' })).token;
    await expect(new FlotillaClient({ url: up.url, token: memberToken }).setEffortTier('cheap', 'x', 'max')).rejects.toThrow(/admin|forbidden/i);
    await member.context().close();

    await admin.click('[data-testid=tier-delete-max]');
    await expect.poll(() => admin.locator('[data-testid=tier-max] td').allTextContents(), { timeout: 10_000 }).toEqual(['max', 'claude-opus-4-6', 'max', 'builtin', '']);
    expect((await up.admin.listEffortTiers()).tiers.filter((t) => t.source === 'account').map((t) => t.name)).toEqual(['cheap']);

    // The account default tier: set from the page, stored on the server, and guarded.
    expect(await admin.locator('[data-testid=tier-default-now]').textContent()).toBe('in effect: none');
    await admin.selectOption('[data-testid=tier-default]', 'cheap');
    await admin.click('[data-testid=tier-default-save]');
    await expect.poll(async () => (await up.admin.listEffortTiers()).defaultTier, { timeout: 10_000 }).toBe('cheap');
    expect((await up.admin.listEffortTiers()).defaultSource).toBe('account');
    await expect.poll(() => admin.locator('[data-testid=tier-cheap] td').first().textContent(), { timeout: 10_000 }).toBe('cheap (default)');
    expect(await admin.locator('[data-testid=tier-default-now]').textContent()).toBe('in effect: cheap (set here)');
    await screenshot(admin, 'settings-default-tier');
    // The default cannot be deleted from under it: the server says why, and the page shows it.
    await admin.click('[data-testid=tier-delete-cheap]');
    await expect.poll(() => admin.locator('[data-testid=effort-tiers] .error').textContent(), { timeout: 10_000 }).toContain('is the default tier');
    expect((await up.admin.listEffortTiers()).tiers.map((t) => t.name)).toContain('cheap');
    // A member sees it and cannot change it.
    const reader = await signIn(up.browser, up.url, 'mia', 'member-password-1');
    await reader.goto(`${up.url}/settings`);
    await expect.poll(() => reader.locator('[data-testid=tier-default-now]').textContent(), { timeout: 10_000 }).toBe('in effect: cheap (set here)');
    expect(await reader.locator('[data-testid=tier-default-save]').isDisabled()).toBe(true);
    await reader.context().close();
    await expect(new FlotillaClient({ url: up.url, token: memberToken }).setDefaultEffortTier(null)).rejects.toThrow(/admin|forbidden/i);
    // "none" clears it: the server's setting (none here) applies again.
    await admin.selectOption('[data-testid=tier-default]', '');
    await admin.click('[data-testid=tier-default-save]');
    await expect.poll(async () => (await up.admin.listEffortTiers()).defaultTier, { timeout: 10_000 }).toBeNull();

    // The CLI sets the same stored default (`flotilla tiers default NAME`, `--clear`), and the page shows it.
    const cli = async (...args: string[]) => {
      const io = recordingIO();
      const code = await main(['node', 'flotilla', 'tiers', ...args, '--server', up.url, '--token', up.adminToken], io);
      return { code, out: io.out(), err: io.err() };
    };
    expect(await cli('default', 'cheap')).toEqual({ code: 0, out: 'default tier: cheap (account)\n', err: '' });
    expect((await cli('list')).out).toMatch(/^cheap \(default\)\s+claude-haiku-4-5\s+low\s+account/m);
    await admin.reload();
    await expect.poll(() => admin.locator('[data-testid=tier-default-now]').textContent(), { timeout: 10_000 }).toBe('in effect: cheap (set here)');
    const unknown = await cli('default', 'nope');
    expect(unknown.code).toBe(1);
    expect(unknown.err).toContain('no effort tier "nope"');
    expect((await cli('default')).code).toBe(2);
    expect(await cli('default', '--clear')).toEqual({ code: 0, out: 'default tier: none\n', err: '' });
    expect((await up.admin.listEffortTiers()).defaultTier).toBeNull();
    await admin.context().close();
  }, 120_000);
});
