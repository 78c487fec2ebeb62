/**
 * `flotilla runners token create` prints a runner command line to paste on the new machine:
 * every value in it shell-quoted, so a label value with a space (labels are one line of
 * printable text: protocol/labels.ts) pastes as one argument, and the runner registers with it.
 * A 5,000-character label value is not repeated in full in the error.
 */
import { execFileSync, spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { runCli } from '../src/cli/test-io.js';
import { startLocalUp } from '../src/cli/test-up.js';
import { startTestServer, type TestServer } from '../src/server/test-helpers.js';
import { BIN, waitFor } from './helpers.js';

let t: TestServer;
let dir: string;
const savedEnv = { ...process.env };
const run = (...args: string[]) => runCli([...args, '--server', t.url, '--token', t.admin]);

beforeAll(async () => {
  t = await startTestServer();
  dir = await mkdtemp(join(tmpdir(), 'flotilla-token-line-'));
});
beforeEach(() => {
  for (const k of Object.keys(process.env)) if (k.startsWith('FLOTILLA_')) delete process.env[k];
});
afterAll(async () => {
  await t.close();
  await rm(dir, { recursive: true, force: true });
  process.env = { ...savedEnv };
});

describe('the runner command line token create prints', () => {
  it('quotes a label value with a space; pasted into a shell, the runner registers with that label', async () => {
    const made = await run('runners', 'token', 'create', '--labels', 'zone=mars base,os=linux');
    expect(made.code).toBe(0);
    const token = made.out.trim();
    const line = `flotilla runner --server ${t.url} --token ${token} --labels 'zone=mars base,os=linux'`;
    expect(made.err.split('\n')).toContain(`  ${line}`);

    // Pasted as printed (`flotilla` being this checkout's bin), with its own work folder.
    const child = spawn('/bin/sh', ['-c', `exec "$NODE" "$BIN" ${line.slice('flotilla '.length)}`], {
      env: { ...process.env, NODE: process.execPath, BIN, FLOTILLA_WORK_DIR: join(dir, 'work'), FLOTILLA_LOG_LEVEL: 'error' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (d) => (output += d));
    child.stderr.on('data', (d) => (output += d));
    const exited = new Promise<number | null>((resolve) => child.once('exit', (c) => resolve(c)));
    try {
      await waitFor(`the pasted runner to connect (output: ${output})`, () => /runner \d+ connected/.test(output), 20_000);
      const id = Number(/runner (\d+) connected/.exec(output)![1]);
      expect((await t.store.getRunner(id))?.labels).toEqual({ zone: 'mars base', os: 'linux' });
    } finally {
      child.kill('SIGTERM');
      await exited;
    }
  });

  it('a 5,000-character label value: refused (exit 2), the value in the error cut to 100 characters', async () => {
    const long = 'x'.repeat(5000);
    const r = await run('runners', 'token', 'create', '--labels', `k=${long}`);
    expect(r.code).toBe(2);
    expect(r.err).toContain(`argument 'k=${'x'.repeat(98)}… (5002 characters)' is invalid. label value for "k": `);
    expect(r.err).not.toContain('x'.repeat(101));
    const json = await run('runners', 'token', 'create', '--labels', long, '--json');
    expect(json.code).toBe(2);
    expect(JSON.parse(json.err)).toEqual({
      error: {
        code: 'usage',
        message: `option '--labels <k=v,...>' argument '${'x'.repeat(100)}… (5000 characters)' is invalid. label "${'x'.repeat(100)}… (5000 characters)" must look like key=value`,
      },
    });
  });

  it("flotilla up's token create line, for a data folder with a space and a quote, reads back as that folder", async () => {
    const up = await startLocalUp("flotilla up 'q' ");
    try {
      const line = /make a registration token with `([^`]+)`/.exec(up.io.out())?.[1];
      expect(line).toBeDefined();
      // The words a shell makes of it, as printed.
      const words = execFileSync('/bin/sh', ['-c', `for w in ${line!.slice('flotilla '.length)}; do printf '%s\\0' "$w"; done`], { encoding: 'utf8' }).split('\0').slice(0, -1);
      expect(words).toEqual(['runners', 'token', 'create', '--server', up.url, '--data', up.data]);
    } finally {
      expect(await up.stop()).toBe(0);
    }
  });
});
