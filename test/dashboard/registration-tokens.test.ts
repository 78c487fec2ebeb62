/**
 * The fleet page's "Registration tokens" card in real headless Chromium against a real
 * `flotilla up`: tokens created through the API are listed live (id, labels, created, expires);
 * an admin revokes one with two presses, the API then has it revoked and the card lists it only
 * under "Show all", as revoked; an admin creates one from the card's form (shown once, with the
 * runner line); a member gets the card with every button disabled (the API refuses a member's
 * list and revoke too).
 */
import { describe, expect, it } from 'vitest';
import type { Page } from 'playwright-core';
import { FlotillaClient } from '../../src/client/client.js';
import { dashboardForFile, dashboardReady, screenshot, signIn } from './harness.js';

const ready = dashboardReady();
if (!ready.ok && process.env.CI) throw new Error(`dashboard tests cannot run: ${ready.why}`);

/** The title members see on admin buttons (written out here, not imported from the page). */
const ADMIN_ONLY_TITLE = 'Admins only: members can read but not change anything';

/** ISO → `YYYY-MM-DD hh:mm:ss` in local time, the way the page must show it (worked out here). */
function local(isoText: string): string {
  const d = new Date(isoText);
  const p = (n: number) => String(n).padStart(2, '0');
  return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())} ${p(d.getHours())}:${p(d.getMinutes())}:${p(d.getSeconds())}`;
}

/** Ids of the token rows the card shows, in order. */
async function rowIds(page: Page): Promise<number[]> {
  const ids = await page.locator('[data-testid=registration-tokens] tbody tr').evaluateAll((rows) => rows.map((r) => r.getAttribute('data-testid') ?? ''));
  return ids.map((t) => Number(t.replace('reg-token-', '')));
}

describe.skipIf(!ready.ok)('registration tokens on the fleet page (Chromium)', () => {
  const up = dashboardForFile();

  it('an admin sees the live tokens, revokes one with two presses, finds it revoked under Show all, and creates one', async () => {
    const before = (await up.admin.listRunnerTokens()).map((t) => t.id);
    const a = await up.admin.createRunnerToken({ labels: { os: 'linux', pool: 'alpha' } });
    const b = await up.admin.createRunnerToken({ labels: { pool: 'beta' } });
    expect(a.id).toBeTypeOf('number');
    expect(b.id).toBeTypeOf('number');
    const aId = a.id!;
    const bId = b.id!;
    const live = await up.admin.listRunnerTokens();
    expect(live.map((t) => t.id)).toEqual([...before, aId, bId]);
    const aInfo = live.find((t) => t.id === aId)!;
    const bInfo = live.find((t) => t.id === bId)!;
    // Default lifetime: 1 h.
    expect(Date.parse(aInfo.expiresAt) - Date.parse(aInfo.createdAt)).toBe(3_600_000);
    expect(aInfo.expiresAt).toBe(a.expiresAt);

    const page = await signIn(up.browser, up.url, 'ada', 'admin-password-1');
    await page.goto(`${up.url}/`);
    const card = page.locator('[data-testid=registration-tokens]');
    const rowA = card.locator(`[data-testid=reg-token-${aId}]`);
    const rowB = card.locator(`[data-testid=reg-token-${bId}]`);
    await rowB.waitFor({ timeout: 15_000 });
    expect(await rowIds(page)).toEqual([...before, aId, bId]);
    expect(await rowA.locator('td').first().textContent()).toBe(`#${aId}`);
    expect(await rowA.locator('[data-testid=reg-token-labels]').textContent()).toBe('os=linux,pool=alpha');
    expect(await rowB.locator('[data-testid=reg-token-labels]').textContent()).toBe('pool=beta');
    expect(await rowA.locator('[data-testid=reg-token-created]').textContent()).toBe(local(aInfo.createdAt));
    expect(await rowA.locator('[data-testid=reg-token-created]').getAttribute('title')).toBe(aInfo.createdAt);
    expect(await rowA.locator('[data-testid=reg-token-expires]').textContent()).toBe(local(a.expiresAt as string));
    expect(await rowB.locator('[data-testid=reg-token-expires]').getAttribute('title')).toBe(bInfo.expiresAt);
    // The live list has no status column; each live token has its Revoke button.
    expect(await card.locator('[data-testid=reg-token-status]').count()).toBe(0);
    expect(await rowA.locator('[data-testid=reg-token-revoke]').isEnabled()).toBe(true);
    expect(await rowB.locator('[data-testid=reg-token-revoke]').isEnabled()).toBe(true);
    await screenshot(page, 'fleet-registration-tokens');

    // First press only asks; nothing is revoked yet.
    await rowB.locator('[data-testid=reg-token-revoke]').click();
    await rowB.locator('[data-testid=reg-token-revoke-confirm]').waitFor();
    expect(await rowB.locator('[data-testid=reg-token-revoke-confirm]').textContent()).toBe(`Revoke #${bId}`);
    expect((await up.admin.listRunnerTokens({ all: true })).find((t) => t.id === bId)?.status).toBe('live');
    // "Keep it" backs out.
    await rowB.locator('button', { hasText: 'Keep it' }).click();
    await rowB.locator('[data-testid=reg-token-revoke]').waitFor();
    expect((await up.admin.listRunnerTokens({ all: true })).find((t) => t.id === bId)?.status).toBe('live');
    // Two presses revoke it.
    await rowB.locator('[data-testid=reg-token-revoke]').click();
    await rowB.locator('[data-testid=reg-token-revoke-confirm]').click();
    await expect.poll(async () => (await up.admin.listRunnerTokens({ all: true })).find((t) => t.id === bId)?.status, { timeout: 10_000 }).toBe('revoked');
    const bAfter = (await up.admin.listRunnerTokens({ all: true })).find((t) => t.id === bId)!;
    expect(bAfter.revokedAt).not.toBeNull();
    expect(bAfter.usedAt).toBeNull();
    expect((await up.admin.listRunnerTokens()).map((t) => t.id)).toEqual([...before, aId]);
    expect((await up.admin.listRunnerTokens({ all: true })).find((t) => t.id === aId)?.status).toBe('live');
    // The card refreshed: b is no longer listed as live.
    await expect.poll(() => rowIds(page), { timeout: 10_000 }).toEqual([...before, aId]);
    expect(await card.locator('.error').count()).toBe(0);

    // Show all: every token with its status; the revoked one has no Revoke button.
    await page.check('[data-testid=reg-tokens-all]');
    await rowB.waitFor({ timeout: 10_000 });
    expect(await rowB.locator('[data-testid=reg-token-status]').textContent()).toBe('revoked');
    expect(await rowA.locator('[data-testid=reg-token-status]').textContent()).toBe('live');
    expect(await rowB.locator('[data-testid=reg-token-revoke]').count()).toBe(0);
    expect(await rowA.locator('[data-testid=reg-token-revoke]').count()).toBe(1);
    const allIds = (await up.admin.listRunnerTokens({ all: true })).map((t) => t.id);
    expect(allIds).toContain(aId);
    expect(allIds).toContain(bId);
    expect(await rowIds(page)).toEqual(allIds);
    await screenshot(page, 'fleet-registration-tokens-all');
    await page.uncheck('[data-testid=reg-tokens-all]');
    await expect.poll(() => rowIds(page), { timeout: 10_000 }).toEqual([...before, aId]);

    // A malformed label is refused in the page, naming it; nothing is created.
    await page.fill('[data-testid=reg-token-labels-input]', 'zone');
    await page.click('[data-testid=reg-token-create]');
    await expect.poll(() => card.locator('.error').textContent(), { timeout: 10_000 }).toBe('label "zone" must look like key=value');
    expect((await up.admin.listRunnerTokens({ all: true })).map((t) => t.id)).toEqual(allIds);

    // New registration token from the card: shown once with the runner line, listed live.
    // A label value with a space: the line to paste quotes it (protocol/shell-quote.ts).
    await page.fill('[data-testid=reg-token-labels-input]', 'zone=mars base');
    await page.click('[data-testid=reg-token-create]');
    const shown = card.locator('[data-testid=new-registration-token]');
    await shown.waitFor({ timeout: 10_000 });
    const secret = (await shown.locator('[data-testid=registration-token]').textContent()) ?? '';
    expect(secret).toMatch(/^flr_/);
    const liveNow = await up.admin.listRunnerTokens();
    expect(liveNow.map((t) => t.id).slice(0, -1)).toEqual([...before, aId]);
    const c = liveNow.at(-1)!;
    expect(c.labels).toEqual({ zone: 'mars base' });
    expect(await shown.textContent()).toContain(`New registration token #${c.id} (shown once; expires ${c.expiresAt})`);
    expect(await shown.textContent()).toContain(`On the machine: flotilla runner --server ${up.url} --token … --labels 'zone=mars base'`);
    expect(await card.locator('.error').count()).toBe(0);
    await expect.poll(() => rowIds(page), { timeout: 10_000 }).toEqual([...before, aId, c.id]);
    expect(JSON.stringify(await up.admin.listRunnerTokens({ all: true }))).not.toContain(secret);
    // At phone width the page does not scroll sideways (the table scrolls inside its card).
    await page.check('[data-testid=reg-tokens-all]');
    await page.setViewportSize({ width: 390, height: 844 });
    await page.waitForTimeout(300);
    expect(await page.evaluate(() => document.documentElement.scrollWidth > window.innerWidth + 1)).toBe(false);
    await screenshot(page, 'fleet-registration-tokens-phone');
    await page.context().close();
  }, 120_000);

  it('a member sees the card with its buttons disabled, and the API refuses a member', async () => {
    const page = await signIn(up.browser, up.url, 'mia', 'member-password-1');
    await page.goto(`${up.url}/`);
    const card = page.locator('[data-testid=registration-tokens]');
    await card.waitFor({ timeout: 15_000 });
    expect(await card.locator('.muted').first().textContent()).toBe('Only admins can list, create and revoke registration tokens.');
    const create = card.locator('[data-testid=reg-token-create]');
    expect(await create.isDisabled()).toBe(true);
    expect(await create.getAttribute('title')).toBe(ADMIN_ONLY_TITLE);
    expect(await card.locator('[data-testid=reg-tokens-all]').isDisabled()).toBe(true);
    expect(await card.locator('[data-testid=reg-token-labels-input]').isDisabled()).toBe(true);
    // The list is admin-only on the server, so no rows and no error for a member.
    expect(await card.locator('tbody tr').count()).toBe(0);
    expect(await card.locator('.error').count()).toBe(0);
    await screenshot(page, 'fleet-registration-tokens-member');

    const liveBefore = await up.admin.listRunnerTokens();
    expect(liveBefore.length).toBeGreaterThan(0);
    const target = liveBefore[0]!.id;
    const member = new FlotillaClient({ url: up.url, token: (await up.admin.createApiToken({ name: 'reader', role: 'member' })).token });
    await expect(member.listRunnerTokens()).rejects.toThrow(/admin/i);
    await expect(member.revokeRunnerToken(target)).rejects.toThrow(/admin/i);
    // From the member's signed-in page too.
    const statuses = await page.evaluate(async (id) => {
      const h = { 'content-type': 'application/json', 'x-flotilla-csrf': '1' };
      return {
        list: await fetch('/api/runner-tokens').then((r) => r.status),
        revoke: await fetch(`/api/runner-tokens/${id}/revoke`, { method: 'POST', headers: h, body: '{}' }).then((r) => r.status),
      };
    }, target);
    expect(statuses).toEqual({ list: 403, revoke: 403 });
    expect((await up.admin.listRunnerTokens({ all: true })).find((t) => t.id === target)?.status).toBe('live');
    await page.context().close();
  }, 120_000);
});
