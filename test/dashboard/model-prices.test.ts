/**
 * Settings → model prices, in real headless Chromium against a real `flotilla up`: an admin
 * overrides claude-sonnet-4-5's price. The shipped table gives that model long-context rates
 * (above 200,000 input tokens), so an override without its own is refused and the page shows
 * the server's reason (price.longContext); with "long calls at these rates" and a web search
 * price it is stored (the API lists longContext null, webSearch 12, the table's maxOutput kept)
 * and the row shows it.
 */
import { describe, expect, it } from 'vitest';
import { dashboardForFile, dashboardReady, screenshot, signIn } from './harness.js';

const ready = dashboardReady();
if (!ready.ok && process.env.CI) throw new Error(`dashboard tests cannot run: ${ready.why}`);

describe.skipIf(!ready.ok)('model price overrides in Settings (Chromium)', () => {
  const up = dashboardForFile();

  it('a long-context model needs its long calls priced; web search and flat long calls are stored and shown', async () => {
    const admin = await signIn(up.browser, up.url, 'ada', 'admin-password-1');
    await admin.goto(`${up.url}/settings`);
    await admin.locator('[data-testid=add-price]').waitFor({ timeout: 15_000 });
    await admin.fill('[aria-label="price model"]', 'claude-sonnet-4-5');
    for (const [label, v] of [['input', '2'], ['output', '10'], ['cache write 5m', '2.5'], ['cache write 1h', '4'], ['cache read', '0.2']]) {
      await admin.fill(`[aria-label="price ${label}"]`, v!);
    }
    await admin.click('[data-testid=add-price]');
    await expect.poll(() => admin.locator('[data-testid=model-providers] .error').textContent(), { timeout: 10_000 }).toContain('here: tick “long calls at these rates” to price every call at the rates above');
    expect((await up.admin.listModelRoutes()).prices).toEqual([]);

    await admin.fill('[aria-label="price web search"]', '12');
    await admin.check('[aria-label="long calls at these rates"]');
    await admin.click('[data-testid=add-price]');
    await expect.poll(async () => (await up.admin.listModelRoutes()).prices.map((p) => p.model), { timeout: 10_000 }).toEqual(['claude-sonnet-4-5']);
    const stored = (await up.admin.listModelRoutes()).prices[0]!.price;
    expect(stored).toMatchObject({ input: 2, output: 10, cacheWrite5m: 2.5, cacheWrite1h: 4, cacheRead: 0.2, webSearch: 12, longContext: null });
    const row = admin.locator('[data-testid=prices] tr', { hasText: 'claude-sonnet-4-5' });
    await expect.poll(() => row.textContent(), { timeout: 10_000 }).toContain('web search 12/1k');
    expect(await row.textContent()).toContain('long context flat');
    await screenshot(admin, 'settings-model-prices');
  });

  it('a price needs only input and output (cache rates default as in the API), takes a max output, and its row stays inside the card', async () => {
    const admin = await signIn(up.browser, up.url, 'ada', 'admin-password-1');
    await admin.goto(`${up.url}/settings`);
    await admin.locator('[data-testid=add-price]').waitFor({ timeout: 15_000 });
    await admin.fill('[aria-label="price model"]', 'my-model');
    // an exponent is no plain decimal (the CLI and flotilla.yaml refuse it): refused here, nothing stored (fresh tester: 1e2 saved as 100)
    await admin.fill('[aria-label="price input"]', '1e2');
    await admin.fill('[aria-label="price output"]', '10');
    await admin.click('[data-testid=add-price]');
    await expect.poll(() => admin.locator('[data-testid=model-providers] .error').textContent(), { timeout: 10_000 }).toBe('price input: enter USD per million tokens, a plain decimal such as 3 or 0.25 (no sign or exponent)');
    expect((await up.admin.listModelRoutes()).prices.some((p) => p.model === 'my-model')).toBe(false);
    // a value the browser itself refuses clears that error rather than leave it beside its bubble
    await admin.fill('[aria-label="price input"]', '2');
    await admin.fill('[aria-label="price max output"]', '1.5');
    await admin.click('[data-testid=add-price]');
    await expect.poll(() => admin.locator('[data-testid=model-providers] .error').count(), { timeout: 10_000 }).toBe(0);
    await admin.fill('[aria-label="price max output"]', '100');
    await admin.click('[data-testid=add-price]');
    await expect.poll(async () => (await up.admin.listModelRoutes()).prices.find((p) => p.model === 'my-model')?.price, { timeout: 10_000 }).toEqual({
      // input × 1.25, × 2, × 0.1
      input: 2,
      output: 10,
      cacheWrite5m: 2.5,
      cacheWrite1h: 4,
      cacheRead: 0.2,
      maxOutput: 100,
    });
    const card = admin.locator('[data-testid=model-providers]');
    await expect.poll(() => admin.locator('[data-testid=prices] tr', { hasText: 'my-model' }).textContent(), { timeout: 10_000 }).toContain('max output 100');
    // nothing wider than the card: every Remove button can be seen without scrolling inside it
    expect(await card.evaluate((el) => el.scrollWidth <= el.clientWidth)).toBe(true);
  });

  it('a route to a provider this server has no key for shows its warning; a member reads routes and prices but cannot change them', async () => {
    const admin = await signIn(up.browser, up.url, 'ada', 'admin-password-1');
    await admin.goto(`${up.url}/settings`);
    await admin.locator('[data-testid=add-route]').waitFor({ timeout: 15_000 });
    await admin.fill('[aria-label="route pattern"]', 'gpt-*');
    await admin.selectOption('[aria-label="provider"]', 'openai');
    await admin.click('[data-testid=add-route]');
    const row = admin.locator('[data-testid=routes] tr', { hasText: 'gpt-*' });
    await expect.poll(() => row.locator('[data-testid=route-warning]').textContent(), { timeout: 10_000 }).toMatch(/^provider openai is not configured on this server, so the calls this route takes are refused: set OPENAI_API_KEY/);

    const member = await signIn(up.browser, up.url, 'mia', 'member-password-1');
    await member.goto(`${up.url}/settings`);
    await member.locator('[data-testid=routes] tr', { hasText: 'gpt-*' }).waitFor({ timeout: 15_000 });
    expect(await member.locator('[data-testid=prices]').textContent()).toContain('claude-sonnet-4-5');
    expect(await member.locator('[data-testid=add-route], [data-testid=add-price]').count()).toBe(0);
    expect(await member.locator('[data-testid=model-providers] button', { hasText: 'Remove' }).count()).toBe(0);
    await screenshot(member, 'settings-member-model-providers');
    // an agent without a tier of its own runs at the account default tier, when there is one, not at its model
    expect(await member.locator('tr', { hasText: 'test-fixer' }).locator('[data-testid=agent-tier]').textContent()).toBe('agent’s model claude-sonnet-4-5');
    await up.admin.setDefaultEffortTier('medium');
    try {
      await member.reload();
      await expect.poll(() => member.locator('tr', { hasText: 'test-fixer' }).locator('[data-testid=agent-tier]').textContent(), { timeout: 10_000 }).toBe('default tier medium');
    } finally {
      await up.admin.setDefaultEffortTier(null);
    }
  });
});
