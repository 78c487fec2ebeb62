/**
 * A `FLOTILLA_*` setting the server cannot use stops `flotilla up` (and `run --local`) with the
 * message naming the variable and exit 2, as a bad flag does (`FLOTILLA_PORT=abc`): they exited
 * 1 or 2 depending on which part read them, a blank `FLOTILLA_LOG_LEVEL` was read as unset while
 * every other blank setting is refused, and a bad tree limit was found only after the database
 * had been opened and migrated (findings of stop 28's testers). The built CLI as a process.
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { runFlotilla, tempDir } from './helpers.js';

const dir = tempDir('flotilla-setting-errors-');
afterAll(() => dir.cleanup());

const CASES: Array<[Record<string, string>, string]> = [
  [{ FLOTILLA_LOG_LEVEL: ' ' }, 'FLOTILLA_LOG_LEVEL is set to "": give a value, or unset FLOTILLA_LOG_LEVEL'],
  [{ FLOTILLA_LOG_LEVEL: 'loud' }, 'FLOTILLA_LOG_LEVEL must be one of debug, info, warn, error, silent; got "loud"'],
  [{ FLOTILLA_CONFIG: '' }, 'FLOTILLA_CONFIG is set to "": give a value, or unset FLOTILLA_CONFIG'],
  [{ FLOTILLA_GATEWAY_RETRIES: '' }, 'FLOTILLA_GATEWAY_RETRIES is set to "": give a value, or unset FLOTILLA_GATEWAY_RETRIES'],
  [{ FLOTILLA_TREE_MAX_DEPTH: 'x' }, 'FLOTILLA_TREE_MAX_DEPTH must be an integer from 0 to 100, got "x"'],
  [{ FLOTILLA_MODEL_PROVIDERS: 'x' }, 'FLOTILLA_MODEL_PROVIDERS: rule "x" must be <model pattern>=<anthropic|scripted|openai|openai-compatible>'],
  [{ ANTHROPIC_BASE_URL: 'ftp://example.test' }, 'ANTHROPIC_BASE_URL must be http(s), got "ftp://example.test"'],
  [{ FLOTILLA_DEFAULT_EFFORT: 'zz' }, 'FLOTILLA_DEFAULT_EFFORT: unknown tier "zz"; known tiers: high, max, medium'],
  [{ FLOTILLA_GATEWAY_BUDGET_WAIT_MS: 'abc' }, 'FLOTILLA_GATEWAY_BUDGET_WAIT_MS must be milliseconds from 0 to 600000, got "abc"'],
  [{ FLOTILLA_GATEWAY_RETRIES: '-1' }, 'FLOTILLA_GATEWAY_RETRIES must be a whole number from 0 to 10, got "-1"'],
  [{ DATABASE_URL: '' }, 'DATABASE_URL is set to "": give a value, or unset DATABASE_URL'],
  [{ DATABASE_URL: 'mysql://u:pw@h/db' }, 'DATABASE_URL must start with postgres:// or postgresql://, got "mysql://u:***@h/db"'],
  [{ FLOTILLA_PRICES_FILE: '/nonexistent/prices.json' }, "price table /nonexistent/prices.json: ENOENT: no such file or directory, open '/nonexistent/prices.json'"],
];

describe('bad settings stop the server with exit 2', () => {
  it.each(CASES)('flotilla up with %o', async (env, message) => {
    const data = join(dir.path, `up-${Object.keys(env)[0]}-${Math.random().toString(36).slice(2)}`);
    const r = await runFlotilla(['up', '--data', data, '--port', '0'], env);
    expect(r.code).toBe(2);
    expect(r.err.split('\n')).toContain(`flotilla: ${message}`);
  });

  it('a config file the server cannot use: exit 2 naming the file, line and field', async () => {
    const file = join(dir.path, 'flotilla.yaml');
    writeFileSync(file, 'gateway:\n  prices:\n    x: { input: -1 }\n');
    const r = await runFlotilla(['up', '--data', join(dir.path, 'cfg'), '--port', '0'], { FLOTILLA_CONFIG: file });
    expect([r.code, r.err.split('\n').filter((l) => l.startsWith('flotilla:'))]).toEqual([2, [`flotilla: ${file}:3: gateway.prices.x.input: -1 is not a plain decimal (digits and an optional fraction, such as 3 or 0.3: no sign, exponent or hex)`]]);
  });

  it('a DATABASE_URL whose password is a query parameter: never printed, in the error or the log', async () => {
    const r = await runFlotilla(['up', '--data', join(dir.path, 'pg-pass'), '--port', '0'], { DATABASE_URL: 'postgres://127.0.0.1:1/x?password=Secret99&user=postgres' });
    expect(r.code).toBe(1);
    expect(r.err).toContain('flotilla: store: cannot open PostgreSQL at postgres://127.0.0.1:1/x?password=***&user=postgres: ');
    expect(r.err + r.out).not.toContain('Secret99');
  });

  it('a port clients could not reach (the Fetch standard blocks 6000) is refused before the data folder is made', async () => {
    const data = join(dir.path, 'port-6000');
    const r = await runFlotilla(['up', '--data', data, '--port', '6000']);
    expect(r.code).toBe(2);
    expect(r.err).toContain('port 6000 is one the Fetch standard blocks');
    expect(existsSync(data)).toBe(false);
  });

  it('a port in use is found before the data folder is made (exit 1, the server\'s own words)', async () => {
    const busy = createServer();
    await new Promise<void>((r) => busy.listen(0, '127.0.0.1', r));
    const port = (busy.address() as AddressInfo).port;
    try {
      const data = join(dir.path, 'port-busy');
      const r = await runFlotilla(['up', '--data', data, '--port', String(port)]);
      expect([r.code, r.err]).toEqual([1, `flotilla: cannot listen on 127.0.0.1:${port}: listen EADDRINUSE: address already in use 127.0.0.1:${port}\n`]);
      expect(existsSync(data)).toBe(false);
    } finally {
      await new Promise<void>((r) => busy.close(() => r()));
    }
  });

  it('run --local on a data folder another live process holds: exit 1 with what to do, and no model line first (fresh-tester finding)', async () => {
    const data = join(dir.path, 'held');
    mkdirSync(data, { recursive: true });
    // held by PID 1, which lives as long as this machine (its start time from /proc: the lock's own check)
    const start = readFileSync('/proc/1/stat', 'utf8');
    writeFileSync(join(data, 'flotilla.lock'), `1 ${start.slice(start.lastIndexOf(')') + 2).split(' ')[19]}\n`);
    const run = await runFlotilla(['run', '--local', 'test-fixer', '{"repo":"examples/calc"}', '--data', data]);
    expect([run.code, run.out, run.err]).toEqual([1, '', `flotilla: data folder ${data} is in use by process 1 (is \`flotilla up\` running on it? then use \`flotilla run\` without --local, or give --data another folder)\n`]);
    expect(existsSync(join(data, 'flotilla.db'))).toBe(false);
  });

  it('a bad tree limit is found before the database is made; run --local ends the same way', async () => {
    const data = join(dir.path, 'never-made');
    const up = await runFlotilla(['up', '--data', data, '--port', '0'], { FLOTILLA_TREE_MAX_JOBS: '0' });
    expect([up.code, up.err]).toEqual([2, 'flotilla: FLOTILLA_TREE_MAX_JOBS must be an integer from 1 to 100000, got "0"\n']);
    expect(existsSync(join(data, 'flotilla.db'))).toBe(false);
    const run = await runFlotilla(['run', '--local', 'test-fixer', '{"repo":"examples/calc"}', '--data', data], { FLOTILLA_LOG_LEVEL: '' });
    expect([run.code, run.err]).toEqual([2, 'flotilla: FLOTILLA_LOG_LEVEL is set to "": give a value, or unset FLOTILLA_LOG_LEVEL\n']);
    expect(existsSync(join(data, 'flotilla.db'))).toBe(false);
  });
});
