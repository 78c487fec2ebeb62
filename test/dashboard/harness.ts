/**
 * Helpers for the dashboard suites: a real `flotilla up` child process (server, gateway, one
 * runner, scripted model) and Debian's headless Chromium driven by playwright-core.
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll } from 'vitest';
import { chromium, type Browser, type Page } from 'playwright-core';
import { ROOT, spawnFlotilla, tempDir, waitFor } from '../helpers.js';
import { FlotillaClient } from '../../src/client/client.js';
import { openStore } from '../../src/store/open.js';
import type { Store } from '../../src/store/types.js';
import type { Runner } from '../../src/protocol/index.js';

/** Debian's chromium (DEVELOPERS.md); FLOTILLA_CHROMIUM overrides. */
export const CHROMIUM = process.env.FLOTILLA_CHROMIUM ?? '/usr/bin/chromium';
export const CHROMIUM_FLAGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'];
/** Where screenshots go (gitignored), for a person to look at. */
export const SCREENSHOTS = join(ROOT, 'test-results', 'screenshots');

/** True when the browser and the built dashboard are both there. */
export function dashboardReady(): { ok: true } | { ok: false; why: string } {
  if (!existsSync(CHROMIUM)) return { ok: false, why: `no Chromium at ${CHROMIUM} (apt-get install -y chromium)` };
  if (!existsSync(join(ROOT, 'dist', 'web', 'index.html'))) return { ok: false, why: 'dashboard not built (npm run build)' };
  return { ok: true };
}

export interface Up {
  url: string;
  adminToken: string;
  admin: FlotillaClient;
  agentsDir: string;
  close(): Promise<void>;
}

/**
 * Starts `flotilla up --port 0` as a child process in a temp data folder, with the test
 * agents plus `extraAgents` (name → agent.yaml text). `seed` runs first against the store in
 * that data folder (then closed: `up` takes the folder's lock), e.g. to put 1,000 jobs in the
 * ledger without 1,000 HTTP calls. Resolves once `up` printed its URL.
 */
export async function startUp(extraAgents: Record<string, string> = {}, seed?: (store: Store) => Promise<void>): Promise<Up> {
  const dir = tempDir('flotilla-dash-');
  const agentsDir = join(dir.path, 'agents');
  for (const [name, yaml] of Object.entries(extraAgents)) {
    mkdirSync(join(agentsDir, name), { recursive: true });
    writeFileSync(join(agentsDir, name, 'agent.yaml'), yaml);
    writeFileSync(join(agentsDir, name, 'prompt.md'), `Run ${name}.`);
  }
  mkdirSync(agentsDir, { recursive: true });
  if (seed) {
    const store = await openStore({ dataDir: join(dir.path, 'data') });
    try {
      await seed(store);
    } finally {
      await store.close();
    }
  }
  const child = spawnFlotilla(['up', '--port', '0', '--data', join(dir.path, 'data'), '--agents', join(ROOT, 'test', 'fixtures', 'agents'), '--agents', agentsDir], {
    ANTHROPIC_API_KEY: '',
    // unset, whatever this process has (spawn leaves out undefined values): SQLite in the data
    // folder. Blank is refused (a blank DATABASE_URL is an operator's mistake, not "unset").
    DATABASE_URL: undefined,
    FLOTILLA_LOG_LEVEL: 'warn',
  });
  let exited = false;
  child.on('exit', () => (exited = true));
  let url: string;
  try {
    url = await waitFor('flotilla up to listen', () => {
      if (exited) throw new Error(`flotilla up exited: ${child.output()}`);
      return /server on (http:\/\/[^\s]+)/.exec(child.output())?.[1];
    }, 60_000);
  } catch (err) {
    // Never leave a half-started `up` behind.
    if (!exited) child.kill('SIGKILL');
    dir.cleanup();
    throw err;
  }
  const adminToken = readFileSync(join(dir.path, 'data', 'admin-token'), 'utf8').trim();
  return {
    url,
    adminToken,
    agentsDir,
    admin: new FlotillaClient({ url, token: adminToken }),
    async close() {
      if (!exited) {
        child.kill('SIGTERM');
        await waitFor('flotilla up to stop', () => exited, 30_000).catch(() => child.kill('SIGKILL'));
      }
      dir.cleanup();
    },
  };
}

/** Adds the users the dashboard suites sign in as: `ada` (admin, `admin-password-1`) and `mia` (member, `member-password-1`). */
export async function addUsers(up: Up): Promise<void> {
  await up.admin.createUser({ name: 'ada', role: 'admin', password: 'admin-password-1' });
  await up.admin.createUser({ name: 'mia', role: 'member', password: 'member-password-1' });
}

/** Launches headless Chromium (a fresh profile per launch). */
export function launchBrowser(): Promise<Browser> {
  return chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_FLAGS, headless: true });
}

/** Waits (up to 30 s) until `up`'s embedded runner reads online. @returns that runner. */
export function runnerOnline(up: Up): Promise<Runner> {
  return waitFor('the runner online', async () => (await up.admin.listRunners()).find((r) => r.status === 'online'), 30_000);
}

/** Options of {@link dashboardForFile}: what a file's `up` has particular. */
export interface DashboardFileOptions {
  /** Agents besides the test ones: name → agent.yaml text (see {@link startUp}). */
  agents?: Record<string, string>;
  /** Runs against the data folder's store before `up` starts (see {@link startUp}). */
  seed?: (store: Store) => Promise<void>;
  /** Runs last in beforeAll, once `up`, the users and the browser are there (e.g. {@link runnerOnline}). */
  then?: (up: Up) => Promise<unknown>;
  /** beforeAll's timeout, ms (default 180,000). */
  timeoutMs?: number;
}

/** {@link Up} plus the file's browser: what {@link dashboardForFile} fills in when the tests start. */
export interface DashboardFile extends Up {
  /** Headless Chromium, shared by the file's tests (sign in with a new context each: {@link signIn}). */
  browser: Browser;
}

/**
 * The common set-up of a dashboard file: registers a beforeAll that runs {@link startUp}
 * (`agents`, `seed`), {@link addUsers} and {@link launchBrowser}, then `then`; and an afterAll
 * that closes the browser, then `up`. @returns a stand-in given `up`'s fields and `browser` in
 * beforeAll: use it inside tests and hooks, not at the file's top level.
 */
export function dashboardForFile(opts: DashboardFileOptions = {}): DashboardFile {
  const file = {} as DashboardFile;
  beforeAll(async () => {
    const up = await startUp(opts.agents, opts.seed);
    Object.assign(file, up);
    await addUsers(up);
    file.browser = await launchBrowser();
    await opts.then?.(up);
  }, opts.timeoutMs ?? 180_000);
  afterAll(async () => {
    await file.browser?.close();
    await file.close?.();
  });
  return file;
}

/** Opens the dashboard in a new context and signs in through the form. */
export async function signIn(browser: Browser, url: string, name: string, password: string, viewport = { width: 1280, height: 900 }): Promise<Page> {
  const context = await browser.newContext({ viewport });
  const page = await context.newPage();
  await page.goto(url + '/');
  await page.fill('input[name=name]', name);
  await page.fill('input[name=password]', password);
  await page.click('button[type=submit]');
  await page.waitForSelector('[data-testid=who]');
  return page;
}

/** Saves a full-page screenshot as test-results/screenshots/<name>.png. */
export async function screenshot(page: Page, name: string): Promise<string> {
  mkdirSync(SCREENSHOTS, { recursive: true });
  const path = join(SCREENSHOTS, `${name}.png`);
  await page.screenshot({ path, fullPage: true });
  return path;
}
