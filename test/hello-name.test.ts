/**
 * A runner started again without `--name` keeps the name it has, over a real server: it
 * registered as `keep-me` (a name that is not the host name), and its second process, on the
 * same work folder and without a name, still reads `keep-me` — before, the hello asked for the
 * host name and renamed it. With a name given, the hello renames it.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startRunner } from '../src/runner/runner.js';
import { createLogger } from '../src/core/log.js';
import { startTestServer, type TestServer } from '../src/server/test-helpers.js';

describe('the name in a hello', () => {
  const dir = mkdtempSync(join(tmpdir(), 'flotilla-hello-name-'));
  let t: TestServer;
  beforeAll(async () => {
    t = await startTestServer();
  });
  afterAll(async () => {
    await t.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('absent: the runner keeps its name; given: it is renamed', async () => {
    const workDir = join(dir, 'work');
    const first = await startRunner({ serverUrl: t.url, registrationToken: await t.regToken(), workDir, name: 'keep-me' });
    expect((await t.store.getRunner(first.runnerId))?.name).toBe('keep-me');
    await first.stop();
    const again = await startRunner({ serverUrl: t.url, workDir });
    expect(again.runnerId).toBe(first.runnerId);
    expect((await t.store.getRunner(again.runnerId))?.name).toBe('keep-me');
    await again.stop();
    const renamed = await startRunner({ serverUrl: t.url, workDir, name: 'new-name' });
    expect((await t.store.getRunner(renamed.runnerId))?.name).toBe('new-name');
    await renamed.stop();
  });

  it('registering with a taken name: NAME-2, said once (at registration), not again at connect', async () => {
    const a = await startRunner({ serverUrl: t.url, registrationToken: await t.regToken(), workDir: join(dir, 'dup-a'), name: 'dup' });
    const lines: string[] = [];
    const log = createLogger('warn', (l) => void lines.push(l));
    const b = await startRunner({ serverUrl: t.url, registrationToken: await t.regToken(), workDir: join(dir, 'dup-b'), name: 'dup', log });
    expect((await t.store.getRunner(b.runnerId))?.name).toBe('dup-2');
    await new Promise((r) => setTimeout(r, 200));
    expect(lines.filter((l) => l.includes('dup-2'))).toHaveLength(1);
    expect(lines.join('')).not.toContain('belongs to another runner');
    await b.stop();
    await a.stop();
  });
});
