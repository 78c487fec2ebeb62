/**
 * The runner that `flotilla up` and `flotilla run --local` start in their own process belongs to
 * the data folder (cli/local/local-runner-identity.ts), over the real CLI:
 * - `flotilla up` killed with SIGKILL and started again at once keeps serving with the same
 *   local runner, connected. Before, the store still showed the dead process's connection as
 *   live, the new process's runner was refused (close 4409: another runner process ...) and
 *   `up` stopped.
 * - two `flotilla run --local` on one data folder (a new ephemeral port each) use one runner.
 *   Before, each run registered another (HOST-local-2, ...) and said a name was taken.
 */
import type { ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { openStore } from '../src/store/open.js';
import { AGENTS_DIRS, ROOT, spawnFlotilla, tempDir, waitFor } from './helpers.js';

const dirs: { cleanup: () => void }[] = [];
const procs: ChildProcess[] = [];
afterAll(() => {
  // a failed run must not leave a server running
  for (const p of procs) if (p.exitCode === null && p.signalCode === null) p.kill('SIGKILL');
  dirs.forEach((d) => d.cleanup());
});

/** The runners the server at `url` lists (admin token from the data folder). */
async function runners(url: string, data: string): Promise<{ id: number; name: string; status: string }[]> {
  const token = readFileSync(join(data, 'admin-token'), 'utf8').trim();
  const res = await fetch(`${url}/api/runners`, { headers: { authorization: `Bearer ${token}` } });
  expect(res.status).toBe(200);
  return ((await res.json()) as { runners: { id: number; name: string; status: string }[] }).runners;
}

/** Starts `flotilla up` on `data`; resolves with the process and its URL once it says where it listens and that its local runner works. */
async function up(data: string, port: number) {
  const child = spawnFlotilla(['up', '--data', data, '--port', String(port), ...AGENTS_DIRS.flatMap((d) => ['--agents', d])], { FLOTILLA_LOG_LEVEL: 'warn' });
  procs.push(child);
  const exited = new Promise<number | null>((resolve) => child.once('exit', (c) => resolve(c)));
  let gone: number | null | undefined;
  void exited.then((c) => (gone = c));
  const url = await waitFor(`flotilla up on ${data}`, () => {
    if (gone !== undefined) throw new Error(`flotilla up exited ${gone}:\n${child.output()}`);
    return child.output().includes('local runner') ? /server on (http:\/\/\S+)/.exec(child.output())?.[1] : undefined;
  }, 30_000);
  return { child, url, exited, output: () => child.output(), isGone: () => gone !== undefined };
}

describe('the data folder’s own runner', () => {
  it('flotilla up killed (SIGKILL) and started again at once: the same runner, connected, and up keeps running', async () => {
    const d = tempDir('flotilla-up-restart-');
    dirs.push(d);
    const port = 20000 + Math.floor(Math.random() * 20000);
    const first = await up(d.path, port);
    const before = await waitFor('the local runner connected', async () => (await runners(first.url, d.path)).find((r) => r.status === 'online'));
    first.child.kill('SIGKILL');
    await first.exited;
    const second = await up(d.path, port);
    try {
      // Refused, it stopped within ~1 s of its runner's hello; give it 3 s.
      await new Promise((r) => setTimeout(r, 3000));
      expect(second.isGone(), second.output()).toBe(false);
      const list = await runners(second.url, d.path);
      expect(list).toHaveLength(1);
      expect(list[0]).toMatchObject({ id: before.id, name: before.name, status: 'online' });
      expect(second.output()).not.toContain('another runner process');
    } finally {
      second.child.kill('SIGTERM');
      await second.exited;
    }
  }, 90_000);

  it('two flotilla run --local on one data folder: one runner, no name-taken warning', async () => {
    const d = tempDir('flotilla-local-twice-');
    dirs.push(d);
    const outputs: string[] = [];
    for (let i = 0; i < 2; i++) {
      const child = spawnFlotilla(['run', '--local', 'hello-py', '{}', '--data', d.path, '--agents', join(ROOT, 'test', 'fixtures', 'agents')], { FLOTILLA_LOG_LEVEL: 'warn' });
      const code = await new Promise<number | null>((resolve) => child.once('exit', (c) => resolve(c)));
      outputs.push(child.output());
      expect(code, child.output()).toBe(0);
    }
    expect(outputs[1]).not.toContain('registered under another name');
    expect(outputs[1]).not.toContain('-local-2');
    const store = await openStore({ dataDir: d.path });
    try {
      const all = await store.listRunners();
      expect(all.map((r) => r.name)).toHaveLength(1);
    } finally {
      await store.close();
    }
  }, 90_000);
});
